//! The diagnosis suite (issue 27): each scenario starts real processes
//! with one bottleneck put there on purpose by a real mechanism, sweeps
//! them with `strata sweep`, and asserts the cause its verdict names (the
//! report's `cause` and `cause_node`):
//!
//! | scenario | mechanism | the verdict must name |
//! | --- | --- | --- |
//! | slow fsync | `strace --seccomp-bpf -e inject=fdatasync:delay_exit=3000` on the node | `fsync` of node-1 |
//! | tiny admission limit | `--max-in-service 1` | `admission` |
//! | a node that pauses | SIGSTOP/SIGCONT of node 3 of 3, 150 ms every second | `pause` of node-3 |
//! | a starved generator | two busy loops (`yes`) pinned to the generator's core | `generator` |
//! | a CPU hog on the node's core | the node and a busy loop pinned to one core | `cpu` of node-1 |
//! | a slow replica disk | node 2 of 3 with the engine's fail point: each WAL fsync 3 ms longer | `fsync` of node-2 |
//! | write stalls | 64 KiB PUTs into 1 MiB memtables: flushes and compactions taking the disk | `stalls` or `io` of node-1 |
//! | a delayed network path | the node in a network namespace behind `strata cluster delay` (2.5 ms each way), 16 connections | `network` to node-1 |
//!
//! The slow fsync, the admission limit and the starved generator run with
//! the tests; the rest, and all of them in a row
//! with a table of what each verdict said, run with
//! `cargo test --release -p strata --test diagnosis -- --ignored --nocapture`
//! (docs/benchmarks.md, "Diagnosis"). A scenario needs `strace` and
//! `taskset`, the network one `ip` (iproute2) and root; without them it
//! fails, it does not pass.

mod support;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::{ClusterProcs, NodeProc};

/// What a sweep said.
#[derive(Debug)]
struct Said {
    cause: String,
    node: Option<String>,
    breaking_point: Option<f64>,
    verdict: String,
}

/// `strata sweep` of `urls`, the generator pinned to `lab_cpu` when given;
/// short trials (this is a test of the verdict, not a measurement).
fn sweep(urls: &str, lab_cpu: Option<&str>, extra: &[&str]) -> Said {
    let out = tempfile::tempdir().unwrap();
    let mut cmd = match lab_cpu {
        Some(c) => {
            let mut t = Command::new("taskset");
            t.args(["-c", c, env!("CARGO_BIN_EXE_strata")]);
            t
        }
        None => Command::new(env!("CARGO_BIN_EXE_strata")),
    };
    // The objective is p99 <= 10 ms unless `extra` names another.
    let slo = if extra.contains(&"--slo") {
        &[][..]
    } else {
        &["--slo", "p99<=10ms"][..]
    };
    cmd.args(["sweep", urls, "--max-errors", "0.1%"])
        .args(slo)
        .args(["--duration", "2", "--tail-samples", "30", "--pause", "0.3"])
        .args(["--max-trials", "12", "--quiet", "--json", "--out"])
        .arg(out.path())
        .args(extra);
    let o = cmd.output().expect("run strata sweep");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "strata sweep failed: {text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    Said {
        cause: r["cause"].as_str().unwrap_or("").to_string(),
        node: r["cause_node"].as_str().map(str::to_string),
        breaking_point: r["breaking_point"].as_f64(),
        verdict: r["verdict"].as_str().unwrap_or("").to_string(),
    }
}

fn need(tool: &str) {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{tool} is needed by this scenario (.ci/run installs it)"
    );
}

/// `strata`, its fdatasync calls each delayed by `ms` (strace with a
/// seccomp filter: the other syscalls run untraced, at full speed).
fn slow_fsync(ms: u32) -> Command {
    need("strace");
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "--seccomp-bpf", "-e", "trace=fdatasync"])
        .arg("-e")
        .arg(format!("inject=fdatasync:delay_exit={}", ms * 1000))
        .args(["-o", "/dev/null", env!("CARGO_BIN_EXE_strata")]);
    c
}

/// `strata` pinned to `cpu`.
fn pinned(cpu: &str) -> Command {
    need("taskset");
    let mut c = Command::new("taskset");
    c.args(["-c", cpu, env!("CARGO_BIN_EXE_strata")]);
    c
}

/// Busy loops pinned to `cpu`, killed when dropped.
struct Hogs(Vec<Child>);

