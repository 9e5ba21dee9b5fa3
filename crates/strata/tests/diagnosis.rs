//! The diagnosis recorder (issue 61): each scenario starts real processes
//! with a cause put there on purpose by a real mechanism, sweeps them with
//! `strata sweep`, and adds the sweep's evidence (`report.json.zst`) and
//! its label (what was put there, how, what the verdict must name) to the
//! corpus, `corpus/sweeps/`, beside a control: the same processes with
//! nothing injected, swept right before or after it. The verdict is then
//! judged on the corpus, deterministically, by `crates/strata/tests/corpus.rs`
//! (`strata report corpus corpus/sweeps` prints the table). Nothing here
//! asserts a verdict: a live run is one sample of the host's weather. It
//! asserts that the sweep ran and that `strata report judge` gives, from
//! the recorded directory alone, the verdict the sweep printed.
//!
//! | scenario | mechanism | the verdict must name |
//! | --- | --- | --- |
//! | slow fsync | `strace --seccomp-bpf -e inject=fdatasync:delay_exit=3000` on the node | `fsync` of node-1 |
//! | slow fsync, pinned | the same, the node on core 1 and the generator on core 0 (a machine with idle cores) | `fsync` of node-1 |
//! | tiny admission limit | `--max-in-service 1`, reads of preloaded keys | `admission` of node-1 |
//! | a node that pauses | SIGSTOP/SIGCONT of node 3 of 3, 150 ms every second | `pause` of node-3 |
//! | a starved generator | two busy loops (`yes`) pinned to the generator's core | `generator` |
//! | a CPU hog on the node's core | the node and a busy loop pinned to one core | `cpu` of node-1 |
//! | a core shared at moderate load | the node pinned to core 1 beside a loop busy 5 ms of every 10 | `cpu` of node-1 |
//! | a garbage-collecting neighbour | a process on the node's core that fills and frees 256 MiB twice a second | `cpu` of node-1 |
//! | a slow replica disk | node 2 of 3 with the engine's fail point: each WAL fsync 3 ms longer | `fsync` of node-2 |
//! | a slow replica at `ack=3` | the same, every write waiting for all three | `fsync` of node-2 |
//! | write stalls | 64 KiB PUTs into 1 MiB memtables: flushes and compactions taking the disk | `stalls` or `io` of node-1 |
//! | a throttled disk | the node in a blkio cgroup held to 300 writes/s | `fsync` or `io` of node-1 |
//! | a neighbour's fsyncs | a process writing 4 KiB and fdatasyncing in a loop, same disk | `fsync` or `io` of node-1 |
//! | one busy thread | the engine's fail point: the applier spends 100 µs on a CPU per write | `thread` of node-1 |
//! | a held lock | the engine's fail point: a thread takes the WAL's lock 10 ms after it let go and holds it 8 ms, asleep | `lock` of node-1 |
//! | a delayed network path | the node in a network namespace behind `strata cluster delay` (2.5 ms each way), 16 connections | `network` to node-1 |
//! | packet loss | 2 % of the packets into the node's namespace dropped by nftables | `network` to node-1 |
//! | two at once: slow fsync and a busy neighbour | strace's delayed fdatasync, and a busy loop on the node's core | `fsync` and `cpu` of node-1 |
//! | two at once: a paused node and a throttled generator | node 3 of 3 paused 150 ms/s, a busy loop on the generator's core | `pause` of node-3 and `generator` |
//!
//! Every scenario runs with the settings a user would pick (p99 <= 10 ms,
//! the default `ack` and client). Its control is the same topology (the
//! same pinning, namespace, relay or cluster) with nothing injected. Run
//! it with `scripts/record-corpus.sh` (root, `strace`, `taskset`,
//! `python3`, `ip`, `nft`; the throttled disk needs cgroup v1's blkio and
//! a whole disk and is left out where they are missing, saying so).

#[path = "diagnosis/mechanisms.rs"]
mod mechanisms;
mod support;

use mechanisms::*;

