//! The `strata` binary: parses the command line and hands each subcommand to
//! the crate that owns it (`kv`: the client library's calls, printed). No
//! other logic lives here.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

mod kv;

// mimalloc: the engine allocates a skiplist node and key/value handles per
// write on one thread and frees them on the flush thread; glibc malloc spends
// more time there than the engine itself (measured in docs/benchmarks.md).
#[cfg(not(feature = "heap-profile"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// With the heap-profile feature: jemalloc, its profiler on from the start,
// one sample per 512 KiB allocated on average (2^19, jemalloc's default);
// `GET /debug/pprof/heap` dumps it. MALLOC_CONF overrides this at start.
#[cfg(feature = "heap-profile")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(feature = "heap-profile")]
#[allow(non_upper_case_globals)]
#[export_name = "malloc_conf"]
pub static malloc_conf: &[u8] = b"prof:true,prof_active:true,lg_prof_sample:19\0";

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "Strata: a distributed key-value store that knows its own limits"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// The certificate authority (a PEM file) trusted for https:// URLs:
    /// the nodes a command talks to, or a node's peers (a node reloads it
    /// on SIGHUP and when it changes) [default: the system's].
    #[arg(long, global = true, env = "STRATA_TLS_CA")]
    tls_ca: Option<PathBuf>,
    /// The bearer token the commands show the nodes they talk to
    /// (docs/security.md; `strata token`) [default: none; the lab's own
    /// local clusters get their operator token].
    #[arg(long, global = true, env = "STRATA_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A file holding the bearer token (keeps it off the command line).
    #[arg(
        long,
        global = true,
        env = "STRATA_TOKEN_FILE",
        conflicts_with = "token"
    )]
    token_file: Option<PathBuf>,
    /// The bearer token the lab reads nodes' /metrics with, when --token
    /// may not (a monitor token beside a readwrite one; docs/lab.md,
    /// "Credentials") [default: --token].
    #[arg(
        long,
        global = true,
        env = "STRATA_METRICS_TOKEN",
        hide_env_values = true
    )]
    metrics_token: Option<String>,
    /// A file holding the metrics token.
    #[arg(
        long,
        global = true,
        env = "STRATA_METRICS_TOKEN_FILE",
        conflicts_with = "metrics_token"
    )]
    metrics_token_file: Option<PathBuf>,
    /// A client certificate (PEM) the commands present to nodes that ask
    /// for one under TLS; its OU= is the role. Needs --tls-client-key.
    #[arg(
        long,
        global = true,
        env = "STRATA_TLS_CLIENT_CERT",
        requires = "tls_client_key"
    )]
    tls_client_cert: Option<PathBuf>,
    /// The private key of --tls-client-cert.
    #[arg(
        long,
        global = true,
        env = "STRATA_TLS_CLIENT_KEY",
        requires = "tls_client_cert"
    )]
    tls_client_key: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Strata's main job on embedded defaults: start a local cluster of
    /// three nodes, sweep it for its breaking point, write the report and
    /// its verdict, kill and restart a node under checked writes and say
    /// what the checker found, stop the cluster.
    Demo(strata_lab::experiment::demo::DemoArgs),
    /// Run a node: the v0 HTTP API on a local store.
    Serve(Box<strata_node::ServeArgs>),
    /// Put, get, delete a key or print a range, through the client
    /// library (failover, named writes), with the global credentials.
    Kv(kv::KvArgs),
    /// Load against a node: open loop at a constant or Poisson rate
    /// (latency from intended send times) or closed-loop clients; writes a
    /// report directory.
    Load(Box<strata_lab::experiment::trial::LoadArgs>),
    /// Find the breaking point: step the offered rate (doubling, then
    /// bisection) until a trial fails the SLO; print each trial, a verdict
    /// naming what saturated, and write a report directory.
    Sweep(Box<strata_lab::experiment::sweep::SweepArgs>),
    /// A load generator a controller reaches over HTTP (`strata sweep
    /// --workers`, `strata soak --workers`): each trial's share it is
    /// asked for, sent from the instant named, answered with its
    /// histograms for the controller to merge. Wants its own token
    /// (--worker-token-file), which every controller must show it; shows
    /// the node the global --token, if any. Runs until stopped.
    Worker(strata_lab::experiment::worker::WorkerArgs),
    /// Simulate a request pipeline in virtual time (a scenario file, or a
    /// running node's model with --from-node): the seed's probe counts and
    /// histograms, utilisation per stage, Little's law, the stage that
    /// saturates first and the predicted capacity. A cluster scenario
    /// ([cluster], scenarios/strata-cluster.toml) adds what-ifs: more
    /// nodes, ack=1, a node down.
    Sim(Box<strata_sim::SimArgs>),
    /// Predict a node's breaking point from its own measurements: short
    /// open-loop steps below its limit, each modelled by the simulator from
    /// the node's /metrics, until two predictions agree; then the highest
    /// rate that meets the SLO, found in virtual time. With several URLs
    /// (URL,URL,...), the cluster's: every node's /metrics, one more step
    /// through the first node to split coordinator from replica costs, and
    /// what-ifs (more nodes, ack=1, a node down).
    Calibrate(Box<strata_lab::experiment::calibrate::CalibrateArgs>),
    /// Reports of lab runs.
    Report {
        #[command(subcommand)]
        what: ReportCmd,
    },
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
    /// Local clusters: start one, look at one, check one.
    Cluster {
        #[command(subcommand)]
        what: ClusterCmd,
    },
    /// A long run at a share of a cluster's breaking point (a local
    /// cluster it starts, or --url): mixed load with the consistency
    /// checker's clients for --duration (1h), then every node's RSS and
    /// open files against time (slopes), the p99 per window (drift),
    /// flushes and compactions, what the checker found; a verdict, charts
    /// and soak.md. Exits non-zero if a criterion failed.
    Soak(Box<strata_lab::experiment::soak::SoakArgs>),
    /// Back up a node (every member with --all) into DIR while it serves:
    /// a checkpoint of its store (tables hard-linked, WAL tail copied)
    /// downloaded file by file, with a backup.json listing them.
    Backup(strata_ctl::backup::BackupArgs),
    /// Restore one node's backup into a new data directory (checked
    /// against its backup.json); then start `strata serve` on it.
    Restore(strata_ctl::backup::RestoreArgs),
    /// A new cluster secret (random, 32 bytes hex), printed or written to
    /// a new file only its owner reads.
    Secret {
        #[command(subcommand)]
        what: strata_ctl::secret::SecretCmd,
    },
    /// Credentials for nodes that check them: a new bearer token and its
    /// line for a tokens file, or a cluster's operator token.
    Token {
        #[command(subcommand)]
        what: strata_ctl::token::TokenCmd,
    },
    /// Long-running correctness checks.
    Stress {
        #[command(subcommand)]
        what: StressCmd,
    },
}