impl Hogs {
    fn on(cpu: &str, n: usize) -> Hogs {
        need("taskset");
        Hogs(
            (0..n)
                .map(|_| {
                    Command::new("taskset")
                        .args(["-c", cpu, "yes"])
                        .stdout(Stdio::null())
                        .spawn()
                        .expect("start a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The children of `pid` (a wrapper's node), killed with it.
fn kill_children(pid: u32) {
    let Ok(d) = std::fs::read_dir("/proc") else {
        return;
    };
    for e in d.flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(pid) {
            if let Ok(child) = e.file_name().to_string_lossy().parse::<i32>() {
                // SAFETY: kill(2) on a process we started (through strace).
                unsafe { libc::kill(child, 9) };
            }
        }
    }
}

/// A node started through a wrapper; the wrapper's child (the node) is
/// killed with it.
struct Wrapped(NodeProc);

impl Drop for Wrapped {
    fn drop(&mut self) {
        kill_children(self.0.child.id());
    }
}

fn url(n: &NodeProc) -> String {
    format!("http://{}", n.addr)
}

/// Stop and continue `pid` every second, `stopped` of it, until told.
fn pauser(pid: u32, stopped: Duration) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let h = std::thread::spawn(move || {
        while !d.load(Ordering::Relaxed) {
            // SAFETY: kill(2) on a node this test started.
            unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
            std::thread::sleep(stopped);
            unsafe { libc::kill(pid as i32, libc::SIGCONT) };
            std::thread::sleep(Duration::from_secs(1) - stopped);
        }
        unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    });
    (done, h)
}

/// One scenario at a time: each measures the machine's limits, which a
/// second one running beside it would change.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// `cause` may name several, `a|b`: either is right.
fn expect(name: &str, said: &Said, cause: &str, node: Option<&str>) {
    eprintln!(
        "{name}: cause {} {:?}, breaking point {:?}\n  {}",
        said.cause, said.node, said.breaking_point, said.verdict
    );
    assert!(
        cause.split('|').any(|c| c == said.cause),
        "{name}: expected {cause}, the verdict named {}: {}",
        said.cause,
        said.verdict
    );
    if let Some(n) = node {
        assert_eq!(said.node.as_deref(), Some(n), "{name}: {}", said.verdict);
    }
}

fn scenario_slow_fsync() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = Wrapped(NodeProc::start_with(slow_fsync(3), data.path(), &[]));
    // A write waits for the fsync in flight and then its own: twice the
    // 3 ms injected plus the disk's own, which on some days of this
    // machine is 3 ms at p99 too. Against 10 ms the objective then failed
    // at any rate, before anything was busy ("cannot tell" at 66 req/s);
    // 40 ms leaves room for the fsync to become the bottleneck first.
    sweep(
        &url(&n.0),
        None,
        &["--start-rate", "500", "--slo", "p99<=40ms"],
    )
}

fn scenario_tiny_admission() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = NodeProc::start(data.path(), &["--max-in-service", "1"]);
    sweep(&url(&n), None, &["--start-rate", "1000"])
}

fn scenario_pausing_node() -> Said {
    let c = ClusterProcs::start(3, &[]);
    let (done, h) = pauser(c.node(2).child.id(), Duration::from_millis(150));
    // Each connection to its own node (`--client direct`): the client
    // library steers around a stopped node, so through it the pause is no
    // longer the limit (docs/benchmarks.md, issue 28).
    let said = sweep(
        &c.urls.join(","),
        None,
        &["--start-rate", "250", "--client", "direct"],
    );
    done.store(true, Ordering::Relaxed);
    h.join().unwrap();
    said
}

fn scenario_starved_generator() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = Wrapped(NodeProc::start_with(
        pinned("1"),
        data.path(),
        &["--durability", "none"],
    ));
    let _hogs = Hogs::on("0", 2);
    sweep(&url(&n.0), Some("0"), &["--start-rate", "1000"])
}

fn scenario_cpu_hog_on_the_node() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = Wrapped(NodeProc::start_with(
        pinned("1"),
        data.path(),
        &["--durability", "none", "--worker-threads", "1"],
    ));
    let _hogs = Hogs::on("1", 1);
    sweep(&url(&n.0), Some("0"), &["--start-rate", "2000"])
}

