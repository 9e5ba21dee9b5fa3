//! The diagnosis suite (issue 27): each scenario starts real processes
//! with one bottleneck put there on purpose by a real mechanism, sweeps
//! them with `strata sweep`, and asserts the cause its verdict names (the
//! report's `cause` and `cause_node`):
//!
//! | scenario | mechanism | the verdict must name |
//! | --- | --- | --- |
//! | slow fsync | `strace --seccomp-bpf -e inject=fdatasync:delay_exit=3000` on the node | `fsync` of node-1 |
//! | tiny admission limit | `--max-in-service 1`, reads of preloaded keys | `admission` |
//! | a node that pauses | SIGSTOP/SIGCONT of node 3 of 3, 150 ms every second | `pause` of node-3 |
//! | a starved generator | two busy loops (`yes`) pinned to the generator's core | `generator` |
//! | a CPU hog on the node's core | the node and a busy loop pinned to one core | `cpu` of node-1 |
//! | a slow replica disk | node 2 of 3 with the engine's fail point: each WAL fsync 3 ms longer | `fsync` of node-2 |
//! | write stalls | 64 KiB PUTs into 1 MiB memtables: flushes and compactions taking the disk | `stalls` or `io` of node-1 |
//! | a delayed network path | the node in a network namespace behind `strata cluster delay` (2.5 ms each way), 16 connections | `network` to node-1 |
//! | a throttled disk | the node in a blkio cgroup held to 300 writes/s | `fsync` or `io` of node-1 |
//! | a neighbour's fsyncs | a process writing 4 KiB and fdatasyncing in a loop, same disk | `fsync` or `io` of node-1 |
//! | one busy thread | the engine's fail point: the applier spends 100 µs on a CPU per write, the node may use both cores | `thread` of node-1 |
//! | a core shared at moderate load | the node pinned to core 1 beside a loop busy 5 ms of every 10 | `cpu` of node-1 |
//! | packet loss | 2 % of the packets into the node's namespace dropped by nftables | `network` to node-1 |
//!
//! Every scenario runs with the settings a user would pick (p99 <= 10 ms,
//! the default `ack` and client); where the injected cause is not the
//! limit the table says so rather than the scenario being reshaped. The
//! admission limit, the starved generator and the throttled disk run with
//! the tests (a run whose verdict blamed the generator or the machine for
//! another scenario's break, or could not tell with one of them the
//! largest cause it saw, is run again, up to three runs: the host's noise
//! broke it first, `scenario_names`); all of them, each twice, with the table and its score
//! asserted (9 of 10 right, at most 1 of 10 "cannot tell"), run with
//! `scripts/diagnosis.sh` (docs/benchmarks.md, "Diagnosis"). A scenario
//! needs `strace`, `taskset`, `python3`, `ip`, `nft` as it says; without
//! them it fails, it does not pass. The throttled disk needs root, cgroup
//! v1's blkio and a whole disk: where one is missing that test says "not
//! checked" (`support::require`; a failure under `STRATA_REQUIRE_TOOLS=1`),
//! and the suite, a benchmark, fails. Memory pressure is not
//! among them: this machine's cgroups are v1, without `memory.high`, and
//! a hard limit kills the node rather than slowing it.

#[path = "diagnosis/mechanisms.rs"]
mod mechanisms;
mod support;

use mechanisms::*;

use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
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
    // STRATA_DIAG_KEEP=1 keeps each sweep's report and says where.
    if std::env::var_os("STRATA_DIAG_KEEP").is_some() {
        eprintln!("report kept in {}", out.keep().display());
    }
    let text = String::from_utf8_lossy(&o.stdout);
    // Exit 3: no rate met the objective. The sweep still says why (a
    // starved generator may miss it at every rate), and the cause is what
    // is judged.
    assert!(
        o.status.success() || o.status.code() == Some(3),
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
    sweep(&url(&n.0), None, &["--start-rate", "500"])
}

/// Reads of preloaded keys: the admission limit is the scenario, and a
/// read waits on no fsync (with PUTs, a shared disk whose own fsync p99
/// is above the SLO, as this machine's sometimes is, fails every rate
/// before admission matters, and the verdict rightly names the disk).
fn scenario_tiny_admission() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = NodeProc::start(data.path(), &["--max-in-service", "1"]);
    sweep(
        &url(&n),
        None,
        &[
            "--start-rate",
            "1000",
            "--workload",
            "get",
            "--keys",
            "2000",
            "--preload",
        ],
    )
}