#[derive(Subcommand)]
enum ReportCmd {
    /// Merge HdrHistogram interval logs from several load runs (say, the
    /// pods of a Kubernetes Job) and print the combined distribution.
    Merge(strata_lab::report::hdrlog::MergeArgs),
    /// Render the panels of a Grafana dashboard (deploy/grafana/strata.json)
    /// from a Prometheus's data into one SVG, without Grafana.
    Dashboard(strata_lab::report::dashboard::DashboardArgs),
    /// A node's heap profile (GET /debug/pprof/heap, in a binary built
    /// with --features heap-profile) as a flame graph SVG and the
    /// allocation sites holding the most; with --base, only what grew.
    Heap(strata_lab::report::heap::HeapArgs),
    /// Judge a sweep's report directory again (its report.json, or a
    /// corpus sweep's report.json.zst) by this build's rules, and say
    /// whether the verdict is the one it recorded.
    Judge(strata_lab::experiment::judge::JudgeArgs),
    /// Judge every recorded sweep of a corpus (corpus/sweeps) again and
    /// print the table and the verdict's score on it.
    Corpus(strata_lab::experiment::corpus::CorpusArgs),
}

#[derive(Subcommand)]
enum BenchCmd {
    /// db_bench-style benchmark of the storage engine.
    Engine(strata_enginebench::bench::BenchArgs),
}