fn scenario_slow_replica_disk() -> Said {
    let c = ClusterProcs::start_wrapped(
        3,
        &[],
        // The engine's fail point (strace's own CPU, on a machine this
        // busy with three nodes, would be a second cause).
        Some(Box::new(|i| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
            if i == 1 {
                c.env("STRATA_TEST_FSYNC_DELAY_MS", "3");
            }
            c
        })),
    );
    // Every write waits for all three replicas (`--ack 3`): at a majority
    // of three the two other disks answer first and the machine's CPU is
    // the limit (7,500-8,250 req/s with +3 or +8 ms; docs/benchmarks.md).
    // A plain client (`--client direct`), as for the pausing node.
    sweep(
        &c.urls.join(","),
        None,
        &["--start-rate", "500", "--client", "direct", "--ack", "3"],
    )
}

/// A network namespace joined to this one by a veth pair: the node and a
/// delaying relay (`strata cluster delay`) run inside it, the generator
/// outside; deleted when dropped.
struct Namespace {
    name: String,
    inside: Vec<Child>,
}

impl Namespace {
    /// `n` picks the addresses 10.77.n.1 (outside) and 10.77.n.2 (inside).
    fn new(n: u8) -> Namespace {
        need("ip");
        let name = format!("strata-diag-{n}-{}", std::process::id());
        let host = format!("sd{n}h{}", std::process::id() % 10000);
        let peer = format!("sd{n}n{}", std::process::id() % 10000);
        let ip = |args: &[&str]| {
            let o = Command::new("ip").args(args).output().expect("run ip");
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        ip(&["netns", "add", &name]);
        let ns = Namespace {
            name: name.clone(),
            inside: Vec::new(),
        };
        ip(&["link", "add", &host, "type", "veth", "peer", "name", &peer]);
        ip(&["link", "set", &peer, "netns", &name]);
        ip(&["addr", "add", &format!("10.77.{n}.1/24"), "dev", &host]);
        ip(&["link", "set", &host, "up"]);
        let inside = |args: &[&str]| {
            let mut a = vec!["netns", "exec", &name, "ip"];
            a.extend(args);
            ip(&a);
        };
        inside(&["addr", "add", &format!("10.77.{n}.2/24"), "dev", &peer]);
        inside(&["link", "set", &peer, "up"]);
        inside(&["link", "set", "lo", "up"]);
        ns
    }

    /// A command run inside the namespace.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        for c in &mut self.inside {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Deleting the namespace takes its end of the veth pair, and the
        // pair with it.
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .status();
    }
}

