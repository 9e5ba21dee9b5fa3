//! `strata soak`: a long run at a steady share of a cluster's breaking
//! point, to see what only time shows. Starts a local cluster (or takes
//! running nodes), sweeps it for its breaking point unless a rate is given,
//! then offers `--fraction` of it for `--duration` with the consistency
//! checker's clients alongside, and judges the run: every node's RSS and
//! open file descriptors flat (the slope of a least-squares line over the
//! second half), the p99 of the last quarter against the first (per-window
//! p99 from the run's HDR interval log), flushes and compactions seen on
//! every node, no error past the budget, and nothing lost or stale.
//! Writes the load's report, `soak.md`, `soak.json` and three charts.
//!
//! Owns that sequence and the trend arithmetic; must not pace load (the
//! driver does), judge histories (the checker does) or know how a node is
//! built.

use std::path::{Path, PathBuf};
use std::process::Command;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::cluster::local::{ClusterOptions, LocalCluster};
use crate::during::DuringArgs;
use crate::load::{LoadArgs, TargetArgs};
use crate::report::charts::{trend, TrendLine};
use crate::report::hdrlog::{empty_hist, for_each_interval};
use crate::report::model::{CheckSummary, ServerSample};
use crate::slo::SloArgs;
use crate::sweep::{self, SweepArgs};

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
    /// Merged p99 of the first and of the last quarter of the windows, ms.
    pub p99_first_quarter_ms: f64,
    pub p99_last_quarter_ms: f64,
    /// Least-squares slope of the windows' p99, ms per hour.
    pub p99_slope_ms_per_hour: f64,
    pub nodes: Vec<NodeTrend>,
    pub check: Option<CheckSummary>,
    /// Each criterion, passed or not, with its figures.
    pub criteria: Vec<Criterion>,
    pub passed: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// Start, seconds after the run started (warm-up included).
    pub t_s: f64,
    pub requests: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// One node's resources over the run.
