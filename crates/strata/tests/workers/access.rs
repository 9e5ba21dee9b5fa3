//! Who may order a worker, and what it reads: its own token always
//! (loopback too; 401 before a body is read), no second run while busy,
//! no workload file but one sent in the order or under `--workloads`.

use std::io::Read;
use std::process::{Command, Stdio};

use crate::support::NodeProc;
use crate::worker::{one_at_a_time, raw, run_order, sweep, WorkerProc, PUTS, TOKEN};

#[test]
fn workers_refuse_strangers_bad_requests_and_a_second_run() {
    let w = WorkerProc::start(&[]);
    // Without the token, or with another: 401, and the body is not read
    // (a body past the bound would be 413 if it were).
    let wrong = "Authorization: Bearer not-the-worker-token-at-all\r\n";
    for headers in ["", wrong] {
        let (status, body) = raw(w.addr(), "GET", "/v0/worker", headers, b"");
        assert_eq!(status, 401, "{headers:?}: {body}");
        let (status, body) = raw(
            w.addr(),
            "POST",
            "/v0/worker/run",
            headers,
            &vec![b' '; 2 << 20],
        );
        assert_eq!(status, 401, "{headers:?}: {body}");
    }
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, body) = raw(w.addr(), "GET", "/v0/worker", &auth, b"");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"busy\":false"), "{body}");
    let (status, body) = raw(w.addr(), "POST", "/v0/worker/run", &auth, b"{\"not\": 1}");
    assert_eq!(status, 400, "{body}");
    let (status, _) = raw(
        w.addr(),
        "POST",
        "/v0/worker/run",
        &auth,
        &vec![b' '; 2 << 20],
    );
    assert_eq!(status, 413);

    // A controller without the workers' token is told how to give it;
    // one with another token is refused, naming the worker.
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "sweep",
            &node.url(),
            "--workers",
            &w.url,
            "--max-trials",
            "1",
        ])
        .env_remove("STRATA_WORKER_TOKEN")
        .env_remove("STRATA_WORKER_TOKEN_FILE")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(text.contains("--worker-token-file"), "{text}");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "sweep",
            &node.url(),
            "--workers",
            &w.url,
            "--max-trials",
            "1",
        ])
        .args(["--worker-token", "not-the-worker-token-at-all"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(text.contains(&w.url) && text.contains("401"), "{text}");

    // A second run while one is under way: 409, and the sweep says busy.
    let busy = WorkerProc::start(&[]);
    let url = node.url();
    let first = {
        let b = busy.url.clone();
        std::thread::spawn(move || {
            let out = tempfile::tempdir().unwrap();
            Command::new(env!("CARGO_BIN_EXE_strata"))
                .args(["sweep", &url, "--workers", &b, "--max-trials", "1"])
                .args(["--worker-token", TOKEN])
                .args(["--duration", "3", "--start-rate", "100", "--repeats", "1"])
                .args(["--tail-samples", "1", "--out", out.path().to_str().unwrap()])
                .output()
                .unwrap()
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (ok, text, _) = sweep(&node.url(), &[&busy], &["--max-trials", "1"]);
    assert!(!ok);
    assert!(text.contains("busy"), "{text}");
    let (status, body) = raw(busy.addr(), "POST", "/v0/worker/run", &auth, b"{}");
    assert_eq!(status, 409, "{body}");
    // The first run went on to its end, undisturbed: its objective met
    // (0) or, on a machine that stalled it, said unmet (3); not an error.
    let first = first.join().unwrap();
    assert!(
        matches!(first.status.code(), Some(0 | 3)),
        "{:?}: {}{}",
        first.status,
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr)
    );
}

#[test]
fn a_worker_will_not_start_without_a_token_of_its_own() {
    // Its error, once it has exited; one still running after 10 s started.
    let worker = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("worker")
            .args(args)
            .env_remove("STRATA_WORKER_TOKEN")
            .env_remove("STRATA_WORKER_TOKEN_FILE")
            .env_remove("STRATA_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            if let Some(s) = c.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                panic!("{args:?}: the worker started");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(!status.success(), "{args:?}");
        let mut err = String::new();
        c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        err
    };
    // No token, on loopback as beyond it: refused, saying how to make one.
    for listen in ["127.0.0.1:0", "0.0.0.0:0"] {
        let e = worker(&["--listen", listen]);
        assert!(
            e.contains("--worker-token-file") && e.contains("strata secret new"),
            "{e}"
        );
    }
    // The node's token (the global --token) is not the worker's: the old
    // recipe, `strata worker --token T`, gave the node T too.
    let e = worker(&["--listen", "127.0.0.1:0", "--token", TOKEN]);
    assert!(e.contains("--worker-token-file"), "{e}");
    let e = worker(&["--listen", "127.0.0.1:0", "--worker-token", "short"]);
    assert!(e.contains("at least 16 bytes"), "{e}");
    // Nor may the two be the same.
    let e = worker(&[
        "--listen",
        "127.0.0.1:0",
        "--worker-token",
        TOKEN,
        "--token",
        TOKEN,
    ]);
    assert!(e.contains("the token it shows the node"), "{e}");
    let e = worker(&["--worker-token-file", "/nonexistent/worker.token"]);
    assert!(e.contains("/nonexistent/worker.token"), "{e}");
}

#[test]
fn a_worker_reads_no_workload_file_but_those_under_its_workloads() {
    let _one = one_at_a_time();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("workloads");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("inside.toml"), PUTS).unwrap();
    std::fs::write(root.path().join("outside.toml"), PUTS).unwrap();
    std::os::unix::fs::symlink(root.path().join("outside.toml"), dir.join("link.toml")).unwrap();
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let url = node.url();
    let outside = root.path().join("outside.toml");
    let outside = outside.to_str().unwrap();

    // Without --workloads: no file at all, not even one in its own
    // directory; built-ins run.
    let w = WorkerProc::start(&[]);
    std::fs::write(w.dir.as_ref().unwrap().path().join("here.toml"), PUTS).unwrap();
    for name in ["here.toml", outside, "/etc/passwd"] {
        let (status, body) = run_order(&w, &auth, &[&url, "--workload", name]);
        assert_eq!(status, 403, "{name}: {body}");
        assert!(body.contains("reads no workload file"), "{name}: {body}");
    }
    let (status, body) = run_order(&w, &auth, &[&url, "--workload", "put", "--keys", "100"]);
    assert_eq!(status, 200, "{body}");

    // With --workloads DIR: a file under it, and nothing out of it, by
    // `..`, an absolute path or a symlink.
    let w = WorkerProc::start(&["--workloads", dir.to_str().unwrap()]);
    for name in ["../outside.toml", outside, "link.toml", "/etc/passwd"] {
        let (status, body) = run_order(&w, &auth, &[&url, "--workload", name]);
        assert_eq!(status, 403, "{name}: {body}");
        assert!(body.contains("not a file under"), "{name}: {body}");
    }
    let (status, body) = run_order(&w, &auth, &[&url, "--workload", "inside.toml"]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"statuses\""), "{body}");
}

#[test]
fn a_controller_sends_its_workload_file_to_workers_that_have_none() {
    let _one = one_at_a_time();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let w = WorkerProc::start(&[]);
    // The file is in the controller's directory alone, named relatively.
    let here = tempfile::tempdir().unwrap();
    std::fs::write(here.path().join("puts.toml"), PUTS).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["load", &node.url(), "--workers", &w.url])
        .arg("--worker-token-file")
        .arg(w.token_file())
        .args(["--workload", "puts.toml", "--rate", "50", "--duration", "1"])
        .args(["--json", "--quiet", "--out", "rep"])
        .current_dir(here.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &r["trials"][0];
    assert_eq!(t["requests"].as_u64(), Some(50), "{t}");
    assert_eq!(t["per_op"][0]["op"], "put", "{t}");
}