use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use support::{ClusterProcs, NodeProc};

/// What a sweep said, and its report directory (removed when dropped).
#[derive(Debug)]
struct Said {
    cause: String,
    node: Option<String>,
    breaking_point: Option<f64>,
    verdict: String,
    dir: tempfile::TempDir,
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
        dir: out,
    }
}

/// One node, through `cmd`, with `extra` flags.
fn one_node(cmd: Command, extra: &[&str]) -> (tempfile::TempDir, Wrapped) {
    let data = tempfile::tempdir().unwrap();
    let n = Wrapped(NodeProc::start_with(cmd, data.path(), extra));
    (data, n)
}

fn plain() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

fn slow_fsync_node(inject: bool) -> Said {
    let (_d, n) = one_node(if inject { slow_fsync(3) } else { plain() }, &[]);
    sweep(&url(&n.0), None, &["--start-rate", "500"])
}

/// The node on core 1 (through strace when injected), the generator on
/// core 0: neither shares a core with the other.
fn slow_fsync_pinned(inject: bool) -> Said {
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", "1"]);
    if inject {
        cmd.arg("strace").args(strace_args(3));
    }
    cmd.arg(env!("CARGO_BIN_EXE_strata"));
    let (_d, n) = one_node(cmd, &[]);
    sweep(&url(&n.0), Some("0"), &["--start-rate", "500"])
}

