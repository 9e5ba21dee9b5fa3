//! The worker under test: a `strata worker` process wanting `TOKEN`, a
//! sweep through workers, one raw exchange with a worker and the run
//! order a controller would send it.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The token the test's workers want (their --worker-token-file holds it).
pub const TOKEN: &str = "a-worker-token-of-some-length";

/// A `strata worker` on a free loopback port, wanting `TOKEN`, with
/// `extra` arguments.
pub struct WorkerProc {
    pub child: Child,
    pub url: String,
    /// Holds its token file (the workers `start` starts).
    pub dir: Option<tempfile::TempDir>,
    /// Its stderr.
    _log: tempfile::NamedTempFile,
}

impl WorkerProc {
    pub fn start(extra: &[&str]) -> WorkerProc {
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
    pub fn spawn(mut cmd: Command, dir: Option<tempfile::TempDir>) -> WorkerProc {
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

    pub fn addr(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    /// The file holding the token it wants, for a controller.
    pub fn token_file(&self) -> PathBuf {
        self.dir.as_ref().unwrap().path().join("worker.token")
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn sweep(
    url: &str,
    workers: &[&WorkerProc],
    extra: &[&str],
) -> (bool, String, serde_json::Value) {
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
pub fn raw(addr: &str, method: &str, path: &str, headers: &str, body: &[u8]) -> (u16, String) {
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
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The run order a controller would send for `args` (`strata load`'s
/// target arguments): one second at 20 req/s, due in half a second.
pub fn order(args: &[&str]) -> Vec<u8> {
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
pub const PUTS: &str =
    "name = \"puts\"\nkeys = 100\n[mix]\nput = 1.0\n[key]\ndistribution = \"uniform\"\n\
                    [value]\nsize = \"fixed\"\nbytes = 10\n";

/// Order `w`, showing `auth` (an `Authorization` line, or none), to run
/// `strata load`'s `args`: the answer's status and body.
pub fn run_order(w: &WorkerProc, auth: &str, args: &[&str]) -> (u16, String) {
    raw(w.addr(), "POST", "/v0/worker/run", auth, &order(args))
}
