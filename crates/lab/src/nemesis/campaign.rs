//! Checked runs under faults: a fresh local cluster, the checked workload
//! (`check::spawn`) through every node, one fault injected once a share
//! of the writes is acknowledged, the time until the faulted node is
//! level again (no hints left for it anywhere, measured without reading
//! any key), then, before the final reads can repair anything, every
//! node's own store compared with the acknowledged writes; then the
//! checker's report. A campaign repeats that per fault and adds it up:
//! `strata cluster campaign`. Owns the sequence and its figures; must
//! not judge the history itself (the checker does) nor know a node's
//! internals (it reads `/v0/cluster` and ranges over HTTP).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strata_api::routes;

use super::fault::{wait_level, Backlog, Fault, Plan};
use super::local::{ClusterOptions, LocalCluster};
use crate::check::linear::{self, LinReport};
use crate::check::{self, BetweenPhases, History, KeyRole, Kind, Outcome, Quorum, Report};
use strata_client::control;

/// One checked run under one fault.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub plan: Plan,
    pub nodes: usize,
    /// The main phase ends once this many `set/…` writes are acknowledged.
    pub writes: u64,
    /// The fault begins once this share of `writes` is acknowledged.
    pub fault_at: f64,
    pub clients: u32,
    pub seed: u64,
    /// `ack` of writes and reads, and `from`.
    pub quorum: Quorum,
    /// The cluster's base directory (removed afterwards unless `keep`).
    pub dir: PathBuf,
    pub keep: bool,
    /// The main phase ends after this long even if `writes` were not
    /// reached.
    pub max_duration: Duration,
    /// More `strata serve` arguments for every node.
    pub serve_args: Vec<String>,
    /// Also run operations on shared keys and check each for
    /// linearizability, each key's search given this long.
    pub linearizable: Option<Duration>,
}

impl RunOptions {
    /// A 3-node run at `ack=2&from=3` of `writes` writes under `fault` on
    /// node 3 (a 3 s hold, a +10 s clock), 16 clients.
    pub fn new(fault: Fault, writes: u64, dir: impl Into<PathBuf>) -> RunOptions {
        RunOptions {
            plan: Plan {
                fault,
                node: 2,
                hold: Duration::from_secs(3),
                clock_offset_ms: 10_000,
            },
            nodes: 3,
            writes,
            fault_at: 0.3,
            clients: 16,
            seed: 1,
            quorum: Quorum::explicit(2, 2, 3),
            dir: dir.into(),
            keep: false,
            max_duration: Duration::from_secs(600),
            serve_args: vec![],
            linearizable: None,
        }
    }
}

/// What one run found.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub fault: Fault,
    pub seed: u64,
    pub report: Report,
    /// Acknowledged `set/…` writes.
    pub acknowledged: u64,
    /// Operations on the faulted node's peers (live coordinators) that
    /// were not acknowledged, apart from those in flight when the fault
    /// began.
    pub live_errors: u64,
    /// Operations in flight anywhere when the fault began.
    pub in_flight_at_fault: u64,
    /// From the node's return until no hint for or from it was pending
    /// anywhere; `None` if that did not happen within a minute (or there
    /// was no return: a clock fault).
    pub level_after: Option<Duration>,
    /// Hints pending in the whole cluster at the end of the main phase
    /// that did not drain within a minute (0 when they did).
    pub undrained: u64,
    /// Hints dropped over their bounds, summed over the nodes.
    pub hints_dropped: u64,
    /// Acknowledged `set/…` writes checked on each node's own store
    /// after the main phase (before the final reads), and how many of
    /// them each node lacked, by node.
    pub own_checked: u64,
    pub own_missing: Vec<u64>,
    pub main: Duration,
    /// p99 latency of the operations acknowledged in the 5 s before the
    /// fault, and of those invoked from the node's return until it was
    /// level (hint replay), all nodes together.
    pub p99_before: Option<Duration>,
    pub p99_replay: Option<Duration>,
    /// The shared keys' linearizability, when checked.
    pub linear: Option<LinReport>,
}

