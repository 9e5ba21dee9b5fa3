//! Golden tests of `report.md`: each `golden/report/NAME.json` is a fixed
//! `Report`; `NAME.md` beside it is the Markdown it must render to.
//! `faults.json` is a hand-built load run on three nodes with faults,
//! per-node seconds and a consistency check.
//! `UPDATE_GOLDEN=1 cargo test -p strata-lab --test report_golden` rewrites
//! the `.md` files (review the diff before committing).

use std::path::{Path, PathBuf};

use strata_lab::report::model::{CheckSummary, FaultMark};
use strata_lab::report::{self, html, markdown, NodeSummary, Report, Second};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/report")
}

fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("golden dir")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    assert!(v.len() >= 2, "expected golden reports, found {v:?}");
    v
}

#[test]
fn markdown_matches_golden() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for json in fixtures() {
        let r = report::read_json(&json).unwrap();
        let got = markdown::render(&r);
        let md = json.with_extension("md");
        if update {
            std::fs::write(&md, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&md)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", md.display()));
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(got.lines().count().min(want.lines().count()));
            failures.push(format!(
                "{}: differs from line {}:\n  got:  {:?}\n  want: {:?}",
                md.display(),
                line + 1,
                got.lines().nth(line),
                want.lines().nth(line)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn json_round_trips_and_keeps_field_names() {
    for json in fixtures() {
        let text = std::fs::read_to_string(&json).unwrap();
        let r: Report = serde_json::from_str(&text).unwrap();
        let again: Report = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(r, again, "{}", json.display());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let kind = v["kind"].as_str().unwrap();
        assert!(kind == "load" || kind == "sweep", "{kind}");
        for key in [
            "offered_rate",
            "latency",
            "per_op",
            "spectrum",
            "timeline",
            "server",
        ] {
            assert!(
                v["trials"][0].get(key).is_some(),
                "{}: no {key}",
                json.display()
            );
        }
    }
}

#[test]
fn trial_table_has_one_row_per_trial_in_order_with_the_trials_numbers() {
    let r = report::read_json(&golden_dir().join("sweep.json")).unwrap();
    let t = markdown::trial_table(&r);
    assert_eq!(t.rows.len(), r.trials.len());
    let col = |name: &str| t.header.iter().position(|h| h == name).unwrap();
    for (row, trial) in t.rows.iter().zip(&r.trials) {
        assert_eq!(row[col("offered")], markdown::offered(trial));
        assert_eq!(row[col("p99")], markdown::fmt_ms(trial.latency.p99_ms));
        let met = match trial.meets_slo {
            Some(true) => "yes",
            Some(false) => "no",
            None => markdown::MISSING,
        };
        assert_eq!(row[col("SLO met")], met);
    }
}

#[test]
fn late_generator_is_noted_only_past_one_percent() {
    let mut r = report::read_json(&golden_dir().join("load.json")).unwrap();
    let requests = r.trials[0].requests;
    r.trials[0].late_sends = requests / 100;
    assert!(!markdown::render(&r).contains("fell behind"));
    r.trials[0].late_sends = requests / 100 + 1;
    assert!(markdown::render(&r).contains("fell behind its schedule"));
}

#[test]
fn several_nodes_get_a_per_node_table_and_a_skew_note() {
    let mut r = report::read_json(&golden_dir().join("load.json")).unwrap();
    let node = |url: &str, connections: u64, requests: u64| NodeSummary {
        url: url.into(),
        connections,
        requests,
        errors: 1,
        server: vec![],
        server_cpu_cores: Some(0.5),
        server_rss_bytes: None,
        threads: vec![],
    };
    // One node: no table, the page as before.
    let before = markdown::render(&r);
    r.trials[0].per_node = vec![node("http://n1:1", 64, 1000)];
    assert_eq!(markdown::render(&r), before);
    assert!(markdown::node_table(&r).is_none());
    // Two, evenly: a table naming both, no note.
    r.trials[0].per_node = vec![node("http://n1:1", 32, 500), node("http://n2:2", 32, 500)];
    let md = markdown::render(&r);
    assert!(md.contains("## Per node"), "{md}");
    let t = markdown::node_table(&r).unwrap();
    assert_eq!(t.rows.len(), 2);
    assert_eq!(t.rows[1][2], "http://n2:2");
    assert_eq!(t.rows[1][5], "50.0%");
    assert_eq!(t.rows[1][7], "0.50 cores");
    assert!(!md.contains("uneven"), "{md}");
    let page = html::render(&r).unwrap();
    assert!(page.contains("<h2>Per node</h2>") && page.contains("http://n2:2"));
    // Skewed: noted.
    r.trials[0].per_node = vec![node("http://n1:1", 6, 800), node("http://n2:2", 2, 200)];
    let md = markdown::render(&r);
    assert!(
        md.contains("http://n1:1 got 80.0% of the requests (6 of 8 connections)"),
        "{md}"
    );
}

#[test]
fn write_dir_writes_the_three_files_and_json_reads_back() {
    let r = report::read_json(&golden_dir().join("sweep.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run-1");
    report::write_dir(&out, &r, &Default::default()).unwrap();
    assert_eq!(report::read_json(&out.join("report.json")).unwrap(), r);
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        markdown::render(&r)
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
}

#[test]
fn formats() {
    assert_eq!(markdown::fmt_ms(0.3104), "0.310 ms");
    assert_eq!(markdown::fmt_ms(4.256), "4.26 ms");
    assert_eq!(markdown::fmt_ms(48.04), "48.0 ms");
    assert_eq!(markdown::fmt_ms(210.4), "210 ms");
    assert_eq!(markdown::fmt_ms(2210.0), "2.21 s");
    assert_eq!(markdown::fmt_ms(10260.0), "10.3 s");
    assert_eq!(markdown::group(1234567), "1,234,567");
    assert_eq!(markdown::group(999), "999");
    assert_eq!(markdown::fmt_rate(12000.4), "12,000/s");
}

fn faults_fixture() -> Report {
    report::read_json(&golden_dir().join("faults.json")).unwrap()
}

#[test]
fn faults_fixture_has_faults_per_node_seconds_and_a_check() {
    let r = faults_fixture();
    assert_eq!(r.faults.len(), 3);
    assert_eq!(r.node_seconds(), 3);
    assert!(r.check.is_some());
    let md = markdown::render(&r);
    // A section per kind of finding, in order.
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("no {s:?} in\n{md}"));
    assert!(at("## Per node") < at("## Faults"));
    assert!(at("## Faults") < at("## Consistency check"));
    assert!(at("## Consistency check") < at("## Notes"));
    // The table: a row per fault, in the order given, the times as given.
    let t = markdown::fault_table(&r).unwrap();
    assert_eq!(t.rows.len(), 3);
    assert_eq!(
        t.rows[0][..6],
        ["kill:2@10s", "2", "10.0 s", "16.4 s", "2.3 s", "1.1 s"]
    );
    assert_eq!(t.rows[1][4], markdown::MISSING, "not seen level");
    assert_eq!(
        t.rows[2][6],
        "iptables: Permission denied (you must be root)"
    );
    // A sentence per fault, naming the node by URL.
    for f in &r.faults {
        assert!(md.contains(&format!("- {}: ", f.spec)), "{}", f.spec);
    }
    assert!(md.contains("node 2 (http://127.0.0.1:8082) was killed at 10.0 s"));
    assert!(md.contains("it was continued at 23.0 s (3.0 s later)"));
    // The schedule and the generator.
    assert!(md.contains("740 sends dropped (could not start within --drop-after"));
    assert!(md.contains("2 requests still unanswered after the end were abandoned"));
    assert!(md.contains("- Generator: 64 connections opened, 0.41 cores used"));
    assert!(md.contains(
        "- Machine CPU: 2.85 cores busy: nodes 1.78, generator 0.41, other processes 0.66"
    ));
    // The check: in words, counted, the method, the checker's own text.
    assert!(md.contains(
        "The consistency check failed: 1 lost write, 0 stale reads, 0 impossible reads."
    ));
    assert!(md.contains("Method: Set keys are written once each"));
    assert!(md.contains("```text\nchecked 1,204 writes"));
}

#[test]
fn fault_window_runs_from_the_injection_until_the_rate_is_back() {
    let r = faults_fixture();
    let kill = &r.faults[0];
    let w = r.fault_window(kill);
    // Back at 16.4 s, the rate back 1.1 s later: seconds 10 to 17.
    assert_eq!((w.from_s, w.to_s), (10.02, 16.4 + 1.1));
    let seconds: Vec<&Second> = r.trials[0]
        .timeline
        .iter()
        .filter(|s| (10.0..=17.0).contains(&s.t_s))
        .collect();
    assert_eq!(w.requests, seconds.iter().map(|s| s.requests).sum::<u64>());
    assert_eq!(w.errors, seconds.iter().map(|s| s.errors).sum::<u64>());
    let (t, a) = w.worst.unwrap();
    assert_eq!(t, 11.0);
    assert!((a - 2.0 / 3.0).abs() < 1e-9, "{a}");
    // Not undone and never back: until the run ended.
    let never = FaultMark {
        until_s: None,
        recovered_after_s: None,
        ..kill.clone()
    };
    assert_eq!(r.fault_window(&never).to_s, 30.0);
}

#[test]
fn availability_is_the_share_answered_and_none_without_requests() {
    let s = |requests, errors| Second {
        t_s: 0.0,
        requests,
        errors,
        p50_ms: 1.0,
        p99_ms: 1.0,
        max_ms: 1.0,
        per_node: vec![],
    };
    assert_eq!(s(1000, 250).availability(), Some(0.75));
    assert_eq!(s(10, 0).availability(), Some(1.0));
    assert_eq!(s(10, 10).availability(), Some(0.0));
    assert_eq!(s(0, 0).availability(), None);
}

#[test]
fn check_headline_tells_passed_failed_and_not_verified_apart() {
    let r = faults_fixture();
    let failed = r.check.clone().unwrap();
    let passed = CheckSummary {
        passed: true,
        lost: 0,
        ..failed.clone()
    };
    assert!(markdown::check_headline(&passed).starts_with("The consistency check passed: no acknowledged write was lost, and no read was stale or impossible."));
    let unjudged = CheckSummary {
        stale_checked: false,
        ..passed.clone()
    };
    assert!(markdown::check_headline(&unjudged).contains("stale reads were not judged"));
    assert_eq!(markdown::check_table(&unjudged).rows[0][4], "not checked");
    let unverified = CheckSummary {
        passed: false,
        unverified: 3,
        ..passed.clone()
    };
    assert!(
        markdown::check_headline(&unverified)
            .contains("found no anomaly, but 3 acknowledged writes could not be verified"),
        "{}",
        markdown::check_headline(&unverified)
    );
    let many = CheckSummary {
        lost: 2,
        stale: 1,
        impossible: 1200,
        ..failed
    };
    assert_eq!(
        markdown::check_headline(&many),
        "The consistency check failed: 2 lost writes, 1 stale read, 1,200 impossible reads."
    );
}

#[test]
fn checker_text_with_backticks_keeps_its_fence() {
    let mut r = faults_fixture();
    r.check.as_mut().unwrap().text = "key `a` read ```x```\npassed\n".into();
    let md = markdown::render(&r);
    assert!(
        md.contains("````text\nkey `a` read ```x```\npassed\n````\n"),
        "{md}"
    );
}

#[test]
fn a_fault_that_never_took_effect_is_told_so() {
    let r = faults_fixture();
    let s = markdown::fault_sentences(&r);
    assert_eq!(
        s[2],
        "partition:1@26s: injecting it into node 1 (http://127.0.0.1:8081) at 26.0 s went \
         wrong: iptables: Permission denied (you must be root)."
    );
}

#[test]
fn html_says_what_markdown_says_about_faults_and_the_check() {
    let r = faults_fixture();
    let page = html::render(&r).unwrap();
    assert!(page.contains("<h2>Faults</h2>") && page.contains("<h2>Consistency check</h2>"));
    for f in markdown::fault_sentences(&r) {
        assert!(page.contains(&format!("<li>{}</li>", html::esc(&f))), "{f}");
    }
    let c = r.check.as_ref().unwrap();
    assert!(page.contains(&format!(
        "<p class=\"failed\">{}</p>",
        html::esc(&markdown::check_headline(c))
    )));
    assert!(page.contains(&format!("<pre>{}</pre>", html::esc(c.text.trim_end()))));
    for n in markdown::notes(&r) {
        assert!(page.contains(&html::esc(&n)), "{n}");
    }
    for (_, v) in markdown::facts(&r) {
        assert!(page.contains(&html::esc(&v)), "{v}");
    }
}

#[test]
fn reports_without_the_new_fields_say_nothing_of_them() {
    for name in ["load.json", "sweep.json"] {
        let md = markdown::render(&report::read_json(&golden_dir().join(name)).unwrap());
        for absent in [
            "## Faults",
            "## Consistency check",
            "Generator",
            "Machine CPU",
            "dropped",
        ] {
            assert!(!md.contains(absent), "{name}: {absent}");
        }
    }
}
