//! docs/lab.md's "Many generators" recipes, run as written against real
//! nodes, without tokens and with.

use std::path::Path;
use std::process::Command;

use crate::support::{self, NodeProc};
use crate::worker::{one_at_a_time, WorkerProc};

/// The `sh` blocks of docs/lab.md's "Many generators", each a list of
/// commands: continuation lines joined, comments dropped.
fn recipes() -> Vec<Vec<String>> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/lab.md")).unwrap();
    let section = doc
        .split("\n## Many generators")
        .nth(1)
        .expect("docs/lab.md has its \"Many generators\" section")
        .split("\n## ")
        .next()
        .unwrap();
    let (mut blocks, mut block, mut line) = (Vec::new(), None::<Vec<String>>, String::new());
    for l in section.lines().map(str::trim) {
        match (l, block.as_mut()) {
            ("```sh", None) => block = Some(Vec::new()),
            ("```", Some(_)) => blocks.push(block.take().unwrap()),
            (_, Some(b)) => {
                let code = l.split(" #").next().unwrap().trim_end();
                match code.strip_suffix('\\') {
                    Some(c) => line += c,
                    None => {
                        line += code;
                        b.push(
                            std::mem::take(&mut line)
                                .split_whitespace()
                                .collect::<Vec<_>>()
                                .join(" "),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    blocks
}

/// The longest a sweep of the recipes may search: one short trial.
const ONE_TRIAL: &str =
    " --start-rate 100 --max-trials 1 --duration 1 --repeats 1 --pause 0 --tail-samples 1";

/// Run one recipe `block` in `dir` against `node`: each command through
/// `sh`, with `strata` on the PATH and no credentials from the
/// environment, the hosts of the recipe replaced with the test's (the node;
/// `0.0.0.0:7700` with a free loopback port; w1 and w2 with the two
/// workers each `strata worker` line starts). `before_workers` runs ahead
/// of the first worker. Every command must succeed (a sweep may also say
/// its objective was unmet, 3: the point is that it ran); the reports of
/// `strata load` and `strata sweep` are returned.
fn run_recipe(
    block: &[String],
    dir: &Path,
    node: &str,
    mut before_workers: impl FnMut(),
) -> Vec<(String, serde_json::Value)> {
    let bin = Path::new(env!("CARGO_BIN_EXE_strata")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sh = |line: &str| {
        let mut c = Command::new("sh");
        c.arg("-c").arg(line).current_dir(dir).env("PATH", &path);
        for v in [
            "STRATA_TOKEN",
            "STRATA_TOKEN_FILE",
            "STRATA_METRICS_TOKEN",
            "STRATA_METRICS_TOKEN_FILE",
            "STRATA_WORKER_TOKEN",
            "STRATA_WORKER_TOKEN_FILE",
        ] {
            c.env_remove(v);
        }
        c
    };
    let mut workers: Vec<WorkerProc> = Vec::new();
    let mut reports = Vec::new();
    for (k, line) in block.iter().enumerate() {
        let mut l = line
            .replace("http://node:8080", node)
            .replace("0.0.0.0:7700", "127.0.0.1:0");
        for (i, w) in workers.iter().enumerate() {
            l = l.replace(&format!("http://w{}:7700", i + 1), &w.url);
        }
        if l.starts_with("strata worker ") {
            if workers.is_empty() {
                before_workers();
            }
            for _ in 0..2 {
                workers.push(WorkerProc::spawn(sh(&format!("exec {l}")), None));
            }
            continue;
        }
        let sweep = l.starts_with("strata sweep ");
        if sweep {
            l += ONE_TRIAL;
        }
        let out = format!("strata-reports-{k}");
        let o = sh(&l).output().unwrap();
        let text = format!(
            "{l}\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        match o.status.code() {
            Some(0) => {}
            Some(3) if sweep => {}
            _ => panic!("{:?}: {text}", o.status),
        }
        if l.starts_with("strata load ") || sweep {
            // Its report: the newest directory under strata-reports/,
            // moved aside for the next.
            let reps = dir.join("strata-reports");
            let rep = std::fs::read_dir(&reps)
                .unwrap_or_else(|e| panic!("{}: {e}: {text}", reps.display()))
                .flatten()
                .map(|e| e.path())
                .next()
                .unwrap();
            let json = std::fs::read_to_string(rep.join("report.json")).unwrap();
            std::fs::rename(&reps, dir.join(out)).unwrap();
            reports.push((text, serde_json::from_str(&json).unwrap()));
        }
    }
    assert_eq!(workers.len(), 2, "the recipe starts workers: {block:?}");
    reports
}

/// Every trial of `report` was sent by both workers and none of its
/// requests was refused its credentials (nor failed at all).
fn served_by_two_workers(text: &str, report: &serde_json::Value) {
    let trials = report["trials"].as_array().unwrap();
    assert!(!trials.is_empty(), "{text}");
    for t in trials {
        assert!(t["requests"].as_u64().unwrap() > 0, "{text}");
        assert_eq!(t["workers"].as_array().unwrap().len(), 2, "{text}");
        // Absent when no answer failed.
        let failed = t["failed_statuses"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            !failed.contains_key("401") && !failed.contains_key("403"),
            "{t}"
        );
        assert!(failed.is_empty(), "{t}");
        assert!(
            t["per_op"]
                .as_array()
                .unwrap()
                .iter()
                .all(|o| o["op"] != "401/403" && o["op"] != "5xx"),
            "{t}"
        );
    }
}

#[test]
fn the_many_generators_recipe_runs_as_written_against_a_node_without_tokens() {
    let _one = one_at_a_time();
    let blocks = recipes();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let recipe = &blocks[0];
    // docs/lab.md's first block, as this test reads it.
    let starts: Vec<&str> = recipe
        .iter()
        .map(|l| l.split(" --").next().unwrap())
        .collect();
    assert_eq!(
        starts,
        [
            "strata secret new",
            "strata worker",
            "strata load http://node:8080",
            "strata sweep http://node:8080"
        ],
        "{recipe:?}"
    );
    assert!(recipe
        .iter()
        .skip(1)
        .all(|l| l.contains("--worker-token-file worker.token")));
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let dir = tempfile::tempdir().unwrap();
    let reports = run_recipe(recipe, dir.path(), &node.url(), || {});
    assert_eq!(reports.len(), 2);
    for (text, r) in &reports {
        served_by_two_workers(text, r);
    }
    // The first check sent its whole schedule: 200 req/s for 5 s.
    assert_eq!(reports[0].1["trials"][0]["requests"].as_u64(), Some(1000));
}

#[test]
fn the_many_generators_recipe_with_tokens_runs_as_written() {
    let _one = one_at_a_time();
    let blocks = recipes();
    let recipe = &blocks[1];
    let dir = tempfile::tempdir().unwrap();
    // The worker token of the first block, and a node that checks tokens
    // from the file the recipe appends to (one holder's line already in
    // it: a node starts with a tokens file).
    let (ok, text) = support::outcome(
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["secret", "new", "--out", "worker.token"])
            .current_dir(dir.path()),
    );
    assert!(ok, "{text}");
    assert!(blocks[0][0].starts_with("strata secret new --out worker.token"));
    let tokens = dir.path().join("tokens");
    support::new_token(&tokens, "read");
    let data = tempfile::tempdir().unwrap();
    let node = support::start_with_tokens(data.path(), &tokens);
    let addr = node.addr;
    let lab = dir.path().join("lab.token");
    let reports = run_recipe(recipe, dir.path(), &node.url(), || {
        // "then SIGHUP the nodes", and wait until the node takes the
        // lab's token.
        node.signal("HUP");
        let token = std::fs::read_to_string(&lab).unwrap();
        let auth = format!("Bearer {}", token.trim());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while support::request_to(
            addr,
            "GET",
            "/v0/entity?id=k",
            &[("Authorization", &auth)],
            b"",
        )
        .status
            == 401
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the node never took lab.token"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    });
    assert_eq!(reports.len(), 1);
    served_by_two_workers(&reports[0].0, &reports[0].1);
    // The node's refusals, had the workers shown it nothing, are counted
    // as such, not as 5xx: the same load without the node's token.
    let w = WorkerProc::start(&[]);
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["load", &node.url(), "--workers", &w.url])
        .arg("--worker-token-file")
        .arg(w.token_file())
        .args(["--rate", "50", "--duration", "1", "--out"])
        .arg(dir.path().join("refused"))
        .env_remove("STRATA_TOKEN")
        .env_remove("STRATA_TOKEN_FILE")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(text.contains("401: 50"), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("401/403"))
        .unwrap_or("");
    assert!(line.split_whitespace().nth(1) == Some("50"), "{text}");
    assert!(
        !text.lines().any(|l| l.trim_start().starts_with("5xx")),
        "{text}"
    );
}
