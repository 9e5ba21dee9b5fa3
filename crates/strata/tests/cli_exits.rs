//! What the commands' exit statuses promise (docs/lab.md, "Exit status"):
//! `strata load` exits 3 when no request succeeded or its `--slo` /
//! `--max-errors` was not met, 0 when met; `strata sweep` exits 3 when no
//! rate met its objective; `strata kv` puts, gets (exit 4 for a missing
//! key), ranges and deletes through the client library.

mod support;

use std::process::Command;

use support::{new_token, NodeProc};

fn strata(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .env_remove("STRATA_TOKEN")
        .env_remove("STRATA_URL")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

#[test]
fn load_and_sweep_exit_3_when_their_objective_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let n = NodeProc::start(&tmp.path().join("d"), &[]);
    let url = n.url();
    let out = tmp.path().join("out");
    let out = out.to_str().unwrap();
    let load = |extra: &[&str]| {
        let mut a = vec![
            "load",
            &url,
            "--rate",
            "200",
            "--duration",
            "1",
            "--out",
            out,
        ];
        a.extend_from_slice(extra);
        strata(&a)
    };
    let (code, _, err) = load(&[]);
    assert_eq!(code, Some(0), "no objective, requests served: {err}");
    let (code, _, err) = load(&["--slo", "p99<=10s", "--max-errors", "1%"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = load(&["--slo", "p50<=1us"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("the objective (p50<=0.001ms"), "{err}");
    assert!(err.contains("was not met: p50"), "{err}");

    let (code, _, err) = strata(&[
        "sweep",
        &url,
        "--slo",
        "p50<=1us",
        "--start-rate",
        "100",
        "--duration",
        "1",
        "--max-trials",
        "2",
        "--repeats",
        "1",
        "--out",
        out,
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("no rate met the objective"), "{err}");
}

#[test]
fn load_exits_3_when_every_request_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tokens");
    let reader = new_token(&file, "read");
    let n = support::start_with_tokens(&tmp.path().join("d"), &file);
    let out = tmp.path().join("out");
    // A read token writing: every PUT is refused (403).
    let (code, _, err) = strata(&[
        "--token",
        &reader,
        "load",
        &n.url(),
        "--rate",
        "100",
        "--duration",
        "1",
        "--workload",
        "put",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("no request succeeded"), "{err}");
}

#[test]
fn kv_puts_gets_ranges_and_deletes() {
    let tmp = tempfile::tempdir().unwrap();
    let n = NodeProc::start(&tmp.path().join("d"), &[]);
    let url = n.url();
    let kv = |args: &[&str]| {
        let mut a = vec!["kv", "--url", &url];
        a.extend_from_slice(args);
        strata(&a)
    };
    assert_eq!(kv(&["put", "k/1", "one"]).0, Some(0));
    assert_eq!(kv(&["put", "k/2", "two words"]).0, Some(0));
    let (code, out, _) = kv(&["get", "k/2"]);
    assert_eq!((code, out.as_str()), (Some(0), "two words"));
    let (code, out, _) = kv(&["range", "k/", "k0"]);
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "k/1\tone\nk/2\ttwo words\n")
    );
    assert_eq!(kv(&["delete", "k/1"]).0, Some(0));
    let (code, out, err) = kv(&["get", "k/1"]);
    assert_eq!((code, out.as_str()), (Some(4), ""), "{err}");
    assert!(err.contains("k/1: not found"), "{err}");
    // A URL without its scheme says so, once.
    let (code, _, err) = strata(&["kv", "--url", "127.0.0.1:1", "get", "x"]);
    assert_eq!(code, Some(1));
    assert_eq!(err.matches("127.0.0.1:1").count(), 3, "{err}");
    assert!(err.contains("give the scheme, http://127.0.0.1:1"), "{err}");
}

/// `strata kv` with no `--url` talks to where `strata serve` listens with
/// no `--listen` (both say so in `--help`).
#[test]
fn kv_defaults_to_where_serve_listens() {
    let (code, serve, _) = strata(&["serve", "--help"]);
    assert_eq!(code, Some(0));
    assert!(serve.contains("[default: 127.0.0.1:8080]"), "{serve}");
    let (code, kv, _) = strata(&["kv", "--help"]);
    assert_eq!(code, Some(0));
    assert!(kv.contains("[default: http://127.0.0.1:8080]"), "{kv}");
}