impl RunResult {
    /// No lost write, no stale read, nothing impossible, no error on a
    /// live coordinator, every node level, no dropped hint.
    pub fn passed(&self) -> bool {
        self.report.passed()
            && self.live_errors == 0
            && self.undrained == 0
            && self.hints_dropped == 0
            && self.own_missing.iter().all(|&m| m == 0)
            && (self.fault == Fault::Clock || self.level_after.is_some())
            && self.linear.as_ref().is_none_or(LinReport::linearizable)
    }

    /// One line: the figures a campaign prints per run.
    pub fn line(&self) -> String {
        format!(
            "{:<9} seed {:<3} {:>7} acked  lost {}  stale {}  impossible {}  live errors {}  in flight {}  level {}  p99 before {} / replay {}  own-store missing {:?} of {}  dropped hints {}  {}{}",
            self.fault.name(),
            self.seed,
            self.acknowledged,
            self.report.lost,
            self.report.stale,
            self.report.impossible,
            self.live_errors,
            self.in_flight_at_fault,
            self.level_after
                .map(|d| format!("{:.2}s", d.as_secs_f64()))
                .unwrap_or_else(|| "-".into()),
            ms(self.p99_before),
            ms(self.p99_replay),
            self.own_missing,
            self.own_checked,
            self.hints_dropped,
            self.linear
                .as_ref()
                .map(|l| format!("{} ({} keys)  ", l.word(), l.keys.len()))
                .unwrap_or_default(),
            if self.passed() { "ok" } else { "FAILED" },
        )
    }
}

fn ms(d: Option<Duration>) -> String {
    d.map(|d| format!("{:.2}ms", d.as_secs_f64() * 1e3))
        .unwrap_or_else(|| "-".into())
}

/// The 99th percentile of the latencies of acknowledged main-phase
/// operations invoked in `[from, to)`.
fn p99_between(h: &History, from: Duration, to: Duration) -> Option<Duration> {
    let mut l: Vec<Duration> = h
        .ops
        .iter()
        .filter(|op| !op.final_read && op.outcome == Outcome::Ok)
        .filter(|op| op.invoked >= from && op.invoked < to)
        .map(|op| op.completed - op.invoked)
        .collect();
    if l.is_empty() {
        return None;
    }
    l.sort_unstable();
    Some(l[(l.len() * 99).div_ceil(100) - 1])
}

/// What the hook between the phases found.
#[derive(Default)]
struct OwnStores {
    checked: u64,
    missing: Vec<u64>,
    undrained: u64,
    error: Option<String>,
}

/// Run once: start the cluster, run the checked workload, inject the
/// fault, measure, check, stop the cluster.
pub fn run_one(o: &RunOptions, strata: Command) -> Result<RunResult, String> {
    let mut copts = ClusterOptions::new(o.nodes, &o.dir);
    copts.serve_args = o.serve_args.clone();
    o.plan.prepare(&mut copts);
    let mut cluster = LocalCluster::start(&copts, strata)?;
    let r = run_on(o, &mut cluster);
    cluster.shutdown();
    if !o.keep {
        let _ = std::fs::remove_dir_all(&o.dir);
    }
    r
}

