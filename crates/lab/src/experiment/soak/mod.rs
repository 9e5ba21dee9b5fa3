//! `strata soak`: a long run at a steady share of a cluster's breaking
//! point, to see what only time shows. Starts a local cluster (or takes
//! running nodes), sweeps it for its breaking point unless a rate is given,
//! then offers `--fraction` of it for `--duration` with the consistency
//! checker's clients alongside, and judges the run: every node's RSS and
//! open file descriptors flat (the slope of a least-squares line over the
//! second half), the p99 of the last ten minutes against the first ten's
//! (per-window p99 from the run's HDR interval log), no stall over 100 ms,
//! flushes and compactions seen on every node, no error past the budget,
//! and nothing lost or stale. Writes the load's report, `soak.md`,
//! `soak.json` and three charts. The trends are `trend`'s, the criteria
//! and `soak.md` `judge`'s.
//!
//! Owns that sequence and the trend arithmetic; must not pace load (the
//! driver does), judge histories (the checker does) or know how a node is
//! built.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::experiment::slo::SloArgs;
use crate::experiment::sweep::{self, SweepArgs};
use crate::experiment::target::TargetArgs;
use crate::experiment::trial::LoadArgs;
use crate::nemesis::during::DuringArgs;
use crate::nemesis::local::{ClusterOptions, LocalCluster};
use crate::report::charts::{trend, TrendLine};
use crate::report::model::{CheckSummary, ServerSample};

mod judge;
#[cfg(test)]
mod tests;
mod trend;

pub use judge::{
    judge, markdown, Criterion, COMPARED_S, FDS_RISE, P99_DRIFT, P99_FLOOR_MS, RSS_RISE_MIB,
    STALL_MS,
};
pub use trend::{fit, node_trend, windows, NodeTrend, Window, LEVEL_BAND_MIB, REST_LEVEL_BAND_MIB};
use trend::{own_fds, series};

#[derive(clap::Args, Clone, Debug)]
pub struct SoakArgs {
    /// Directory for the cluster's data, the reports and the soak's
    /// summary (created).
    #[arg(long, default_value = "strata-soak")]
    pub dir: PathBuf,
    /// Soak these running nodes (URL,URL,...) instead of starting a local
    /// cluster.
    #[arg(long)]
    pub url: Option<String>,
    /// Nodes of the local cluster.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Workload (a built-in name or a TOML file).
    #[arg(long, default_value = "mixed")]
    pub workload: String,
    /// Size of the key space (written once before the sweep, so reads find
    /// values and writes overwrite them).
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// How long the soak runs (1h, 2m; a bare number is seconds).
    #[arg(long, default_value_t = 3600.0, value_parser = crate::units::seconds)]
    pub duration: f64,
    /// Share of the breaking point to offer.
    #[arg(long, default_value_t = 0.7)]
    pub fraction: f64,
    /// Offer this many requests per second and skip the sweep.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Latency objective of the sweep.
    #[arg(long, default_value = "p99<=10ms")]
    pub slo: String,
    /// Error budget: of the sweep's trials and of the soak.
    #[arg(long, default_value = "0.1%")]
    pub max_errors: String,
    /// How long each sweep trial is counted (a bare number is seconds).
    #[arg(long, default_value_t = 5.0, value_parser = crate::units::seconds)]
    pub trial: f64,
    /// Most sweep trials.
    #[arg(long, default_value_t = 12)]
    pub max_trials: usize,
    /// The windows the p99 is taken over (1m; a bare number is seconds).
    #[arg(long, default_value_t = 60.0, value_parser = crate::units::seconds)]
    pub window: f64,
    /// Memtable size of the local cluster's nodes, in bytes (smaller means
    /// more flushes and compactions) [default: the node's].
    #[arg(long)]
    pub memtable_bytes: Option<usize>,
    /// Time the soak does not judge at its start (the cluster settling
    /// after the sweep, caches filling): at most a tenth of --duration
    /// (a bare number is seconds).
    #[arg(long, default_value_t = 60.0, value_parser = crate::units::seconds)]
    pub warmup: f64,
    /// Pause between the sweep and the soak, so the sweep's last overload
    /// has drained (a bare number is seconds).
    #[arg(long, default_value_t = 15.0, value_parser = crate::units::seconds)]
    pub settle: f64,
    /// Closed-loop clients of the consistency checker.
    #[arg(long, default_value_t = 4)]
    pub check_clients: u32,
    /// Operations per second of the checker's clients together (its
    /// history is held in memory, and every key it wrote is read back at
    /// the end: an hour at full speed would be millions).
    #[arg(long, default_value_t = 200.0)]
    pub check_rate: f64,
    /// Also run the checker's operations on keys every client shares and
    /// check each for linearizability (docs/consistency.md).
    #[arg(long)]
    pub linearizable: bool,
    /// The sweep's trials and the soak itself split among workers.
    #[command(flatten)]
    pub workers: crate::experiment::worker::WorkersArgs,
}