#[derive(Subcommand)]
enum ClusterCmd {
    /// Start a local cluster of real `strata serve` processes (a generated
    /// secret), print their URLs, stop them all on Ctrl-C or SIGTERM.
    Up(strata_lab::nemesis::up::UpArgs),
    /// Every node's view of the cluster, side by side, as a table; each
    /// node's ranges and when each was last in sync with each replica.
    Status(strata_ctl::status::StatusArgs),
    /// Anti-entropy now: the node at URL (every member with --all)
    /// compares each of its ranges with every other replica by Merkle
    /// tree and exchanges only what differs; prints each exchange.
    Repair(strata_ctl::repair::RepairArgs),
    /// Add the node at URL (started with --seed MEMBER and an empty data
    /// directory) to its seed's cluster: the keys whose replicas change
    /// move to it while the cluster serves; follows the move to its end.
    Join(strata_ctl::change::ChangeArgs),
    /// Take the member at URL out of the cluster: its keys move to the
    /// members that gain them while the cluster serves; then stop it.
    Leave(strata_ctl::change::ChangeArgs),
    /// A checked run against running nodes: clients record every
    /// operation; the checker reports lost acknowledged writes and stale
    /// reads. Exits non-zero when it finds any.
    Check(Box<strata_lab::experiment::check::CheckArgs>),
    /// A saved history (Strata's JSON lines, Jepsen's history.edn, the
    /// Porcupine harness's JSON) checked for linearizability key by key
    /// (docs/consistency.md), or exported to another checker's format.
    /// Exits non-zero unless every key is linearizable.
    History(Box<strata_lab::check::saved::HistoryArgs>),
    /// Checked runs under faults (a node killed, stopped, partitioned,
    /// its clock shifted or jumping), each on a fresh local cluster: lost writes,
    /// stale reads, errors on live coordinators, the time until the
    /// faulted node is level, every node's own store; the totals as a
    /// table. Exits non-zero if any run failed.
    Campaign(Box<strata_lab::nemesis::campaign::CampaignArgs>),
    /// A TCP relay that adds a fixed delay to each direction: a distant
    /// network path in front of a node (run it in a network namespace;
    /// this is what netem would do). Runs until killed.
    Delay(strata_lab::nemesis::delay::DelayArgs),
}

#[derive(Subcommand)]
enum StressCmd {
    /// Crash the engine with SIGKILL at random moments and verify that no
    /// acknowledged write is lost.
    Engine(StressArgs),
}

#[derive(Args)]
struct StressArgs {
    /// Kill/reopen/verify rounds.
    #[arg(long, default_value_t = 100)]
    rounds: usize,
    /// Database directory (default: a temporary directory, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Writer threads in the child (exercises group commit).
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Size of the key space.
    #[arg(long, default_value_t = 2000)]
    keys: u32,
    /// Shortest time before a kill, in milliseconds.
    #[arg(long, default_value_t = 50)]
    min_ms: u64,
    /// Longest time before a kill, in milliseconds.
    #[arg(long, default_value_t = 600)]
    max_ms: u64,
    /// Internal: run as the writing child.
    #[arg(long, hide = true)]
    child: bool,
    #[arg(long, hide = true, default_value_t = 0)]
    counter_base: u64,
}