/// Run on a cluster already started (with options `o.plan.prepare`
/// made): the checked workload, the fault, the figures. The cluster is
/// left running.
pub fn run_on(o: &RunOptions, c: &mut LocalCluster) -> Result<RunResult, String> {
    let i = o.plan.node;
    if i >= c.len() {
        return Err(format!("no node {} in a cluster of {}", i + 1, c.len()));
    }
    let urls = c.urls();
    let own = Arc::new(Mutex::new(OwnStores::default()));
    let mut cfg = check::Config::new(urls.clone());
    let hook = {
        let own = own.clone();
        let (urls, adv) = (urls.clone(), c.advertised());
        let (run, clients) = (cfg.run.clone(), o.clients);
        // The hook runs on the run's thread: it asks the nodes itself.
        BetweenPhases(Arc::new(move |h: &History| {
            let mut out = own.lock().expect("own-store lock");
            *out = check_own_stores(h, &urls, &adv, &run, clients);
        }))
    };
    cfg.clients = o.clients;
    cfg.seed = o.seed;
    cfg.duration = o.max_duration;
    cfg.target_writes = Some(o.writes);
    cfg.quorum = o.quorum;
    cfg.between_phases = Some(hook);
    if o.linearizable.is_some() {
        cfg.mix = check::Mix::with_shared();
    }
    let running = check::spawn(cfg)?;
    let start = running.start();
    let at = (o.writes as f64 * o.fault_at) as u64;
    running.wait_for(o.max_duration, |p| p.acknowledged() >= at);
    let injected = o.plan.inject(c);
    let injected = match injected {
        Ok(x) => x,
        Err(e) => {
            running.stop();
            let _ = running.join();
            return Err(format!("injecting {}: {e}", o.plan.fault));
        }
    };
    let level_after = injected.and_then(|_| wait_level(c, i, Duration::from_secs(60)));
    let checked = running.join()?;
    let dropped = Backlog::of(&urls, &c.advertised(), i)
        .map(|b| b.dropped)
        .unwrap_or(0);
    let own = std::mem::take(&mut *own.lock().expect("own-store lock"));
    if let Some(e) = own.error {
        return Err(format!("checking the nodes' own stores: {e}"));
    }

    let faulted = urls[i].as_str();
    let fault_at = injected.map(|x| x.began.saturating_duration_since(start));
    let main_ops = checked.history.ops.iter().filter(|op| !op.final_read);
    let (mut live_errors, mut in_flight) = (0, 0);
    for op in main_ops {
        let during = fault_at.is_some_and(|t| op.invoked <= t && op.completed >= t);
        in_flight += u64::from(during);
        if op.outcome != Outcome::Ok && &*op.node != faulted && !during {
            live_errors += 1;
        }
    }
    let acknowledged = checked.report.set_acknowledged;
    let (p99_before, p99_replay) = match (injected, level_after) {
        (Some(x), Some(level)) => {
            let began = x.began.saturating_duration_since(start);
            let back = x.returned.saturating_duration_since(start);
            (
                p99_between(
                    &checked.history,
                    began.saturating_sub(Duration::from_secs(5)),
                    began,
                ),
                p99_between(&checked.history, back, back + level),
            )
        }
        _ => (None, None),
    };
    let linear = o
        .linearizable
        .map(|per_key| linear::check_shared(&checked.history, per_key));
    Ok(RunResult {
        linear,
        fault: o.plan.fault,
        seed: o.seed,
        report: checked.report,
        acknowledged,
        live_errors,
        in_flight_at_fault: in_flight,
        level_after,
        undrained: own.undrained,
        hints_dropped: dropped,
        own_checked: own.checked,
        own_missing: own.missing,
        main: checked.main,
        p99_before,
        p99_replay,
    })
}

