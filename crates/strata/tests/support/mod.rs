//! Helpers for tests that run the real `strata` binary: start a node on an
//! ephemeral port against a temporary directory, talk raw HTTP/1.1 to it.
#![allow(dead_code)]

// The raw HTTP helpers are the node's tests' own.
#[path = "../../../node/tests/support/http.rs"]
mod http;
pub use http::*;

// What a test needs that a machine may not give (root, cgroup v1, a whole
// disk): "not checked" where it is missing.
mod require;
#[allow(unused_imports)]
pub use require::*;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct NodeProc {
    pub child: Child,
    pub addr: SocketAddr,
    pub dir: PathBuf,
}

impl NodeProc {
    pub fn start(dir: &Path, extra: &[&str]) -> NodeProc {
        Self::start_with(Command::new(env!("CARGO_BIN_EXE_strata")), dir, extra)
    }

    /// As `start`, its log (at `info`) in `log` instead of the test's
    /// stderr.
    pub fn start_logged(dir: &Path, extra: &[&str], log: &Path) -> NodeProc {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.stderr(Stdio::from(std::fs::File::create(log).unwrap()));
        let mut args = extra.to_vec();
        args.extend(["--log-level", "info"]);
        Self::spawn(cmd, dir, &args, false)
    }

    /// Start `strata serve` through `cmd`: the binary itself, or a wrapper
    /// such as `taskset -c 1 strata` that the serve arguments follow.
    pub fn start_with(cmd: Command, dir: &Path, extra: &[&str]) -> NodeProc {
        Self::spawn(cmd, dir, extra, true)
    }

    fn spawn(mut cmd: Command, dir: &Path, extra: &[&str], inherit: bool) -> NodeProc {
        if inherit {
            cmd.stderr(Stdio::inherit());
        }
        cmd.arg("serve");
        // An ephemeral port unless the caller names one.
        if !extra.contains(&"--listen") {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        let mut child = cmd
            .arg("--data-dir")
            .arg(dir)
            .args(if extra.contains(&"--log-level") {
                &[][..]
            } else {
                &["--log-level", "warn"][..]
            })
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start strata serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .rsplit("://")
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        NodeProc {
            child,
            addr,
            dir: dir.to_path_buf(),
        }
    }

    /// SIGTERM, then wait; returns the exit status code.
    pub fn stop(mut self) -> Option<i32> {
        // SAFETY: plain kill(2) on our child's pid.
        unsafe { libc_kill(self.child.id() as i32, 15) };
        let st = self.child.wait().unwrap();
        st.code()
    }

    /// The node's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Send the node a signal by name (`HUP`, `STOP`, `CONT`).
    pub fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{name}");
    }

    pub fn connect(&self) -> TcpStream {
        connect(self.addr)
    }

    /// One request on a fresh connection; returns (status, headers, body).
    pub fn request(&self, method: &str, target: &str, body: &[u8]) -> Response {
        self.request_with(method, target, &[], body)
    }

    /// As `request`, with the operator token of `test_secret()`.
    pub fn operate(&self, method: &str, target: &str, body: &[u8]) -> Response {
        let auth = format!("Bearer {}", operator_token());
        self.request_with(method, target, &[("Authorization", &auth)], body)
    }

    /// As `request`, with more headers.
    pub fn request_with(
        &self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        request_to(self.addr, method, target, headers, body)
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// A local cluster of real `strata serve` processes on loopback ports.
pub struct ClusterProcs {
    pub nodes: Vec<Option<NodeProc>>,
    pub urls: Vec<String>,
    pub dirs: Vec<PathBuf>,
    pub extra: Vec<String>,
    /// How node i's `strata` is run (a wrapper such as strace or
    /// taskset); the binary itself when none.
    pub wrap: Option<Box<dyn Fn(usize) -> Command>>,
    _tmp: tempfile::TempDir,
}

/// The cluster secret of this test process's nodes: random, made once (a
/// node refuses any secret written in the repository, as it would refuse
/// a fixed one here).
pub fn test_secret() -> &'static str {
    static SECRET: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SECRET.get_or_init(strata_cluster::auth::Secret::generate_hex)
}

/// A new token of `role` appended to the tokens file `file`
/// (`strata token new`), returned.
pub fn new_token(file: &Path, role: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["token", "new", role, &format!("{role}-holder"), "--append"])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// A node in `dir` that takes its callers' tokens from `tokens` and its
/// operator's from `test_secret()`.
pub fn start_with_tokens(dir: &Path, tokens: &Path) -> NodeProc {
    NodeProc::start(
        dir,
        &[
            "--auth-tokens",
            tokens.to_str().unwrap(),
            "--cluster-secret",
            test_secret(),
        ],
    )
}

/// The operator token of a cluster started with `test_secret()`.
pub fn operator_token() -> String {
    strata_api::access::operator_token(test_secret().as_bytes())
}

/// `strata`, run as the operator of a cluster started with `test_secret()`
/// (`STRATA_TOKEN` set to its operator token).
pub fn strata_operator() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
    c.env("STRATA_TOKEN", operator_token());
    c
}