/// A credential given on the command line, or in the file named instead.
fn from_file(
    value: Option<String>,
    file: Option<&std::path::Path>,
) -> Result<Option<String>, String> {
    match file {
        Some(f) => std::fs::read_to_string(f)
            .map(Some)
            .map_err(|e| format!("{}: {e}", f.display())),
        None => Ok(value),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    strata_client::stream::trust(cli.tls_ca.clone());
    let (token, metrics_token) = match (
        from_file(cli.token.clone(), cli.token_file.as_deref()),
        from_file(cli.metrics_token.clone(), cli.metrics_token_file.as_deref()),
    ) {
        (Ok(t), Ok(m)) => (t, m),
        (Err(e), _) | (_, Err(e)) => return exit("strata", Err(e)),
    };
    strata_client::stream::credentials(
        token.clone(),
        cli.tls_client_cert.clone().zip(cli.tls_client_key.clone()),
    );
    strata_lab::report::scrape::set_metrics_token(metrics_token.as_deref());
    match cli.cmd {
        Cmd::Kv(a) => kv::run(
            &a,
            kv::Credentials {
                token,
                tls_ca: cli.tls_ca.clone(),
                cert_and_key: cli.tls_client_cert.clone().zip(cli.tls_client_key.clone()),
            },
        ),
        Cmd::Serve(mut a) => exit("strata serve", {
            a.tls_ca = cli.tls_ca.or(a.tls_ca);
            strata_node::Config::resolve(&a).and_then(strata_node::run)
        }),
        Cmd::Load(a) => end("strata load", strata_lab::experiment::trial::main(&a)),
        Cmd::Demo(a) => exit(
            "strata demo",
            std::env::current_exe()
                .map_err(|e| format!("cannot find own executable: {e}"))
                .and_then(|exe| strata_lab::experiment::demo::run(&a, Command::new(exe))),
        ),
        Cmd::Sweep(a) => end("strata sweep", strata_lab::experiment::sweep::main(&a)),
        Cmd::Worker(a) => exit(
            "strata worker",
            strata_lab::experiment::worker::main(&a, token.as_deref()),
        ),
        Cmd::Soak(a) => exit(
            "strata soak",
            own_exe().and_then(|exe| strata_lab::experiment::soak::main(&a, Command::new(exe))),
        ),
        Cmd::Sim(a) => exit(
            "strata sim",
            strata_sim::run(&a, Some(&strata_lab::report::scrape::fetch_metrics))
                .map_err(|e| e.to_string()),
        ),
        Cmd::Calibrate(a) => exit(
            "strata calibrate",
            strata_lab::experiment::calibrate::main(&a),
        ),
        Cmd::Report {
            what: ReportCmd::Merge(a),
        } => exit(
            "strata report merge",
            strata_lab::report::hdrlog::run_merge(&a).map(|out| print!("{out}")),
        ),
        Cmd::Report {
            what: ReportCmd::Judge(a),
        } => exit(
            "strata report judge",
            strata_lab::experiment::judge::run(&a),
        ),
        Cmd::Report {
            what: ReportCmd::Corpus(a),
        } => exit(
            "strata report corpus",
            strata_lab::experiment::corpus::run(&a),
        ),
        Cmd::Report {
            what: ReportCmd::Heap(a),
        } => exit("strata report heap", strata_lab::report::heap::run(&a)),
        Cmd::Report {
            what: ReportCmd::Dashboard(a),
        } => exit(
            "strata report dashboard",
            strata_lab::report::dashboard::run(&a),
        ),
        Cmd::Bench {
            what: BenchCmd::Engine(a),
        } => exit("strata bench engine", strata_enginebench::bench::run(&a)),
        Cmd::Cluster { what } => cluster(what),
        Cmd::Backup(a) => exit("strata backup", strata_ctl::backup::backup(&a)),
        Cmd::Restore(a) => exit("strata restore", strata_ctl::backup::restore(&a)),
        Cmd::Token { what } => exit("strata token", strata_ctl::token::main(&what)),
        Cmd::Secret { what } => exit("strata secret", strata_ctl::secret::main(&what)),
        Cmd::Stress {
            what: StressCmd::Engine(a),
        } => stress(a),
    }
}

/// The exit code of a subcommand, its error on stderr.
/// A run judged against its objective: 0 met, `EXIT_UNMET` (3) not met or
/// nothing succeeded, 1 an error.
fn end(what: &str, r: Result<strata_lab::experiment::slo::Ending, String>) -> ExitCode {
    use strata_lab::experiment::slo::{Ending, EXIT_UNMET};
    match r {
        Ok(Ending::Met) => ExitCode::SUCCESS,
        Ok(Ending::Unmet(why)) => {
            eprintln!("{what}: {why}");
            ExitCode::from(EXIT_UNMET)
        }
        Err(e) => exit(what, Err(e)),
    }
}

fn exit(what: &str, r: Result<(), String>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{what}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn cluster(what: ClusterCmd) -> ExitCode {
    match what {
        ClusterCmd::Up(a) => exit(
            "strata cluster up",
            own_exe().and_then(|exe| strata_lab::nemesis::up::up(&a, Command::new(exe))),
        ),
        ClusterCmd::Delay(a) => exit("strata cluster delay", strata_lab::nemesis::delay::main(&a)),
        ClusterCmd::Status(a) => exit("strata cluster status", strata_ctl::status::status(&a)),
        ClusterCmd::Repair(a) => exit("strata cluster repair", strata_ctl::repair::repair(&a)),
        ClusterCmd::Join(a) => exit("strata cluster join", strata_ctl::change::run(&a, true)),
        ClusterCmd::Leave(a) => exit("strata cluster leave", strata_ctl::change::run(&a, false)),
        ClusterCmd::Check(a) => match strata_lab::experiment::check::command(&a) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => exit("strata cluster check", Err(e)),
        },
        ClusterCmd::History(a) => match strata_lab::check::saved::command(&a) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => exit("strata cluster history", Err(e)),
        },
        ClusterCmd::Campaign(a) => {
            let r = own_exe()
                .and_then(|exe| strata_lab::nemesis::campaign::campaign(&a, || Command::new(&exe)));
            match r {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => exit("strata cluster campaign", Err(e)),
            }
        }
    }
}