/// What the soak found, as `soak.json` holds it.
#[derive(Clone, Debug, Serialize)]
pub struct Soak {
    pub rate: f64,
    pub breaking_point: Option<f64>,
    pub duration_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub error_pct: f64,
    /// The p99 (ms) of each window, from the interval log.
    pub windows: Vec<Window>,
    /// Merged p99 of the first and of the last `compared_s` of the windows
    /// (ten minutes, or a quarter of a shorter run), ms.
    pub p99_first_ms: f64,
    pub p99_last_ms: f64,
    pub compared_s: f64,
    /// Least-squares slope of the windows' p99, ms per hour.
    pub p99_slope_ms_per_hour: f64,
    pub nodes: Vec<NodeTrend>,
    pub check: Option<CheckSummary>,
    /// Each criterion, passed or not, with its figures.
    pub criteria: Vec<Criterion>,
    pub passed: bool,
}

fn parse_pct(s: &str) -> Result<f64, String> {
    s.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .map_err(|_| format!("bad error budget {s:?} (e.g. 0.1%)"))
}

/// Run the soak; `strata` runs the `strata` binary (for a local cluster).
/// Errors when it could not run; a soak that ran and failed its criteria
/// returns `Ok` with `passed` false.
pub fn run(a: &SoakArgs, strata: Command) -> Result<Soak, String> {
    let max_error_pct = parse_pct(&a.max_errors)?;
    if !(a.fraction > 0.0 && a.fraction <= 1.0) {
        return Err(format!("--fraction {} is not in (0, 1]", a.fraction));
    }
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    let mut cluster = match &a.url {
        Some(_) => None,
        None => {
            let mut o = ClusterOptions::new(a.nodes, a.dir.join("cluster"));
            if let Some(b) = a.memtable_bytes {
                o.serve_args = vec!["--memtable-bytes".into(), b.to_string()];
            }
            println!(
                "Starting a local cluster of {} nodes under {}",
                a.nodes,
                a.dir.display()
            );
            Some(LocalCluster::start(&o, strata)?)
        }
    };
    let urls = match (&a.url, &cluster) {
        (Some(u), _) => u.clone(),
        (None, Some(c)) => c.urls().join(","),
        (None, None) => unreachable!("a cluster is started when no URL is given"),
    };
    let r = soak_on(a, &urls, max_error_pct);
    if let Some(c) = cluster.as_mut() {
        let _ = c.terminate_all();
    }
    r
}

fn soak_on(a: &SoakArgs, urls: &str, max_error_pct: f64) -> Result<Soak, String> {
    let target = TargetArgs {
        url: urls.to_string(),
        workload: a.workload.clone(),
        keys: a.keys,
        value_size: a.value_size,
        connections: 64,
        // The load's own default: 10,000 let the generator's pool grow past
        // its descriptors in the first minute of an hour's soak.
        max_connections: crate::experiment::trial::MAX_CONNECTIONS,
        drop_after: 1.0,
        threads: 1,
        arrivals: "constant".into(),
        seed: 1,
        warmup: 1.0,
        out: None,
        preload: false,
        json: false,
        quiet: false,
        ack: None,
        from: None,
        client: Default::default(),
    };
    let nodes = target.nodes()?;
    let w = target.workload()?;
    println!("Writing the {} keys once", a.keys);
    TargetArgs {
        preload: true,
        ..target.clone()
    }
    .maybe_preload(&nodes, &w)?;
    let (rate, bp) = match a.rate {
        Some(r) => (r, None),
        None => {
            let sweep_out = a.dir.join("sweep");
            println!("Sweeping {urls} for the breaking point of {}", a.slo);
            let args = SweepArgs {
                target: TargetArgs {
                    out: Some(sweep_out.clone()),
                    ..target.clone()
                },
                objective: SloArgs {
                    slo: a.slo.clone(),
                    max_errors: a.max_errors.clone(),
                },
                start_rate: 2000.0,
                max_rate: 1_000_000.0,
                duration: a.trial,
                precision: 0.1,
                max_trials: a.max_trials,
                pause: 1.0,
                check: false,
                check_clients: 4,
                workers: a.workers.clone(),
                repeats: 3,
                tail_samples: 100,
            };
            let (r, scrapes) = sweep::run(&args, &mut |line| println!("{line}"))?;
            crate::report::write_dir(&sweep_out, &r, &scrapes)
                .map_err(|e| format!("{}: {e}", sweep_out.display()))?;
            let bp = r
                .breaking_point
                .ok_or("the sweep found no rate that meets the SLO")?;
            println!("Letting the cluster settle for {:.0} s", a.settle);
            std::thread::sleep(std::time::Duration::from_secs_f64(a.settle));
            ((bp * a.fraction).round().max(1.0), Some(bp))
        }
    };
    let out = a.dir.join("report");
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let hlog = out.join("latency.hlog");
    println!(
        "Soaking at {rate:.0} req/s for {:.0} s with the consistency checker's clients alongside",
        a.duration
    );
    let la = LoadArgs {
        target: TargetArgs {
            out: Some(out.clone()),
            quiet: true,
            warmup: a.warmup.min(a.duration / 10.0),
            ..target
        },
        rate,
        uploads_per_day: None,
        duration: a.duration,
        clients: 0,
        think: 0.0,
        hdr: Some(hlog.clone()),
        objective: Default::default(),
        share: Default::default(),
        workers: a.workers.clone(),
        during: DuringArgs {
            check: true,
            linearizable: a.linearizable,
            check_clients: a.check_clients,
            check_rate: a.check_rate,
            ..DuringArgs::default()
        },
    };
    let run = crate::experiment::trial::run_on::<LocalCluster>(&la, None)?;
    crate::report::write_dir(&out, &run.report, &run.scrapes)
        .map_err(|e| format!("{}: {e}", out.display()))?;
    print!(
        "{}",
        crate::experiment::trial::summary(run.trial(), &run.outcome)
    );
    let t = run.trial();
    let from = t.started_s;
    let end = t.started_s + t.duration_s.max(1.0);
    let half = from + (end - from) / 2.0;
    let (ws, p99_first, p99_last, compared) = windows(&hlog, from, a.window, COMPARED_S)?;
    let p99_pts: Vec<(f64, f64)> = ws.iter().map(|w| (w.t_s, w.p99_ms)).collect();
    let p99_slope = fit(&p99_pts).map_or(0.0, |f| f.0 * 3600.0);
    let trends: Vec<NodeTrend> = t
        .per_node
        .iter()
        .map(|n| node_trend(&n.url, &n.server, half))
        .collect();
    let mut s = Soak {
        rate,
        breaking_point: bp,
        duration_s: t.duration_s,
        requests: t.requests,
        errors: t.errors,
        error_pct: t.error_pct,
        windows: ws,
        p99_first_ms: p99_first,
        p99_last_ms: p99_last,
        compared_s: compared as f64 * a.window,
        p99_slope_ms_per_hour: p99_slope,
        nodes: trends,
        check: run.report.check.clone(),
        criteria: Vec::new(),
        passed: false,
    };
    s.criteria = judge(&s, max_error_pct);
    s.passed = s.criteria.iter().all(|c| c.passed);
    write_outputs(&a.dir, &s, &t.per_node, half)?;
    Ok(s)
}