/// A loopback port free now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl ClusterProcs {
    pub fn start(n: usize, extra: &[&str]) -> ClusterProcs {
        Self::start_wrapped(n, extra, None)
    }

    /// `start`, each node's `strata` run through `wrap(i)`.
    pub fn start_wrapped(
        n: usize,
        extra: &[&str],
        wrap: Option<Box<dyn Fn(usize) -> Command>>,
    ) -> ClusterProcs {
        let tmp = tempfile::tempdir().unwrap();
        // Each port held until all are chosen: a port released at once can
        // come back from the next bind (a cluster once named one twice).
        let held: Vec<std::net::TcpListener> = (0..n)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let urls: Vec<String> = held
            .iter()
            .map(|l| format!("http://127.0.0.1:{}", l.local_addr().unwrap().port()))
            .collect();
        drop(held);
        let dirs = (0..n)
            .map(|i| tmp.path().join(format!("node-{i}")))
            .collect();
        let mut c = ClusterProcs {
            nodes: (0..n).map(|_| None).collect(),
            urls,
            dirs,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            wrap,
            _tmp: tmp,
        };
        for i in 0..n {
            c.start_node(i);
        }
        let up = vec!["up"; n];
        for i in 0..n {
            assert!(
                c.wait_states(i, &up, 10),
                "node {i} never saw every peer up"
            );
        }
        c
    }

    pub fn start_node(&mut self, i: usize) {
        let listen = self.urls[i].trim_start_matches("http://").to_string();
        let list = self.urls.join(",");
        let mut args: Vec<&str> = vec![
            "--cluster",
            &list,
            "--cluster-secret",
            test_secret(),
            "--listen",
        ];
        args.push(&listen);
        let extra: Vec<&str> = self.extra.iter().map(|s| s.as_str()).collect();
        args.extend(extra);
        let p = match &self.wrap {
            Some(w) => NodeProc::start_with(w(i), &self.dirs[i], &args),
            None => NodeProc::start(&self.dirs[i], &args),
        };
        self.nodes[i] = Some(p);
    }

    pub fn node(&self, i: usize) -> &NodeProc {
        self.nodes[i].as_ref().expect("node running")
    }

    /// SIGKILL node i.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut p) = self.nodes[i].take() {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }

    /// Wait until node `observer` sees every member in `state`.
    pub fn wait_states(&self, observer: usize, want: &[&str], secs: u64) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        while std::time::Instant::now() < deadline {
            let r = self.node(observer).request("GET", "/v0/cluster", b"");
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            let states: Vec<String> = v["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["state"].as_str().unwrap().to_string())
                .collect();
            if states.iter().zip(want).all(|(a, b)| a == b) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

/// Start a node outside any layout, to join through `seed` (`strata
/// cluster join`): on a free port of its own (its peers dial its URL).
/// Returns it and its URL.
pub fn start_joining(dir: &Path, seed: &str) -> (NodeProc, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let n = NodeProc::start(
        dir,
        &[
            "--seed",
            seed,
            "--cluster-secret",
            test_secret(),
            "--listen",
            &listen,
        ],
    );
    (n, format!("http://{listen}"))
}

/// Wait until node `i`'s anti-entropy trees are built (a fresh process
/// scans its store once), at most `secs`.
pub fn trees_ready(c: &ClusterProcs, i: usize, secs: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let r = c.node(i).request("GET", "/v0/cluster", b"");
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        if v["ranges"]
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(|g| g["tree_ready"] == true))
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "trees never ready: {v:#}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Write records straight into a stopped node's store, as a bug or an
/// operator might: (key, value, HLC version) each, from a node id no
/// member has.
pub fn write_behind_the_back(dir: &Path, entries: &[(Vec<u8>, Vec<u8>, u64)]) {
    use strata_cluster::record::{Record, Version};
    let db = strata_engine::Db::open(dir, strata_engine::Options::default()).unwrap();
    let mut batch = strata_engine::WriteBatch::new();
    for (k, v, hlc) in entries {
        let r = Record {
            version: Version {
                hlc: *hlc,
                node: 0x5eed,
            },
            value: Some(v.clone().into()),
            marks: Vec::new(),
        };
        batch.put(k, &r.encode());
    }
    db.write(batch).unwrap();
    db.close().unwrap();
}

/// Over a lab report's per-second timeline (`trials[0].timeline`), the
/// seconds that overlap `[from, to)`: the median and the worst of their
/// p99s (ms), and how many seconds.
pub fn p99_per_second(seconds: &[serde_json::Value], from: f64, to: f64) -> (f64, f64, usize) {
    let mut xs: Vec<f64> = seconds
        .iter()
        .filter(|s| {
            let t = s["t_s"].as_f64().unwrap();
            t + 1.0 > from && t < to
        })
        .map(|s| s["p99_ms"].as_f64().unwrap())
        .collect();
    xs.sort_by(f64::total_cmp);
    (
        xs.get(xs.len() / 2).copied().unwrap_or(0.0),
        xs.last().copied().unwrap_or(0.0),
        xs.len(),
    )
}

/// `strata ARGS...` to its end: (success, stdout then stderr).
pub fn run_strata(args: &[&str]) -> (bool, String) {
    outcome(Command::new(env!("CARGO_BIN_EXE_strata")).args(args))
}

/// Run `cmd` to its end: (success, stdout then stderr).
pub fn outcome(cmd: &mut Command) -> (bool, String) {
    let o = cmd.output().expect("run the command");
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// A workload file in `dir` of range reads of 200 records over 2,000
/// preloaded keys: costly to serve, nearly free to send (the overload
/// tests' load).
pub fn range_workload(dir: &Path) -> PathBuf {
    let path = dir.join("range.toml");
    std::fs::write(
        &path,
        "name = \"range 200\"\nkeys = 2_000\npreload = true\n[mix]\nrange = 1.0\n\
         [key]\ndistribution = \"uniform\"\n[value]\nsize = \"fixed\"\nbytes = 100\n\
         [range]\nmin = 200\nmax = 200\n",
    )
    .unwrap();
    path
}

/// Whether a `/metrics` text has a sample of `name` (with labels or not).
pub fn serves(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix(name)
            .is_some_and(|r| r.starts_with([' ', '{']))
    })
}