fn scenario_pausing_node() -> Said {
    let c = ClusterProcs::start(3, &[]);
    let (done, h) = pauser(c.node(2).child.id(), Duration::from_millis(150));
    let said = sweep(&c.urls.join(","), None, &["--start-rate", "250"]);
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
    sweep(&c.urls.join(","), None, &["--start-rate", "500"])
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

fn scenario_throttled_disk() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = NodeProc::start(data.path(), &[]);
    // The kernel's I/O controller: 300 writes a second for the node.
    let _g = Cgroup::new(
        "blkio",
        n.child.id(),
        &[(
            "blkio.throttle.write_iops_device",
            format!("{} 300", device_of(data.path())),
        )],
    );
    sweep(&url(&n), None, &["--start-rate", "100"])
}

fn scenario_fsyncing_neighbour() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = NodeProc::start(data.path(), &[]);
    let _n = fsyncing_neighbour(data.path());
    sweep(&url(&n), None, &["--start-rate", "500"])
}

fn scenario_one_busy_thread() -> Said {
    // The engine's fail point: the thread that commits writes (the
    // applier) spends 100 us on a CPU per write, as an expensive step on
    // one thread would, while the node may run on both cores.
    let data = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.env("STRATA_TEST_WRITE_SPIN_US", "100");
    let n = NodeProc::start_with(cmd, data.path(), &[]);
    sweep(&url(&n), None, &["--start-rate", "1000"])
}

fn scenario_shared_core_moderate() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = Wrapped(NodeProc::start_with(
        pinned("1"),
        data.path(),
        &["--durability", "none"],
    ));
    let _hog = half_busy("1");
    sweep(&url(&n.0), Some("0"), &["--start-rate", "1000"])
}

