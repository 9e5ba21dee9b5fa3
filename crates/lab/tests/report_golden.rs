//! Golden tests of `report.md`: each `golden/report/NAME.json` is a fixed
//! `Report`; `NAME.md` beside it is the Markdown it must render to.
//! `UPDATE_GOLDEN=1 cargo test -p strata-lab --test report_golden` rewrites
//! the `.md` files (review the diff before committing).

use std::path::{Path, PathBuf};

use strata_lab::report::{self, html, markdown, NodeSummary, Report};

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