/// After the main phase: wait (at most a minute) until no hint is pending
/// anywhere, then read every node's own store of `set/…` keys and count
/// the acknowledged writes each lacks. A node that lacks some is read
/// again, after hints are drained again, for up to `SETTLE`: a replica
/// write still in flight when the phase ended (acknowledged by the others,
/// or failing late into a hint) lands without any read's help.
fn check_own_stores(
    h: &History,
    urls: &[String],
    adv: &[String],
    run: &str,
    clients: u32,
) -> OwnStores {
    const SETTLE: Duration = Duration::from_secs(10);
    let mut out = OwnStores {
        missing: vec![u64::MAX; urls.len()],
        ..OwnStores::default()
    };
    let acked: Vec<(&[u8], &[u8])> = h
        .ops
        .iter()
        .filter(|op| {
            op.kind == Kind::Write
                && op.outcome == Outcome::Ok
                && KeyRole::of(&op.key) == KeyRole::Set
        })
        .map(|op| (&op.key[..], op.value.as_deref().unwrap_or_default()))
        .collect();
    out.checked = acked.len() as u64;
    let settle_until = Instant::now() + SETTLE;
    loop {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match Backlog::of(urls, adv, 0).map(|b| b.total) {
                Ok(0) => break,
                Ok(n) if Instant::now() >= deadline => {
                    out.undrained = n;
                    break;
                }
                Err(e) if Instant::now() >= deadline => {
                    out.error = Some(e);
                    return out;
                }
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        for (n, url) in urls.iter().enumerate() {
            if out.missing[n] == 0 {
                continue;
            }
            let mut held: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            for client in 0..clients {
                if let Err(e) = own_range(url, run, client, &mut held) {
                    out.error = Some(e);
                    return out;
                }
            }
            out.missing[n] = acked
                .iter()
                .filter(|(k, v)| held.get(*k).map(Vec::as_slice) != Some(*v))
                .count() as u64;
        }
        if out.missing.iter().all(|&m| m == 0) || Instant::now() >= settle_until {
            return out;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Client `client`'s `set/…` keys of run `run` in node `url`'s own store
/// (the range's default scope), into `held`.
fn own_range(
    url: &str,
    run: &str,
    client: u32,
    held: &mut HashMap<Vec<u8>, Vec<u8>>,
) -> Result<(), String> {
    // `set/<run>/<c>/` up to `set/<run>/<c>0`: '0' follows '/'. The run
    // tag is hexadecimal: nothing to encode.
    let path = format!(
        "{}?start=set%2F{run}%2F{client}%2F&end=set%2F{run}%2F{client}0",
        routes::ENTITIES
    );
    let r = control::get(url, &path, Duration::from_secs(30))?;
    if r.status != 200 {
        return Err(format!("{url}{path}: {}", r.status));
    }
    for chunk in r.chunks() {
        let Some(nl) = chunk.iter().position(|&b| b == b'\n') else {
            return Err(format!("{url}{path}: an entry without a newline"));
        };
        held.insert(chunk[..nl].to_vec(), chunk[nl + 1..].to_vec());
    }
    Ok(())
}

/// `strata cluster campaign`.
#[derive(clap::Args, Clone, Debug)]
pub struct CampaignArgs {
    /// Faults to run, comma-separated (kill, stop, partition, clock,
    /// jump; isolate, oneway, isolate-kill, internal in network namespaces,
    /// as root), `all` (the first five) or `net` (the last four).
    #[arg(long, default_value = "all")]
    pub faults: String,
    /// Runs per fault, each on a fresh cluster with its own seed.
    #[arg(long, default_value_t = 10)]
    pub runs: u32,
    /// Acknowledged set writes per run.
    #[arg(long, default_value_t = 50_000)]
    pub writes: u64,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 16)]
    pub clients: u32,
    /// How long a kill, stop or partition lasts (3s, 500ms; a bare number
    /// is seconds).
    #[arg(long, default_value = "3s", value_parser = crate::units::duration)]
    pub hold: Duration,
    /// The clock fault's offset (10s; a bare number is seconds); runs
    /// alternate its sign.
    #[arg(long, default_value = "10s", value_parser = crate::units::duration)]
    pub clock_offset: Duration,
    /// First seed (run r uses seed + r).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the clusters live (each run's removed after it).
    #[arg(long, default_value = "strata-campaign")]
    pub dir: PathBuf,
    /// Replicas that must acknowledge a write, answer a read, and that
    /// each request goes to.
    #[arg(long, default_value_t = 2)]
    pub ack_write: u32,
    #[arg(long, default_value_t = 2)]
    pub ack_read: u32,
    #[arg(long, default_value_t = 3)]
    pub from: u32,
    /// Also run operations on keys every client shares and check each
    /// for linearizability (docs/consistency.md).
    #[arg(long)]
    pub linearizable: bool,
    /// How long the linearizability search may take on one key.
    #[arg(long, default_value = "60s", value_parser = crate::units::duration)]
    pub lin_limit: Duration,
    /// More `strata serve` arguments for every node, after `--`.
    #[arg(last = true)]
    pub serve_args: Vec<String>,
}

/// Run the campaign, printing a line per run and the totals; whether
/// every run passed.
pub fn campaign(a: &CampaignArgs, strata: impl Fn() -> Command) -> Result<bool, String> {
    let faults = Fault::parse_list(&a.faults)?;
    let mut all = Vec::new();
    for &fault in &faults {
        for r in 0..a.runs {
            let mut o = RunOptions::new(fault, a.writes, a.dir.join(format!("{fault}-{r}")));
            o.clients = a.clients;
            o.seed = a.seed + r as u64;
            o.plan.hold = a.hold;
            let sign = if r % 2 == 0 { 1 } else { -1 };
            o.plan.clock_offset_ms = sign * a.clock_offset.as_millis() as i64;
            o.serve_args = a.serve_args.clone();
            o.quorum = Quorum::explicit(a.ack_write, a.ack_read, a.from);
            o.linearizable = a.linearizable.then_some(a.lin_limit);
            let res = run_one(&o, strata())?;
            println!("{}", res.line());
            if let Some(l) = res.linear.as_ref().filter(|l| !l.linearizable()) {
                print!("{l}");
            }
            all.push(res);
        }
    }
    print!("{}", totals(&all));
    Ok(all.iter().all(RunResult::passed))
}

/// The totals per fault as a Markdown table.
pub fn totals(runs: &[RunResult]) -> String {
    let mut s = String::from(
        "\n| fault | runs | acknowledged writes | lost | stale reads | live-coordinator errors | own-store missing | hints dropped | level after return (median / max) | p99 before fault / during replay (medians) | linearizable runs | passed |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut faults: Vec<Fault> = runs.iter().map(|r| r.fault).collect();
    faults.dedup();
    for f in faults {
        let rs: Vec<&RunResult> = runs.iter().filter(|r| r.fault == f).collect();
        let sum = |g: &dyn Fn(&RunResult) -> u64| rs.iter().map(|r| g(r)).sum::<u64>();
        let mut levels: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.level_after.map(|d| d.as_secs_f64()))
            .collect();
        levels.sort_by(f64::total_cmp);
        let level = if levels.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{:.2} s / {:.2} s",
                levels[levels.len() / 2],
                levels[levels.len() - 1]
            )
        };
        let median = |g: &dyn Fn(&RunResult) -> Option<Duration>| {
            let mut v: Vec<Duration> = rs.iter().filter_map(|r| g(r)).collect();
            v.sort_unstable();
            ms(v.get(v.len().saturating_sub(1) / 2).copied())
        };
        let p99 = format!(
            "{} / {}",
            median(&|r| r.p99_before),
            median(&|r| r.p99_replay)
        );
        let checked: Vec<&LinReport> = rs.iter().filter_map(|r| r.linear.as_ref()).collect();
        let lin = if checked.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{}/{} ({} undecided)",
                checked.iter().filter(|l| l.linearizable()).count(),
                checked.len(),
                checked
                    .iter()
                    .filter(|l| l.violations() == 0 && l.unknown() > 0)
                    .count()
            )
        };
        let _ = writeln!(
            s,
            "| {f} | {} | {} | {} | {} | {} | {} | {} | {level} | {p99} | {lin} | {}/{} |",
            rs.len(),
            sum(&|r| r.acknowledged),
            sum(&|r| r.report.lost),
            sum(&|r| r.report.stale),
            sum(&|r| r.live_errors),
            sum(&|r| r.own_missing.iter().sum()),
            sum(&|r| r.hints_dropped),
            rs.iter().filter(|r| r.passed()).count(),
            rs.len(),
        );
    }
    s
}
