//! A sweep split among workers (`strata sweep --workers`, `strata
//! worker`): every trial's schedule sent once, shared evenly, the
//! latencies merged (against a server whose every answer takes 20 ms, the
//! same p50 as one generator's); a worker stopped (SIGSTOP) mid-trial is the cause the
//! verdict names, by its URL; a worker will not start without its own
//! token, refuses every order without it (401, before reading it), a bad
//! request, a second run while busy, and any workload file but one sent in
//! the order or under its --workloads; docs/lab.md's "Many generators"
//! recipes run as written against real nodes, without tokens and with.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use support::NodeProc;

/// The token the test's workers want (their --worker-token-file holds it).
const TOKEN: &str = "a-worker-token-of-some-length";

/// A `strata worker` on a free loopback port, wanting `TOKEN`, with
/// `extra` arguments.
struct WorkerProc {
    child: Child,
    url: String,
    /// Holds its token file (the workers `start` starts).
    dir: Option<tempfile::TempDir>,
    /// Its stderr.
    _log: tempfile::NamedTempFile,
}

impl WorkerProc {
    fn start(extra: &[&str]) -> WorkerProc {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("worker.token"), format!("{TOKEN}\n")).unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
        c.args(["worker", "--listen", "127.0.0.1:0", "--quiet"])
            .arg("--worker-token-file")
            .arg(dir.path().join("worker.token"))
            .args(extra)
            .current_dir(dir.path());
        Self::spawn(c, Some(dir))
    }

    /// The worker `cmd` starts (its stdout's first line names its URL).
    fn spawn(mut cmd: Command, dir: Option<tempfile::TempDir>) -> WorkerProc {
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if !line.contains("http://127.0.0.1:") {
            let _ = child.wait();
            let err = std::fs::read_to_string(log.path()).unwrap_or_default();
            panic!("the worker did not start: {line}{err}");
        }
        let url = line
            .trim()
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .to_string();
        WorkerProc {
            child,
            url,
            dir,
            _log: log,
        }
    }

    fn addr(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    /// The file holding the token it wants, for a controller.
    fn token_file(&self) -> PathBuf {
        self.dir.as_ref().unwrap().path().join("worker.token")
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sweep(url: &str, workers: &[&WorkerProc], extra: &[&str]) -> (bool, String, serde_json::Value) {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("rep");
    let list: Vec<&str> = workers.iter().map(|w| w.url.as_str()).collect();
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["sweep", url, "--workers", &list.join(",")])
        .arg("--worker-token-file")
        .arg(workers[0].token_file())
        .args(["--pause", "0", "--repeats", "1", "--keys", "1000"])
        .args(["--out", dir.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let report = std::fs::read_to_string(dir.join("report.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(serde_json::Value::Null);
    (o.status.success(), text, report)
}

/// One raw HTTP/1.1 exchange with a worker: the status and the body.
fn raw(addr: &str, method: &str, path: &str, headers: &str, body: &[u8]) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: w\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    let _ = s.write_all(body);
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

/// The tests that send load run one at a time: each judges latencies or
/// lateness, which a second run of load beside it on this machine's two
/// cores would change (a worker stopped on purpose was once out-lated by
/// the other worker, starved by a test running alongside).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn a_sweep_split_among_two_workers_sends_every_trial_once() {
    let _one = one_at_a_time();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let (a, b) = (WorkerProc::start(&[]), WorkerProc::start(&[]));
    let (ok, text, r) = sweep(
        &node.url(),
        &[&a, &b],
        &[
            "--start-rate",
            "300",
            "--duration",
            "1.5",
            "--max-trials",
            "2",
            "--tail-samples",
            "3",
            "--slo",
            "p99<=5s",
        ],
    );
    assert!(ok, "{text}");
    assert!(text.contains("split among 2 workers"), "{text}");
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2, "{text}");
    for t in trials {
        let rate = t["offered_rate"].as_f64().unwrap();
        let want = (rate * 1.5) as u64;
        // The whole schedule, once: as one generator would have sent it.
        assert_eq!(t["requests"].as_u64(), Some(want), "{t}");
        let w = t["workers"].as_array().unwrap();
        assert_eq!(w.len(), 2);
        let urls: Vec<&str> = w.iter().map(|w| w["url"].as_str().unwrap()).collect();
        assert_eq!(urls, [a.url.as_str(), b.url.as_str()]);
        for w in w {
            assert_eq!(w["requests"].as_u64(), Some(want / 2), "an even share: {w}");
        }
        // The merged latencies are every request's.
        let ops: u64 = t["per_op"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["requests"].as_u64().unwrap())
            .sum();
        assert_eq!(ops, want);
        assert!(t["latency"]["p99_ms"].as_f64().unwrap() > 0.0);
    }
}

/// A server that answers every request after `delay` (one thread per
/// connection): a target whose latency is known, so that percentiles can
/// be compared without the machine's noise deciding.
fn slow_server(delay: std::time::Duration) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                loop {
                    let (mut len, mut line, mut path) = (0usize, String::new(), String::new());
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if path.is_empty() {
                            path = line.split(' ').nth(1).unwrap_or("").to_string();
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0u8; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    let status = if path.starts_with("/v0/entity") {
                        std::thread::sleep(delay);
                        "200 OK"
                    } else {
                        "404 Not Found"
                    };
                    let head = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
                    if w.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

fn p(r: &serde_json::Value, q: &str) -> f64 {
    r["trials"][0]["latency"][q].as_f64().unwrap()
}

#[test]
fn two_workers_merged_see_the_latencies_one_generator_sees() {
    let _one = one_at_a_time();
    // Every answer takes 20 ms: one generator and two workers, merged,
    // must both say so, at p50 and p99 (within the generator's own
    // jitter), and count every request.
    let target = slow_server(std::time::Duration::from_millis(20));
    let (a, b) = (WorkerProc::start(&[]), WorkerProc::start(&[]));
    let run = |workers: Option<String>| {
        let out = tempfile::tempdir().unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
        c.args(["load", &target, "--workload", "get", "--keys", "100"])
            .args(["--rate", "200", "--duration", "2", "--json", "--quiet"])
            .args(["--out", out.path().join("r").to_str().unwrap()]);
        if let Some(w) = workers {
            c.args(["--workers", &w])
                .arg("--worker-token-file")
                .arg(a.token_file());
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let one = run(None);
    let two = run(Some(format!("{},{}", a.url, b.url)));
    for r in [&one, &two] {
        assert_eq!(r["trials"][0]["requests"].as_u64(), Some(400), "{r}");
        let p50 = p(r, "p50_ms");
        assert!((20.0..24.0).contains(&p50), "p50 {p50} ms");
        assert!(p(r, "p99_ms") >= 20.0);
    }
    let ratio = p(&two, "p50_ms") / p(&one, "p50_ms");
    assert!((0.9..1.1).contains(&ratio), "p50 two / one = {ratio}");
    assert_eq!(two["trials"][0]["workers"].as_array().unwrap().len(), 2);
}

#[test]
fn a_load_run_split_among_workers_merges_into_one_log() {
    let _one = one_at_a_time();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let (a, b, c) = (
        WorkerProc::start(&[]),
        WorkerProc::start(&[]),
        WorkerProc::start(&[]),
    );
    let out = tempfile::tempdir().unwrap();
    let hlog = out.path().join("run.hlog");
    let workers = [&a, &b, &c].map(|w| w.url.clone()).join(",");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["load", &node.url(), "--workers", &workers])
        .arg("--worker-token-file")
        .arg(a.token_file())
        .args(["--rate", "600", "--duration", "2", "--keys", "1000"])
        .args(["--hdr", hlog.to_str().unwrap()])
        .args(["--out", out.path().join("rep").to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("1200 requests in"), "{text}");
    assert!(text.contains("Workers (3;"), "{text}");
    for w in [&a, &b, &c] {
        assert!(
            text.lines()
                .any(|l| l.contains(&w.url) && l.contains(" 400 requests")),
            "{}: {text}",
            w.url
        );
    }
    // The interval log holds every request of every worker.
    let m = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["report", "merge", "--json", hlog.to_str().unwrap()])
        .output()
        .unwrap();
    let m: serde_json::Value = serde_json::from_slice(&m.stdout).unwrap();
    assert_eq!(m["total"]["count"].as_u64(), Some(1200), "{m}");
    // A run is split among workers or is one share of a run, not both.
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "load",
            &node.url(),
            "--workers",
            &workers,
            "--worker-token",
            TOKEN,
            "--segment",
            "1/2",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--segment"));
}

#[test]
fn a_worker_stopped_mid_trial_is_the_cause_the_verdict_names() {
    let _one = one_at_a_time();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start(data.path(), &["--durability", "none"]);
    let (a, b) = (WorkerProc::start(&[]), WorkerProc::start(&[]));
    // The trial's first send is due 1.5 s after the sweep asks; stop the
    // first worker from 0.6 s into it, for a second.
    let pid = a.child.id().to_string();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(2400));
        let _ = Command::new("kill").args(["-STOP", &pid]).status();
        std::thread::sleep(std::time::Duration::from_secs(1));
        let _ = Command::new("kill").args(["-CONT", &pid]).status();
    });
    let (_, text, r) = sweep(
        &node.url(),
        &[&a, &b],
        &[
            "--start-rate",
            "400",
            "--duration",
            "3",
            "--max-trials",
            "1",
            "--tail-samples",
            "1",
            "--slo",
            "p99<=100ms",
        ],
    );
    stopper.join().unwrap();
    assert_eq!(r["cause"], "generator", "{text}");
    let verdict = r["verdict"].as_str().unwrap();
    assert!(
        verdict.contains(&format!("The worker that fell behind: {}", a.url)),
        "{verdict}"
    );
    let w = &r["trials"][0]["workers"];
    assert!(
        w[0]["generator_late_sends"].as_u64() > w[1]["generator_late_sends"].as_u64(),
        "{w}"
    );
}

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

/// The run order a controller would send for `args` (`strata load`'s
/// target arguments): one second at 20 req/s, due in half a second.
fn order(args: &[&str]) -> Vec<u8> {
    use clap::Parser;
    use strata_lab::experiment::target::TargetArgs;
    use strata_lab::experiment::worker::RunRequest;
    #[derive(Parser)]
    struct Load {
        #[command(flatten)]
        target: TargetArgs,
    }
    let target = Load::parse_from(std::iter::once("load").chain(args.iter().copied())).target;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    serde_json::to_vec(&RunRequest {
        pace: target.open(20.0),
        target,
        workload_toml: None,
        duration_s: 1.0,
        seed: 1,
        segment: (0, 1),
        start_at_ms: (now.as_millis() + 500) as u64,
    })
    .unwrap()
}

/// A workload file of puts over 100 keys.
const PUTS: &str =
    "name = \"puts\"\nkeys = 100\n[mix]\nput = 1.0\n[key]\ndistribution = \"uniform\"\n\
                    [value]\nsize = \"fixed\"\nbytes = 10\n";

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
        let (status, body) = raw(
            w.addr(),
            "POST",
            "/v0/worker/run",
            &auth,
            &order(&[&url, "--workload", name]),
        );
        assert_eq!(status, 403, "{name}: {body}");
        assert!(body.contains("reads no workload file"), "{name}: {body}");
    }
    let (status, body) = raw(
        w.addr(),
        "POST",
        "/v0/worker/run",
        &auth,
        &order(&[&url, "--workload", "put", "--keys", "100"]),
    );
    assert_eq!(status, 200, "{body}");

    // With --workloads DIR: a file under it, and nothing out of it, by
    // `..`, an absolute path or a symlink.
    let w = WorkerProc::start(&["--workloads", dir.to_str().unwrap()]);
    for name in ["../outside.toml", outside, "link.toml", "/etc/passwd"] {
        let (status, body) = raw(
            w.addr(),
            "POST",
            "/v0/worker/run",
            &auth,
            &order(&[&url, "--workload", name]),
        );
        assert_eq!(status, 403, "{name}: {body}");
        assert!(body.contains("not a file under"), "{name}: {body}");
    }
    let (status, body) = raw(
        w.addr(),
        "POST",
        "/v0/worker/run",
        &auth,
        &order(&[&url, "--workload", "inside.toml"]),
    );
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