#[derive(Clone, Debug, Serialize)]
pub struct NodeTrend {
    pub url: String,
    pub rss_first_mib: f64,
    pub rss_last_mib: f64,
    pub rss_max_mib: f64,
    /// Least-squares slope over the second half, MiB per hour, and the
    /// rise it fits over that half.
    pub rss_slope_mib_per_hour: f64,
    pub rss_rise_mib: f64,
    /// Mean RSS over the second half, MiB.
    pub rss_half_mean_mib: f64,
    /// Of the RSS, the heap (anonymous memory): its slope over the second
    /// half, MiB per hour (None when the node does not say). Tells a leak
    /// from the tables' mmapped pages filling.
    pub anon_slope_mib_per_hour: Option<f64>,
    /// The node's own descriptors (files, WAL, tables, listeners, peer
    /// connections): open descriptors less client connections, which are
    /// the client's to open and close.
    pub fds_min: f64,
    pub fds_max: f64,
    pub fds_slope_per_hour: f64,
    pub fds_rise: f64,
    /// Client connections the node held, least and most.
    pub connections_min: f64,
    pub connections_max: f64,
    pub flushes: f64,
    pub compactions: f64,
    pub stalls: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Criterion {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// RSS may rise this much over the second half (or 10 % of the node's
/// mean RSS there, if more) and still count as flat: a memtable filling
/// and the block cache warming move it by tens of MiB without a leak.
pub const RSS_RISE_MIB: f64 = 32.0;
/// Open descriptors may rise this many over the second half (a few client
/// or peer connections more at the end is not a leak).
pub const FDS_RISE: f64 = 8.0;
/// The last quarter's p99 may be this many times the first's, plus
/// [`P99_FLOOR_MS`], and count as without drift.
pub const P99_DRIFT: f64 = 1.5;
pub const P99_FLOOR_MS: f64 = 1.0;

/// Least-squares fit of `pts`: (slope per unit of x, value of the line at
/// the first x). None with fewer than two distinct x.
pub fn fit(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    Some((slope, my + slope * (pts[0].0 - mx)))
}

/// The points of `pick` at or after `from_s`.
fn series(
    samples: &[ServerSample],
    from_s: f64,
    pick: fn(&ServerSample) -> Option<f64>,
) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter(|s| s.t_s >= from_s)
        .filter_map(|s| pick(s).map(|v| (s.t_s, v)))
        .collect()
}

/// The least value of `pts`, 0 for none.
fn least(pts: &[(f64, f64)]) -> f64 {
    let v = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// The node's own open descriptors: all less its client connections.
fn own_fds(s: &ServerSample) -> Option<f64> {
    s.open_fds.map(|f| f - s.client_connections.unwrap_or(0.0))
}

/// (slope per hour, rise over the span) of `pts`.
fn slope_and_rise(pts: &[(f64, f64)]) -> (f64, f64) {
    match (fit(pts), pts.first(), pts.last()) {
        (Some((slope, _)), Some(a), Some(b)) => (slope * 3600.0, slope * (b.0 - a.0)),
        _ => (0.0, 0.0),
    }
}

/// Judge one node's samples; `half_s` is where the second half starts.
pub fn node_trend(url: &str, samples: &[ServerSample], half_s: f64) -> NodeTrend {
    const MIB: f64 = 1024.0 * 1024.0;
    let rss = series(samples, 0.0, |s| s.rss_bytes.map(|b| b / MIB));
    let fds = series(samples, 0.0, own_fds);
    let conns = series(samples, 0.0, |s| s.client_connections);
    let rss_half = series(samples, half_s, |s| s.rss_bytes.map(|b| b / MIB));
    let (rss_slope, rss_rise) = slope_and_rise(&rss_half);
    let rss_half_mean = rss_half.iter().map(|p| p.1).sum::<f64>() / rss_half.len().max(1) as f64;
    let (fds_slope, fds_rise) = slope_and_rise(&series(samples, half_s, own_fds));
    let total = |pick: fn(&ServerSample) -> Option<f64>| samples.iter().filter_map(pick).sum();
    NodeTrend {
        url: url.to_string(),
        rss_first_mib: rss.first().map_or(0.0, |p| p.1),
        rss_last_mib: rss.last().map_or(0.0, |p| p.1),
        rss_max_mib: rss.iter().map(|p| p.1).fold(0.0, f64::max),
        rss_slope_mib_per_hour: rss_slope,
        rss_rise_mib: rss_rise,
        rss_half_mean_mib: rss_half_mean,
        anon_slope_mib_per_hour: {
            let a = series(samples, half_s, |s| s.rss_anon_bytes.map(|b| b / MIB));
            (a.len() >= 2).then(|| slope_and_rise(&a).0)
        },
        fds_min: least(&fds),
        fds_max: fds.iter().map(|p| p.1).fold(0.0, f64::max),
        fds_slope_per_hour: fds_slope,
        fds_rise,
        connections_min: least(&conns),
        connections_max: conns.iter().map(|p| p.1).fold(0.0, f64::max),
        flushes: total(|s| s.flushes),
        compactions: total(|s| s.compactions),
        stalls: total(|s| s.stalls),
    }
}

/// Per-window latency from the interval log at `path` (all operations
/// together), windows of `window_s` starting at `from_s` (the end of the
/// warm-up; earlier intervals are left out), and the merged p99 (ms) of the
/// first and the last quarter of the windows that saw requests (at least
/// one window each); one pass over the log.
pub fn windows(path: &Path, from_s: f64, window_s: f64) -> Result<(Vec<Window>, f64, f64), String> {
    let mut hists: Vec<Histogram<u64>> = Vec::new();
    for_each_interval(path, |iv| {
        if iv.offset_s + 1e-6 < from_s {
            return Ok(());
        }
        let i = ((iv.offset_s - from_s + 1e-6) / window_s).floor() as usize;
        while hists.len() <= i {
            hists.push(empty_hist());
        }
        hists[i].add(iv.hist).map_err(|e| format!("{e:?}"))
    })?;
    let seen: Vec<(usize, &Histogram<u64>)> = hists
        .iter()
        .enumerate()
        .filter(|(_, h)| !h.is_empty())
        .collect();
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let ws = seen
        .iter()
        .map(|&(i, h)| Window {
            t_s: from_s + i as f64 * window_s,
            requests: h.len(),
            p50_ms: ms(h, 0.5),
            p99_ms: ms(h, 0.99),
            max_ms: h.max() as f64 / 1000.0,
        })
        .collect();
    if seen.is_empty() {
        return Ok((ws, 0.0, 0.0));
    }
    let q = (seen.len() / 4).max(1);
    let merged = |part: &[(usize, &Histogram<u64>)]| -> Result<f64, String> {
        let mut m = empty_hist();
        for (_, h) in part {
            m.add(*h).map_err(|e| format!("{e:?}"))?;
        }
        Ok(ms(&m, 0.99))
    };
    let first = merged(&seen[..q])?;
    let last = merged(&seen[seen.len() - q..])?;
    Ok((ws, first, last))
}

/// The criteria of a soak, from its figures.
pub fn judge(s: &Soak, max_error_pct: f64) -> Vec<Criterion> {
    let mut out = Vec::new();
    let mut c = |name: &str, passed: bool, detail: String| {
        out.push(Criterion {
            name: name.into(),
            passed,
            detail,
        })
    };
    match &s.check {
        Some(k) => c(
            "nothing lost",
            k.passed,
            format!(
                "{} lost, {} stale, {} impossible of {} acknowledged writes and {} checked reads",
                k.lost, k.stale, k.impossible, k.writes_acknowledged, k.reads_checked
            ),
        ),
        None => c("nothing lost", false, "the checker did not run".into()),
    }
    c(
        "errors within budget",
        s.error_pct <= max_error_pct,
        format!(
            "{} errors of {} requests ({:.3}%; budget {max_error_pct}%)",
            s.errors, s.requests, s.error_pct
        ),
    );
    for n in &s.nodes {
        let allowed = RSS_RISE_MIB.max(0.1 * n.rss_half_mean_mib);
        c(
            &format!("RSS flat on {}", n.url),
            n.rss_rise_mib <= allowed,
            format!(
                "{:+.1} MiB fitted over the second half ({:+.1} MiB/h; allowed {allowed:.0} MiB), {:.0} → {:.0} MiB, max {:.0}{}",
                n.rss_rise_mib,
                n.rss_slope_mib_per_hour,
                n.rss_first_mib,
                n.rss_last_mib,
                n.rss_max_mib,
                n.anon_slope_mib_per_hour
                    .map_or(String::new(), |a| format!("; heap alone {a:+.1} MiB/h"))
            ),
        );
        c(
            &format!("open files flat on {}", n.url),
            n.fds_rise <= FDS_RISE,
            format!(
                "own descriptors {:+.1} fitted over the second half ({:+.1}/h; allowed {FDS_RISE}), {:.0}–{:.0}; client connections {:.0}–{:.0}",
                n.fds_rise, n.fds_slope_per_hour, n.fds_min, n.fds_max, n.connections_min, n.connections_max
            ),
        );
        c(
            &format!("flushes and compactions ran on {}", n.url),
            n.flushes > 0.0 && n.compactions > 0.0,
            format!(
                "{:.0} flushes, {:.0} compactions, {:.0} write stalls",
                n.flushes, n.compactions, n.stalls
            ),
        );
    }
    let allowed = P99_DRIFT * s.p99_first_quarter_ms + P99_FLOOR_MS;
    c(
        "p99 without drift",
        s.p99_last_quarter_ms <= allowed,
        format!(
            "last quarter {:.2} ms against first quarter {:.2} ms (allowed {allowed:.2}); {:+.2} ms/h fitted over {} windows",
            s.p99_last_quarter_ms,
            s.p99_first_quarter_ms,
            s.p99_slope_ms_per_hour,
            s.windows.len()
        ),
    );
    out
}

/// `soak.md`: the figures and the criteria.
pub fn markdown(s: &Soak) -> String {
    let mut m = String::from("# Soak\n\n");
    m += &format!(
        "{:.0} req/s{} for {:.0} s: {} requests, {} errors ({:.3}%).\n\n",
        s.rate,
        s.breaking_point.map_or(String::new(), |bp| format!(
            " ({:.0}% of the breaking point, {bp:.0} req/s)",
            100.0 * s.rate / bp
        )),
        s.duration_s,
        s.requests,
        s.errors,
        s.error_pct
    );
    m += &format!(
        "Verdict: **{}**\n\n| criterion | | figures |\n| --- | --- | --- |\n",
        if s.passed { "PASSED" } else { "FAILED" }
    );
    for c in &s.criteria {
        m += &format!(
            "| {} | {} | {} |\n",
            c.name,
            if c.passed { "ok" } else { "FAILED" },
            c.detail
        );
    }
    m += "\n| node | RSS first → last (MiB) | RSS slope, 2nd half (MiB/h) | own fds min–max | own fds slope (/h) | client connections | flushes | compactions | stalls |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for n in &s.nodes {
        m += &format!(
            "| {} | {:.0} → {:.0} | {:+.1} | {:.0}–{:.0} | {:+.1} | {:.0}–{:.0} | {:.0} | {:.0} | {:.0} |\n",
            n.url,
            n.rss_first_mib,
            n.rss_last_mib,
            n.rss_slope_mib_per_hour,
            n.fds_min,
            n.fds_max,
            n.fds_slope_per_hour,
            n.connections_min,
            n.connections_max,
            n.flushes,
            n.compactions,
            n.stalls
        );
    }
    m += "\n| window start (s) | requests | p50 (ms) | p99 (ms) | max (ms) |\n| ---: | ---: | ---: | ---: | ---: |\n";
    for w in &s.windows {
        m += &format!(
            "| {:.0} | {} | {:.2} | {:.2} | {:.1} |\n",
            w.t_s, w.requests, w.p50_ms, w.p99_ms, w.max_ms
        );
    }
    m += "\nCharts: soak-rss.svg, soak-fds.svg, soak-p99.svg; the load's own report is in report/.\n";
    m
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
        max_connections: 10_000,
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
        during: DuringArgs {
            check: true,
            check_clients: a.check_clients,
            check_rate: a.check_rate,
            ..DuringArgs::default()
        },
    };
    let run = crate::load::run_on::<LocalCluster>(&la, None)?;
    crate::report::write_dir(&out, &run.report, &run.scrapes)
        .map_err(|e| format!("{}: {e}", out.display()))?;
    print!("{}", crate::load::summary(run.trial(), &run.outcome));
    let t = run.trial();
    let from = t.started_s;
    let end = t.started_s + t.duration_s.max(1.0);
    let half = from + (end - from) / 2.0;
    let (ws, p99_first, p99_last) = windows(&hlog, from, a.window)?;
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
        p99_first_quarter_ms: p99_first,
        p99_last_quarter_ms: p99_last,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_finds_a_line_and_its_start() {
        let pts: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 3.0 + 2.0 * i as f64)).collect();
        let (slope, at) = fit(&pts).unwrap();
        assert!((slope - 2.0).abs() < 1e-9 && (at - 3.0).abs() < 1e-9);
        assert!(fit(&[(1.0, 1.0)]).is_none());
        assert!(fit(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }

    fn sample(t: f64, rss_mib: f64, fds: f64) -> ServerSample {
        ServerSample {
            t_s: t,
            rss_bytes: Some(rss_mib * 1024.0 * 1024.0),
            open_fds: Some(fds),
            flushes: Some(if (t as u64).is_multiple_of(10) {
                1.0
            } else {
                0.0
            }),
            compactions: Some(0.0),
            ..ServerSample::default()
        }
    }

    #[test]
    fn a_leak_in_the_second_half_fails_and_a_sawtooth_does_not() {
        // A memtable's sawtooth (8 MiB up, then flushed) around a flat mean.
        let flat: Vec<ServerSample> = (0..600)
            .map(|i| sample(i as f64, 200.0 + (i % 60) as f64 * 8.0 / 60.0, 40.0))
            .collect();
        // Flat, then 1 MiB and one descriptor more every 5 s.
        let leak: Vec<ServerSample> = (0..600)
            .map(|i| {
                let over = (i as f64 - 300.0).max(0.0) / 5.0;
                sample(i as f64, 200.0 + over, 40.0 + over)
            })
            .collect();
        let f = node_trend("a", &flat, 300.0);
        let l = node_trend("b", &leak, 300.0);
        assert!(f.rss_rise_mib.abs() < 2.0, "{f:?}");
        assert!(l.rss_rise_mib > 50.0 && l.fds_rise > 50.0, "{l:?}");
        assert_eq!(f.flushes, 60.0);
        let soak = |nodes| Soak {
            rate: 100.0,
            breaking_point: None,
            duration_s: 600.0,
            requests: 60_000,
            errors: 0,
            error_pct: 0.0,
            windows: vec![],
            p99_first_quarter_ms: 2.0,
            p99_last_quarter_ms: 2.5,
            p99_slope_ms_per_hour: 0.0,
            nodes,
            check: None,
            criteria: vec![],
            passed: false,
        };
        let failed = |s: &Soak| -> Vec<String> {
            judge(s, 0.1)
                .into_iter()
                .filter(|c| !c.passed)
                .map(|c| c.name)
                .collect()
        };
        // No checker and no compaction fail on their own; the flat node's
        // resources pass, the leaking node's fail.
        assert_eq!(
            failed(&soak(vec![f])),
            ["nothing lost", "flushes and compactions ran on a"]
        );
        let bad = failed(&soak(vec![l]));
        assert!(bad.contains(&"RSS flat on b".to_string()), "{bad:?}");
        assert!(bad.contains(&"open files flat on b".to_string()), "{bad:?}");
        let mut drift = soak(vec![]);
        drift.p99_last_quarter_ms = 4.1;
        assert!(failed(&drift).contains(&"p99 without drift".to_string()));
    }
}