fn own_exe() -> Result<PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))
}

fn stress(a: StressArgs) -> ExitCode {
    let tmp;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => {
            tmp = std::env::temp_dir().join(format!("strata-stress-{}", std::process::id()));
            tmp
        }
    };
    if a.child {
        strata_enginebench::crash::child_main(&dir, a.counter_base, a.seed, a.threads, a.keys);
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cannot find own executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cfg = strata_enginebench::crash::StressConfig {
        dir: dir.clone(),
        rounds: a.rounds,
        seed: a.seed,
        threads: a.threads.max(1),
        keys: a.keys.max(a.threads as u32),
        min_run: Duration::from_millis(a.min_ms),
        max_run: Duration::from_millis(a.max_ms.max(a.min_ms)),
    };
    let (threads, keys) = (cfg.threads, cfg.keys);
    let spawn = |base: u64, seed: u64| {
        let mut c = Command::new(&exe);
        c.args(["stress", "engine", "--child", "--dir"])
            .arg(&dir)
            .args(["--counter-base", &base.to_string()])
            .args(["--seed", &seed.to_string()])
            .args(["--threads", &threads.to_string()])
            .args(["--keys", &keys.to_string()]);
        c
    };
    let r = strata_enginebench::crash::run(&cfg, &spawn, |line| println!("{line}"));
    if a.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    match r {
        Ok(rep) => {
            println!(
                "stress engine: {} rounds passed, {} acknowledged writes verified, {} writes in flight at a kill ({} of them applied whole), {} keys checked",
                rep.rounds, rep.acknowledged, rep.in_flight_at_kill, rep.in_flight_applied, rep.keys_checked
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("stress engine: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