fn scenario_packet_loss() -> Said {
    need("nft");
    let ns = Namespace::new(8);
    let data = tempfile::tempdir().unwrap();
    // Listening on the namespace's own address, open to the generator
    // outside it (a lab network, not the internet).
    let node = NodeProc::start_with(
        ns.command(env!("CARGO_BIN_EXE_strata")),
        data.path(),
        &["--listen", "10.77.8.2:0", "--client-auth", "open"],
    );
    let port = node.addr.port().to_string();
    // 2 % of the packets to the node dropped on its way in (TCP resends
    // them after its retransmission timeout).
    let rules = format!(
        "add table inet loss\nadd chain inet loss in {{ type filter hook input priority 0; }}\nadd rule inet loss in tcp dport {port} numgen random mod 100 < 2 drop\n"
    );
    let mut nft = ns.command("nft");
    nft.args(["-f", "-"]).stdin(Stdio::piped());
    let mut c = nft.spawn().expect("run nft");
    std::io::Write::write_all(c.stdin.as_mut().unwrap(), rules.as_bytes()).unwrap();
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success(), "nft refused the rules");
    sweep(
        &format!("http://{}", node.addr),
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

/// Causes that are the lab's or the host's, not the target's.
const NOT_THE_TARGET: [&str; 2] = ["generator", "machine"];

/// Runs a scenario and judges it; a run whose verdict put the break on the
/// generator or the machine, when the scenario injected something else,
/// is run again, up to `RUNS` in all, and the last is judged. Such a
/// verdict says the host's noise (a virtual machine's wake-up latency, a
/// neighbour's stall) failed a trial before the injected cause did: the
/// scenario did not happen, and its verdict is not evidence either way.
/// A verdict naming another cause of the target is judged as it is.
fn scenario_names(name: &str, run: fn() -> Said, cause: &str, node: Option<&str>) {
    let injected_is_lab = cause.split('|').any(|c| NOT_THE_TARGET.contains(&c));
    let mut said = run();
    for _ in 1..RUNS {
        if injected_is_lab || !host_broke_it(&said) {
            break;
        }
        eprintln!(
            "{name}: the verdict named {} (the host's, not the scenario's), running it again:\n  {}",
            said.cause, said.verdict
        );
        said = run();
    }
    expect(name, &said, cause, node);
}

/// Whether a verdict put the break on the host: it named the generator
/// or the machine, or it could not tell and the largest cause of the
/// slowest requests' time it saw was one of them (the first of "Their
/// time:"; one run: the generator's lateness 23 %, the node's admission
/// 8 %, 69 % unexplained, with the generator's timer late for 42 % of its
/// sends).
fn host_broke_it(said: &Said) -> bool {
    if NOT_THE_TARGET.contains(&said.cause.as_str()) {
        return true;
    }
    let largest = said
        .verdict
        .split_once("Their time: ")
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .unwrap_or("");
    said.cause == "unknown" && NOT_THE_TARGET.contains(&largest)
}

/// Runs of a scenario the host's noise may take before one is judged (a
/// noisy minute on a shared virtual machine fails two runs in a row: CI
/// saw the generator's timer late for 11 % of sends at 125 req/s).
const RUNS: usize = 3;

#[test]
fn a_tiny_admission_limit_is_named() {
    let _one = one_at_a_time();
    scenario_names(
        "tiny admission limit",
        scenario_tiny_admission,
        "admission",
        Some("node-1"),
    );
}

#[test]
fn a_starved_generator_is_named() {
    let _one = one_at_a_time();
    scenario_names(
        "a starved generator",
        scenario_starved_generator,
        "generator",
        None,
    );
}

/// A disk the kernel's I/O controller holds to 300 writes a second:
/// seldom busy by the node's own reading, every slow request waiting for
/// its fsync (the "slow-but-idle disk").
#[test]
fn a_throttled_disk_is_named() {
    // The throttle is a cgroup v1 blkio rule (root's to write) on the
    // whole disk that holds the node's data directory.
    let tmp = std::env::temp_dir();
    if !support::require("root, to put the node in a cgroup", support::is_root())
        || !support::require("cgroup v1's blkio controller", support::cgroup_v1("blkio"))
        || !support::require(
            &format!("a whole disk under {} to throttle", tmp.display()),
            support::whole_disk(&tmp).is_some(),
        )
    {
        return;
    }
    let _one = one_at_a_time();
    scenario_names(
        "a throttled disk",
        scenario_throttled_disk,
        "fsync|io",
        Some("node-1"),
    );
}

/// A scenario: its name, how it runs, the cause and node the verdict must
/// name, and the same processes with nothing injected (a control), when
/// the injected cause may not be the limit at all.
type Scenario = (
    &'static str,
    fn() -> Said,
    &'static str,
    Option<&'static str>,
    Option<Control>,
);

/// A control: its name, how it runs, the cause it must name.
type Control = (&'static str, fn() -> Said, &'static str);

/// Three nodes, nothing injected: on this machine their limit is the
/// machine's CPU, shared with the generator.
fn control_three_nodes() -> Said {
    let c = ClusterProcs::start(3, &[]);
    sweep(&c.urls.join(","), None, &["--start-rate", "250"])
}

/// One node, nothing injected (the generator and the node share the cores).
fn control_one_node() -> Said {
    let data = tempfile::tempdir().unwrap();
    let n = NodeProc::start(data.path(), &[]);
    sweep(&url(&n), None, &["--start-rate", "500"])
}

const THREE: Option<Control> = Some(("three nodes, nothing injected", control_three_nodes, "cpu"));
const ONE: Option<Control> = Some(("one node, nothing injected", control_one_node, "cpu|fsync"));

/// A scenario whose breaking point is at least this share of its
/// control's broke where the control did: the injected cause was not the
/// limit (the same sweep run twice on this machine, generator and node on
/// shared cores, differed by up to 1.44×: docs/benchmarks.md, "The same
/// sweep, twice"), and the verdict must name the control's cause.
const NOT_THE_LIMIT: f64 = 0.7;

/// Every scenario: what is put there, how, and what the verdict must name.
const ALL: [Scenario; 13] = [
    (
        "slow fsync (+3 ms, strace)",
        scenario_slow_fsync,
        "fsync",
        Some("node-1"),
        None,
    ),
    (
        "tiny admission limit (1)",
        scenario_tiny_admission,
        "admission",
        Some("node-1"),
        None,
    ),
    (
        "one node of 3 paused 150 ms/s",
        scenario_pausing_node,
        "pause",
        Some("node-3"),
        THREE,
    ),
    (
        "generator's core shared with 2 busy loops",
        scenario_starved_generator,
        "generator",
        None,
        None,
    ),
    (
        "node's core shared with a busy loop",
        scenario_cpu_hog_on_the_node,
        "cpu",
        Some("node-1"),
        None,
    ),
    (
        "node's core shared with a neighbour busy half the time",
        scenario_shared_core_moderate,
        "cpu",
        Some("node-1"),
        None,
    ),
    (
        "one replica of 3 with a slow fsync (+3 ms, fail point)",
        scenario_slow_replica_disk,
        "fsync",
        Some("node-2"),
        THREE,
    ),
    (
        "64 KiB PUTs into 1 MiB memtables",
        scenario_write_stalls,
        "stalls|io",
        Some("node-1"),
        None,
    ),
    (
        "disk held to 300 writes/s by the kernel's I/O controller",
        scenario_throttled_disk,
        "fsync|io",
        Some("node-1"),
        ONE,
    ),
    (
        "a neighbour fsyncing on the same disk",
        scenario_fsyncing_neighbour,
        "fsync|io",
        Some("node-1"),
        ONE,
    ),
    (
        "the applier spending 100 us per write on a CPU (fail point), 2 cores",
        scenario_one_busy_thread,
        "thread",
        Some("node-1"),
        None,
    ),
    (
        "5 ms more per round trip (a relay in a network namespace)",
        scenario_delayed_network,
        "network",
        Some("node-1"),
        None,
    ),
    (
        "2% of packets to the node dropped (nftables)",
        scenario_packet_loss,
        "network",
        Some("node-1"),
        None,
    ),
];

/// The whole suite, each scenario run `STRATA_DIAG_RUNS` times (2 unless
/// set; `STRATA_DIAG_ONLY` picks scenarios whose name contains it), with
/// its table, asserting the score: at least 9 of 10 verdicts right and
/// at most 1 of 10 "cannot tell". The benchmark, not a test of the suite:
/// `scripts/diagnosis.sh` (docs/benchmarks.md, "Diagnosis").
#[test]
#[ignore = "the benchmark: scripts/diagnosis.sh (cargo test --release -p strata --test diagnosis -- --ignored --nocapture full_suite)"]
fn full_suite() {
    let runs: usize = std::env::var("STRATA_DIAG_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let only = std::env::var("STRATA_DIAG_ONLY").unwrap_or_default();
    let _one = one_at_a_time();
    let mut rows = Vec::new();
    let (mut right, mut unknown, mut total) = (0, 0, 0);
    // Each control once, when a scenario needs it: (name, said).
    let mut controls: Vec<(&str, Said)> = Vec::new();
    let mut judge = |name: &str, s: &Said, cause: &str, node: Option<&str>| {
        eprintln!(
            "{name}: {} {:?} at {:?}\n  {}",
            s.cause, s.node, s.breaking_point, s.verdict
        );
        let ok =
            cause.split('|').any(|c| c == s.cause) && (node.is_none() || s.node.as_deref() == node);
        right += ok as usize;
        unknown += (s.cause == "unknown") as usize;
        total += 1;
        let cell = format!(
            "{} {} ({})",
            s.cause,
            s.node.as_deref().unwrap_or(""),
            s.breaking_point
                .map(|b| format!("{b:.0}/s"))
                .unwrap_or_else(|| "-".into())
        );
        if ok {
            cell
        } else {
            format!("**{cell}** wrong")
        }
    };
    for (name, run, cause, node, control) in ALL.iter().filter(|s| s.0.contains(&only)) {
        let mut said = Vec::new();
        for _ in 0..runs {
            let s = run();
            // Measured against its control: where it broke as the control
            // did, the injected cause was not the limit.
            let mut expected = (*cause, *node, String::new());
            if let Some((cname, crun, ccause)) = control {
                if !controls.iter().any(|(n, _)| n == cname) {
                    let c = crun();
                    let cell = judge(cname, &c, ccause, None);
                    rows.push(format!(
                        "| {cname} (control, run once) | {ccause} | {cell} |{}",
                        " |".repeat(runs - 1)
                    ));
                    controls.push((cname, c));
                }
                let c = &controls.iter().find(|(n, _)| n == cname).unwrap().1;
                if let (Some(b), Some(cb)) = (s.breaking_point, c.breaking_point) {
                    if b >= NOT_THE_LIMIT * cb {
                        expected = (*ccause, None, format!("; not the limit: broke at {b:.0}/s, the control at {cb:.0}/s, so the control's cause"));
                    }
                }
            }
            let cell = judge(name, &s, expected.0, expected.1);
            said.push(cell + &expected.2);
        }
        rows.push(format!(
            "| {name} | {cause}{} | {} |",
            node.map(|n| format!(" ({n})")).unwrap_or_default(),
            said.join(" | ")
        ));
    }
    println!(
        "\n| injected | expected | {} |",
        (1..=runs)
            .map(|i| format!("run {i} (breaking point)"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("| --- | --- |{}", " --- |".repeat(runs));
    for r in &rows {
        println!("{r}");
    }
    println!("{right} of {total} right, {unknown} \"cannot tell\"");
    assert!(
        10 * right >= 9 * total,
        "{right} of {total} verdicts right (goal: 9 of 10)"
    );
    assert!(
        10 * unknown <= total,
        "{unknown} of {total} said cannot tell (goal: at most 1 of 10)"
    );
}