fn write_outputs(
    dir: &Path,
    s: &Soak,
    nodes: &[crate::report::model::NodeSummary],
    half_s: f64,
) -> Result<(), String> {
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, body).map_err(|e| format!("{}: {e}", p.display()))
    };
    write("soak.md", &markdown(s))?;
    write(
        "soak.json",
        &serde_json::to_string_pretty(s).map_err(|e| e.to_string())?,
    )?;
    const MIB: f64 = 1024.0 * 1024.0;
    let lines = |pick: fn(&ServerSample) -> Option<f64>| -> Vec<TrendLine> {
        nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let points = series(&n.server, 0.0, pick);
                let second = series(&n.server, half_s, pick);
                let fit = match (fit(&second), second.first(), second.last()) {
                    (Some((slope, at)), Some(a), Some(b)) => Some((a.0, b.0, slope, at)),
                    _ => None,
                };
                TrendLine {
                    name: format!("node {}", i + 1),
                    points,
                    fit,
                }
            })
            .collect()
    };
    let rss = trend(
        "RSS per node (fitted over the second half)",
        "resident memory",
        &|v| format!("{v:.0} MiB"),
        &lines(|s| s.rss_bytes.map(|b| b / MIB)),
    )?;
    write("soak-rss.svg", &rss)?;
    let fds = trend(
        "Own open descriptors per node, client connections left out (fitted over the second half)",
        "open descriptors",
        &|v| format!("{v:.0}"),
        &lines(own_fds),
    )?;
    write("soak-fds.svg", &fds)?;
    let p99 = trend(
        "p99 latency per window, all operations",
        "p99 of the window",
        &|v| format!("{v:.1} ms"),
        &[TrendLine {
            name: "p99".into(),
            points: s.windows.iter().map(|w| (w.t_s, w.p99_ms)).collect(),
            fit: fit(&s
                .windows
                .iter()
                .map(|w| (w.t_s, w.p99_ms))
                .collect::<Vec<_>>())
            .and_then(|(slope, at)| {
                Some((s.windows.first()?.t_s, s.windows.last()?.t_s, slope, at))
            }),
        }],
    )?;
    write("soak-p99.svg", &p99)?;
    Ok(())
}

/// `strata soak`: run, print the summary, exit non-zero when a criterion
/// failed.
pub fn main(a: &SoakArgs, strata: Command) -> Result<(), String> {
    let s = run(a, strata)?;
    print!("{}", markdown(&s).split("\n| node |").next().unwrap_or(""));
    println!("Summary: {}", a.dir.join("soak.md").display());
    if s.passed {
        Ok(())
    } else {
        Err("the soak failed a criterion (see above)".into())
    }
}