/// Reads of preloaded keys: the admission limit is the scenario, and a
/// read waits on no fsync.
fn tiny_admission(inject: bool) -> Said {
    let limit: &[&str] = if inject {
        &["--max-in-service", "1"]
    } else {
        &[]
    };
    let (_d, n) = one_node(plain(), limit);
    sweep(
        &url(&n.0),
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

fn pausing_node(inject: bool) -> Said {
    let c = ClusterProcs::start(3, &[]);
    let p = inject.then(|| pauser(c.node(2).child.id(), Duration::from_millis(150)));
    let said = sweep(&c.urls.join(","), None, &["--start-rate", "250"]);
    if let Some((done, h)) = p {
        done.store(true, Ordering::Relaxed);
        h.join().unwrap();
    }
    said
}

fn starved_generator(inject: bool) -> Said {
    let (_d, n) = one_node(pinned("1"), &["--durability", "none"]);
    let _hogs = inject.then(|| Hogs::on("0", 2));
    sweep(&url(&n.0), Some("0"), &["--start-rate", "1000"])
}

fn cpu_hog_on_the_node(inject: bool) -> Said {
    let (_d, n) = one_node(
        pinned("1"),
        &["--durability", "none", "--worker-threads", "1"],
    );
    let _hogs = inject.then(|| Hogs::on("1", 1));
    sweep(&url(&n.0), Some("0"), &["--start-rate", "2000"])
}

fn shared_core_moderate(inject: bool) -> Said {
    let (_d, n) = one_node(pinned("1"), &["--durability", "none"]);
    let _hog = inject.then(|| half_busy("1"));
    sweep(&url(&n.0), Some("0"), &["--start-rate", "1000"])
}

fn gc_neighbour(inject: bool) -> Said {
    let (_d, n) = one_node(pinned("1"), &["--durability", "none"]);
    let _gc = inject.then(|| collecting_neighbour("1"));
    sweep(&url(&n.0), Some("0"), &["--start-rate", "1000"])
}

/// Three nodes, node 2 with the engine's fail point when injected (each
/// WAL fsync 3 ms longer; strace's own CPU, on a machine this busy with
/// three nodes, would be a second cause).
fn slow_replica(inject: bool, extra: &[&str]) -> Said {
    let c = ClusterProcs::start_wrapped(
        3,
        &[],
        Some(Box::new(move |i| {
            let mut c = plain();
            if inject && i == 1 {
                c.env("STRATA_TEST_FSYNC_DELAY_MS", "3");
            }
            c
        })),
    );
    let mut args = vec!["--start-rate", "500"];
    args.extend(extra);
    sweep(&c.urls.join(","), None, &args)
}

fn slow_replica_disk(inject: bool) -> Said {
    slow_replica(inject, &[])
}

fn slow_replica_ack3(inject: bool) -> Said {
    slow_replica(inject, &["--ack", "3"])
}

fn write_stalls(inject: bool) -> Said {
    let memtable: &[&str] = if inject {
        &["--memtable-bytes", "1048576", "--durability", "none"]
    } else {
        &["--durability", "none"]
    };
    let (_d, n) = one_node(plain(), memtable);
    sweep(
        &url(&n.0),
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

/// Whether this machine can throttle a disk (root, cgroup v1's blkio, a
/// whole disk under the temporary directory).
fn can_throttle() -> bool {
    let tmp = std::env::temp_dir();
    support::is_root() && support::cgroup_v1("blkio") && support::whole_disk(&tmp).is_some()
}

fn throttled_disk(inject: bool) -> Said {
    let (d, n) = one_node(plain(), &[]);
    // The kernel's I/O controller: 300 writes a second for the node.
    let _g = inject.then(|| {
        Cgroup::new(
            "blkio",
            n.0.child.id(),
            &[(
                "blkio.throttle.write_iops_device",
                format!("{} 300", device_of(d.path())),
            )],
        )
    });
    sweep(&url(&n.0), None, &["--start-rate", "100"])
}

fn fsyncing_neighbour_disk(inject: bool) -> Said {
    let (d, n) = one_node(plain(), &[]);
    let _n = inject.then(|| fsyncing_neighbour(d.path()));
    sweep(&url(&n.0), None, &["--start-rate", "500"])
}

/// The engine's fail point: the thread that commits writes (the applier)
/// spends 100 us on a CPU per write, while the node may run on both
/// cores.
fn one_busy_thread(inject: bool) -> Said {
    let mut cmd = plain();
    if inject {
        cmd.env("STRATA_TEST_WRITE_SPIN_US", "100");
    }
    let (_d, n) = one_node(cmd, &[]);
    sweep(&url(&n.0), None, &["--start-rate", "1000"])
}

/// The engine's fail point: a thread of its own takes the WAL's lock
/// 10 ms after it let go and holds it 8 ms, asleep, while the writes wait for it.
fn held_lock(inject: bool) -> Said {
    let mut cmd = plain();
    if inject {
        cmd.env("STRATA_TEST_LOCK_HOLD_MS", "8");
    }
    let (_d, n) = one_node(cmd, &[]);
    sweep(&url(&n.0), None, &["--start-rate", "500"])
}

/// The node in a namespace behind the delaying relay: 2.5 ms each way
/// when injected, none in the control (the same relay).
fn delayed_network(inject: bool) -> Said {
    let ns = Namespace::new(7);
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start_with(ns.command(env!("CARGO_BIN_EXE_strata")), data.path(), &[]);
    let mut ns = ns;
    let mut relay = ns
        .command(env!("CARGO_BIN_EXE_strata"))
        .args(["cluster", "delay", "--listen", "10.77.7.2:8000", "--to"])
        .arg(node.addr.to_string())
        .args(["--delay", if inject { "2.5ms" } else { "0ms" }])
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

fn packet_loss(inject: bool) -> Said {
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
    if inject {
        let port = node.addr.port().to_string();
        // 2 % of the packets to the node dropped on its way in (TCP
        // resends them after its retransmission timeout).
        let rules = format!(
            "add table inet loss\nadd chain inet loss in {{ type filter hook input priority 0; }}\nadd rule inet loss in tcp dport {port} numgen random mod 100 < 2 drop\n"
        );
        let mut nft = ns.command("nft");
        nft.args(["-f", "-"]).stdin(Stdio::piped());
        let mut c = nft.spawn().expect("run nft");
        std::io::Write::write_all(c.stdin.as_mut().unwrap(), rules.as_bytes()).unwrap();
        drop(c.stdin.take());
        assert!(c.wait().unwrap().success(), "nft refused the rules");
    }
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

/// Two at once: strace's delayed fdatasync and a busy loop, both on the
/// node's core; the generator on the other.
fn slow_fsync_and_busy_neighbour(inject: bool) -> Said {
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", "1"]);
    if inject {
        cmd.arg("strace").args(strace_args(3));
    }
    cmd.arg(env!("CARGO_BIN_EXE_strata"));
    let (_d, n) = one_node(cmd, &[]);
    let _hog = inject.then(|| Hogs::on("1", 1));
    sweep(&url(&n.0), Some("0"), &["--start-rate", "500"])
}

/// Two at once: node 3 of 3 paused 150 ms every second, and a busy loop
/// on the generator's core (core 0).
fn paused_node_and_throttled_generator(inject: bool) -> Said {
    let c = ClusterProcs::start(3, &[]);
    let p = inject.then(|| pauser(c.node(2).child.id(), Duration::from_millis(150)));
    let _hog = inject.then(|| Hogs::on("0", 1));
    let said = sweep(&c.urls.join(","), Some("0"), &["--start-rate", "250"]);
    if let Some((done, h)) = p {
        done.store(true, Ordering::Relaxed);
        h.join().unwrap();
    }
    said
}

/// A scenario: its short name, what is put there, how it runs (injected
/// or its control), the causes the verdict must name, and its control's.
struct Scenario {
    slug: &'static str,
    injected: &'static str,
    run: fn(bool) -> Said,
    causes: &'static [(&'static str, Option<&'static str>)],
    control: &'static [(&'static str, Option<&'static str>)],
    pinned: bool,
}

/// One node, nothing injected: the generator and the node share the
/// cores, and either's CPU or the disk's fsync is the limit.
const ONE: &[(&str, Option<&str>)] = &[("cpu|fsync|io", None)];
/// Three nodes and the generator on two cores, three WALs on one disk:
/// the machine's CPU, or the disk's fsync as for one node. (It was "cpu"
/// alone, a prior from runs on a fast disk; in the 13 three-node
/// controls recorded on 2026-12-02 the machine's cores were at most 66 %
/// busy at the breaking point in 11, below the 85 % any CPU limit needs,
/// while the slowest requests waited on the WALs.)
const THREE: &[(&str, Option<&str>)] = &[("cpu|fsync|io", None)];
/// The node alone on its core, the generator on the other.
const PINNED: &[(&str, Option<&str>)] = &[("cpu|generator|fsync|thread", None)];

const ALL: &[Scenario] = &[
    Scenario {
        slug: "slow-fsync-strace",
        injected: "each fdatasync 3 ms longer (strace)",
        run: slow_fsync_node,
        causes: &[("fsync", Some("node-1"))],
        control: ONE,
        pinned: false,
    },
    Scenario {
        slug: "slow-fsync-pinned",
        injected: "each fdatasync 3 ms longer (strace), node and generator on cores of their own",
        run: slow_fsync_pinned,
        causes: &[("fsync", Some("node-1"))],
        control: PINNED,
        pinned: true,
    },
    Scenario {
        slug: "tiny-admission",
        injected: "--max-in-service 1, reads of preloaded keys",
        run: tiny_admission,
        causes: &[("admission", Some("node-1"))],
        control: &[("cpu|generator", None)],
        pinned: false,
    },
    Scenario {
        slug: "paused-node",
        injected: "node 3 of 3 stopped 150 ms of every second (SIGSTOP/SIGCONT)",
        run: pausing_node,
        causes: &[("pause", Some("node-3"))],
        control: THREE,
        pinned: false,
    },
    Scenario {
        slug: "starved-generator",
        injected: "two busy loops on the generator's core",
        run: starved_generator,
        causes: &[("generator", None)],
        control: PINNED,
        pinned: true,
    },
    Scenario {
        slug: "cpu-hog-node-core",
        injected: "a busy loop on the node's core",
        run: cpu_hog_on_the_node,
        causes: &[("cpu", Some("node-1"))],
        control: PINNED,
        pinned: true,
    },
    Scenario {
        slug: "shared-core-moderate",
        injected: "a neighbour busy 5 ms of every 10 on the node's core",
        run: shared_core_moderate,
        causes: &[("cpu", Some("node-1"))],
        control: PINNED,
        pinned: true,
    },
    Scenario {
        slug: "gc-neighbour",
        injected: "a neighbour on the node's core filling and freeing 256 MiB twice a second",
        run: gc_neighbour,
        causes: &[("cpu", Some("node-1"))],
        control: PINNED,
        pinned: true,
    },
    Scenario {
        slug: "slow-replica-failpoint",
        injected: "node 2 of 3: each WAL fsync 3 ms longer (fail point)",
        run: slow_replica_disk,
        causes: &[("fsync", Some("node-2"))],
        control: THREE,
        pinned: false,
    },
    Scenario {
        slug: "slow-replica-ack3",
        injected: "node 2 of 3: each WAL fsync 3 ms longer (fail point), writes at ack=3",
        run: slow_replica_ack3,
        causes: &[("fsync", Some("node-2"))],
        control: THREE,
        pinned: false,
    },
    Scenario {
        slug: "write-stalls",
        injected: "64 KiB PUTs into 1 MiB memtables",
        run: write_stalls,
        causes: &[("stalls|io", Some("node-1"))],
        control: &[("cpu|io|stalls|fsync", None)],
        pinned: false,
    },
    Scenario {
        slug: "throttled-disk",
        injected: "the node's writes held to 300/s (blkio cgroup)",
        run: throttled_disk,
        causes: &[("fsync|io", Some("node-1"))],
        control: ONE,
        pinned: false,
    },
    Scenario {
        slug: "fsyncing-neighbour",
        injected: "a neighbour writing 4 KiB and fdatasyncing in a loop, same disk",
        run: fsyncing_neighbour_disk,
        causes: &[("fsync|io", Some("node-1"))],
        control: ONE,
        pinned: false,
    },
    Scenario {
        slug: "busy-applier-thread",
        injected: "the applier spending 100 us per write on a CPU (fail point)",
        run: one_busy_thread,
        causes: &[("thread", Some("node-1"))],
        control: ONE,
        pinned: false,
    },
    Scenario {
        slug: "held-lock",
        injected:
            "a thread of the engine holding the WAL's lock 8 ms of every 18, asleep (fail point)",
        run: held_lock,
        causes: &[("lock", Some("node-1"))],
        control: ONE,
        pinned: false,
    },
    Scenario {
        slug: "delayed-network",
        injected: "2.5 ms each way (a relay in a network namespace)",
        run: delayed_network,
        causes: &[("network", Some("node-1"))],
        control: ONE,
        pinned: false,
    },
    Scenario {
        slug: "packet-loss",
        injected: "2% of packets to the node dropped (nftables)",
        run: packet_loss,
        causes: &[("network", Some("node-1"))],
        control: ONE,
        pinned: false,
    },
    Scenario {
        slug: "two-slow-fsync-busy-neighbour",
        injected: "each fdatasync 3 ms longer (strace) and a busy loop on the node's core",
        run: slow_fsync_and_busy_neighbour,
        causes: &[("fsync", Some("node-1")), ("cpu", Some("node-1"))],
        control: PINNED,
        pinned: true,
    },
    Scenario {
        slug: "two-paused-node-throttled-generator",
        injected: "node 3 of 3 stopped 150 ms/s and a busy loop on the generator's core",
        run: paused_node_and_throttled_generator,
        causes: &[("pause", Some("node-3")), ("generator", None)],
        control: THREE,
        pinned: false,
    },
];

/// Where the corpus is: `STRATA_CORPUS`, or the repository's.
fn corpus_dir() -> std::path::PathBuf {
    std::env::var_os("STRATA_CORPUS")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/sweeps")
        })
}

/// The 1-minute load average now.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The build recording: `STRATA_RECORD_BUILD`, or `git describe`.
fn build() -> String {
    std::env::var("STRATA_RECORD_BUILD").unwrap_or_else(|_| {
        Command::new("git")
            .args(["describe", "--always", "--dirty"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    })
}

fn expected(cs: &[(&str, Option<&str>)]) -> Vec<strata_lab::experiment::corpus::Expected> {
    cs.iter()
        .map(|(c, n)| strata_lab::experiment::corpus::Expected {
            cause: c.split('|').map(str::to_string).collect(),
            node: n.map(str::to_string),
        })
        .collect()
}

/// Run one sweep of `s` (injected or its control) and add it to the
/// corpus as `name`; checks that its directory alone gives the verdict
/// it printed.
fn record_one(s: &Scenario, inject: bool, name: &str, beside: Option<&str>) {
    use strata_lab::experiment::corpus::{Label, LABEL};
    let load_before = load_average();
    let recorded_at = strata_lab::units::rfc3339(std::time::SystemTime::now());
    let said = (s.run)(inject);
    let judged = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["report", "judge", "--json"])
        .arg(said.dir.path())
        .output()
        .expect("run strata report judge");
    let j: serde_json::Value = serde_json::from_slice(&judged.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&judged.stderr)));
    assert_eq!(
        j["same_as_recorded"], true,
        "{name}: the report judged again gave another verdict: {}\nrecorded: {}",
        j["verdict"], said.verdict
    );
    let report = strata_lab::report::read_any(said.dir.path()).expect("read the report");
    let dir = corpus_dir().join(name);
    strata_lab::report::write_compressed(&dir, &report).expect("write the evidence");
    let label = Label {
        mechanism: if inject {
            s.slug.to_string()
        } else {
            format!("control-{}", s.slug)
        },
        injected: if inject {
            s.injected.to_string()
        } else {
            format!("nothing (the control of: {})", s.injected)
        },
        causes: expected(if inject { s.causes } else { s.control }),
        control: !inject,
        beside: beside.map(str::to_string),
        pinned: s.pinned,
        recorded_at,
        build: build(),
        load_before,
    };
    std::fs::write(
        dir.join(LABEL),
        serde_json::to_string_pretty(&label).unwrap() + "\n",
    )
    .unwrap();
    eprintln!(
        "{name}: {} {:?} at {:?}\n  {}",
        said.cause, said.node, said.breaking_point, said.verdict
    );
}

/// The recorder: every scenario (`STRATA_RECORD_ONLY` picks those whose
/// short name contains it), each beside its control, the control first
/// on even rounds (`STRATA_RECORD_ROUND`) and after on odd ones, added to
/// the corpus. `scripts/record-corpus.sh` runs it.
#[test]
#[ignore = "the recorder: scripts/record-corpus.sh"]
fn record() {
    let only = std::env::var("STRATA_RECORD_ONLY").unwrap_or_default();
    let round: u32 = std::env::var("STRATA_RECORD_ROUND")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for s in ALL
        .iter()
        .filter(|s| only.split(',').any(|o| s.slug.contains(o)))
    {
        if s.slug == "throttled-disk" && !can_throttle() {
            eprintln!(
                "{}: not recorded: needs root, cgroup v1's blkio and a whole disk",
                s.slug
            );
            continue;
        }
        // 2026-12-02T00:20:11Z: 20261202T002011.
        let stamp: String = strata_lab::units::rfc3339(std::time::SystemTime::now())
            .chars()
            .filter(|c| c.is_ascii_digit() || *c == 'T')
            .take(15)
            .collect();
        let injected = format!("{stamp}-{}", s.slug);
        let control = format!("{stamp}-{}-control", s.slug);
        if round.is_multiple_of(2) {
            record_one(s, false, &control, None);
            record_one(s, true, &injected, Some(&control));
        } else {
            record_one(s, true, &injected, Some(&control));
            record_one(s, false, &control, None);
        }
    }
}