fn scenario_delayed_network() -> Said {
    let ns = Namespace::new(7);
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start_with(ns.command(env!("CARGO_BIN_EXE_strata")), data.path(), &[]);
    let mut ns = ns;
    let mut relay = ns
        .command(env!("CARGO_BIN_EXE_strata"))
        .args(["cluster", "delay", "--listen", "10.77.7.2:8000", "--to"])
        .arg(node.addr.to_string())
        .args(["--delay", "2.5ms"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the delaying relay");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(relay.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.starts_with("relaying"), "{line}");
    ns.inside.push(relay);
    // 16 connections, as a client with a pool of 16 would hold.
    sweep(
        "http://10.77.7.2:8000",
        None,
        &[
            "--start-rate",
            "500",
            "--connections",
            "16",
            "--max-connections",
            "16",
        ],
    )
}

fn scenario_write_stalls() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = NodeProc::start(
        data.path(),
        &["--memtable-bytes", "1048576", "--durability", "none"],
    );
    sweep(
        &url(&n),
        None,
        &[
            "--start-rate",
            "250",
            "--value-size",
            "65536",
            "--keys",
            "2000",
        ],
    )
}

/// In the full suite only: in the debug build of the README's test
/// command, with the generator and strace on the same two cores, it named
/// a pause (a scrape that waited in the node's queue, since mended in the
/// verdict) and the machine's CPU (85 % busy at 1,938 req/s, crossing with
/// the fsync) in two of three runs on 2026-11-27; the release build named
/// the fsync (docs/benchmarks.md, "Verdicts from evidence").
#[test]
#[ignore = "part of the full suite: cargo test --release -p strata --test diagnosis -- --ignored"]
fn a_slow_fsync_is_named() {
    let _one = one_at_a_time();
    let said = scenario_slow_fsync();
    expect("slow fsync", &said, "fsync", Some("node-1"));
}

#[test]
fn a_tiny_admission_limit_is_named() {
    let _one = one_at_a_time();
    let said = scenario_tiny_admission();
    expect("tiny admission limit", &said, "admission", Some("node-1"));
}

/// In the full suite only: in the debug build of the README's test
/// command it named another cause once in five runs (not yet understood;
/// the release suite named the pause every time).
#[test]
#[ignore = "part of the full suite: cargo test --release -p strata --test diagnosis -- --ignored"]
fn a_node_that_pauses_is_named() {
    let _one = one_at_a_time();
    let said = scenario_pausing_node();
    expect("a node that pauses", &said, "pause", Some("node-3"));
}

#[test]
fn a_starved_generator_is_named() {
    let _one = one_at_a_time();
    let said = scenario_starved_generator();
    expect("a starved generator", &said, "generator", None);
}

#[test]
#[ignore = "part of the full suite: cargo test --release -p strata --test diagnosis -- --ignored"]
fn a_cpu_hog_on_the_node_is_named() {
    let _one = one_at_a_time();
    let said = scenario_cpu_hog_on_the_node();
    expect("a CPU hog on the node's core", &said, "cpu", Some("node-1"));
}

#[test]
#[ignore = "part of the full suite: cargo test --release -p strata --test diagnosis -- --ignored"]
fn a_slow_replica_disk_is_named() {
    let _one = one_at_a_time();
    let said = scenario_slow_replica_disk();
    expect("a slow replica disk", &said, "fsync", Some("node-2"));
}

#[test]
#[ignore = "part of the full suite: cargo test --release -p strata --test diagnosis -- --ignored"]
fn write_stalls_are_named() {
    let _one = one_at_a_time();
    let said = scenario_write_stalls();
    expect("write stalls", &said, "stalls|io", Some("node-1"));
}

#[test]
#[ignore = "part of the full suite: cargo test --release -p strata --test diagnosis -- --ignored"]
fn a_delayed_network_path_is_named() {
    let _one = one_at_a_time();
    let said = scenario_delayed_network();
    expect("a delayed network path", &said, "network", Some("node-1"));
}

/// The whole suite in a row, with its table (the benchmark).
#[test]
#[ignore = "the benchmark: cargo test --release -p strata --test diagnosis -- --ignored --nocapture full_suite"]
fn full_suite() {
    type Scenario = (
        &'static str,
        fn() -> Said,
        &'static str,
        Option<&'static str>,
    );
    let all: [Scenario; 8] = [
        (
            "slow fsync (+3 ms)",
            scenario_slow_fsync,
            "fsync",
            Some("node-1"),
        ),
        (
            "tiny admission limit (1)",
            scenario_tiny_admission,
            "admission",
            Some("node-1"),
        ),
        (
            "one node of 3 paused 150 ms/s",
            scenario_pausing_node,
            "pause",
            Some("node-3"),
        ),
        (
            "generator's core shared with 2 busy loops",
            scenario_starved_generator,
            "generator",
            None,
        ),
        (
            "node's core shared with a busy loop",
            scenario_cpu_hog_on_the_node,
            "cpu",
            Some("node-1"),
        ),
        (
            "one replica of 3 with a slow fsync, ack=3",
            scenario_slow_replica_disk,
            "fsync",
            Some("node-2"),
        ),
        (
            "64 KiB PUTs into 1 MiB memtables",
            scenario_write_stalls,
            "stalls|io",
            Some("node-1"),
        ),
        (
            "5 ms more per round trip (a relay in a network namespace), 16 connections",
            scenario_delayed_network,
            "network",
            Some("node-1"),
        ),
    ];
    let _one = one_at_a_time();
    let mut rows = Vec::new();
    let mut right = 0;
    for (name, run, cause, node) in all {
        let said = run();
        let ok = cause.split('|').any(|c| c == said.cause)
            && (node.is_none() || said.node.as_deref() == node);
        right += ok as usize;
        rows.push(format!(
            "| {name} | {cause}{} | {}{} | {} | {} |",
            node.map(|n| format!(" ({n})")).unwrap_or_default(),
            said.cause,
            said.node
                .as_ref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default(),
            said.breaking_point
                .map(|b| format!("{b:.0}"))
                .unwrap_or_else(|| "-".into()),
            if ok { "right" } else { "wrong" }
        ));
        eprintln!("{name}: {}", said.verdict);
    }
    println!("| injected | expected | the verdict named | breaking point req/s | |");
    println!("| --- | --- | --- | ---: | --- |");
    for r in &rows {
        println!("{r}");
    }
    println!("{right} of {} right", rows.len());
}
