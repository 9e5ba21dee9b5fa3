//! `strata sweep URL[,URL...]`: finds the breaking point by itself. Each trial
//! offers one constant rate (long enough to hold `--tail-samples` requests
//! past the SLO's percentile); `search` says which rate next: doubling
//! until a trial fails the SLO (or achieves less than 95% of what it
//! offered), bisection, then the deciding rates again until each has its
//! repeats, judged on its runs together. One row per trial, as in libri's experiment table (with each
//! node's share under it when there are several), then the breaking point
//! with its range and a verdict naming why the target broke, from each
//! trial's resource readings and its slowest requests. Every trial runs
//! against the same list of nodes. Owns the sequence of trials; must not
//! pace requests or read metrics itself.

use std::time::{Duration, Instant, SystemTime};

use crate::experiment::slo::{fmt_num, nothing_succeeded, positive, Ending, SloArgs};
use crate::experiment::target::TargetArgs;
use crate::experiment::trial::{run_trial, Generators, Progress};
use crate::experiment::verdict::{replay::replay, Machine};
use crate::load::search::Search;
use crate::report::model::{Report, RunKind, Trial};
use crate::report::scrape::{Sampler, Scrapes};
use crate::units::rfc3339;

#[derive(clap::Args, Clone, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub objective: SloArgs,
    /// First offered rate, in requests per second.
    #[arg(long, default_value_t = 1000.0)]
    pub start_rate: f64,
    /// Never offer more than this.
    #[arg(long, default_value_t = 1_000_000.0)]
    pub max_rate: f64,
    /// How long each trial is counted after its warm-up (10s, 1m; a bare
    /// number is seconds).
    #[arg(long, default_value_t = 10.0, value_parser = crate::units::seconds)]
    pub duration: f64,
    /// Stop bisecting when the bracket is narrower than this fraction.
    #[arg(long, default_value_t = 0.05)]
    pub precision: f64,
    /// At most this many trials (repeats included).
    #[arg(long, default_value_t = 20)]
    pub max_trials: usize,
    /// Runs of each of the two rates that decide the breaking point (the
    /// highest that passed, the lowest that failed): each is judged on
    /// its runs together (their latencies merged), and the breaking
    /// point's range is read from them. 1 turns repeats off.
    #[arg(long, default_value_t = 3)]
    pub repeats: u32,
    /// Requests each trial must hold past the SLO's highest percentile
    /// (100: a p99 from 10,000 requests); a trial at a low rate runs longer
    /// than --duration for them, up to 4 times as long.
    #[arg(long, default_value_t = 100)]
    pub tail_samples: u64,
    /// Rest between trials, so queues drain (1s, 500ms; a bare number is
    /// seconds).
    #[arg(long, default_value_t = 1.0, value_parser = crate::units::seconds)]
    pub pause: f64,
    /// Run the consistency checker's clients alongside every trial and
    /// check their history at the end (a section of the report).
    #[arg(long)]
    pub check: bool,
    /// Closed-loop clients of --check (their requests add to the load).
    #[arg(long, default_value_t = 4)]
    pub check_clients: u32,
    #[command(flatten)]
    pub workers: crate::experiment::worker::WorkersArgs,
}

/// The table's header and one row per trial.
pub fn header() -> String {
    format!(
        "{:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>8} {:>6}  {}",
        "offered",
        "achieved",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "errors%",
        "cpu",
        "rss MiB",
        "late%",
        "SLO"
    )
}

pub fn row(t: &Trial, why: &[String]) -> String {
    let l = &t.latency;
    format!(
        "{:>10.0} {:>10.0} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>8} {:>6}  {}",
        t.offered_rate.unwrap_or(0.0),
        t.achieved_rate,
        fmt_num(l.p50_ms),
        fmt_num(l.p95_ms),
        fmt_num(l.p99_ms),
        fmt_num(l.p999_ms),
        fmt_num(l.max_ms),
        fmt_num(t.error_pct),
        t.server_cpu_cores
            .map(fmt_num)
            .unwrap_or_else(|| "-".into()),
        t.server_rss_bytes
            .map(|b| format!("{:.0}", b / 1048576.0))
            .unwrap_or_else(|| "-".into()),
        fmt_num(100.0 * t.late_sends as f64 / t.requests.max(1) as f64),
        if why.is_empty() {
            "met".to_string()
        } else {
            format!("FAILED: {}", why.join("; "))
        }
    )
}

/// Under a trial's row with several nodes: each node's share of the
/// requests and its errors.
pub fn node_row(t: &Trial) -> String {
    let total = t.per_node.iter().map(|n| n.requests).sum::<u64>().max(1);
    let parts: Vec<String> = t
        .per_node
        .iter()
        .map(|n| {
            format!(
                "{} {:.1}% ({} errors)",
                n.url,
                100.0 * n.requests as f64 / total as f64,
                n.errors
            )
        })
        .collect();
    format!("{:>10} per node: {}", "", parts.join(", "))
}

/// Run the sweep; `on_line` receives the table as it grows, and the
/// verdict. Returns the report and the target's `/metrics` before the
/// first trial and after the last.
pub fn run(a: &SweepArgs, on_line: &mut dyn FnMut(&str)) -> Result<(Report, Scrapes), String> {
    let slo = a.objective.parse()?;
    if !positive(a.start_rate) || !positive(a.duration) || a.max_trials == 0 {
        return Err("--start-rate, --duration and --max-trials must be positive".into());
    }
    let t = &a.target;
    let nodes = t.nodes()?;
    let workload = t.workload()?;
    let workers = a.workers.connect()?;
    let gen = match &workers {
        Some(w) => {
            if !t.quiet && !t.json {
                eprintln!(
                    "Each trial split among {} workers: {}",
                    w.len(),
                    w.urls.join(", ")
                );
            }
            Generators::Workers(w, t)
        }
        None => Generators::Here,
    };
    t.maybe_preload(&nodes, &workload)?;
    let local = nodes.all_loopback();
    // The machine's cores (all of them: the generator may be pinned to
    // some, and the nodes to others).
    let cores = local.then(crate::load::cpu::online_cores).flatten();
    let origin = Instant::now();
    let started_at = rfc3339(SystemTime::now());
    let sampler = Sampler::start(&nodes.targets, origin, Duration::from_secs(1));
    let progress = Progress::new(t.quiet || t.json);
    let mut trials: Vec<Trial> = Vec::new();
    let mut reasons: Vec<Vec<String>> = Vec::new();
    let mut search = Search::new(a.start_rate, a.max_rate, a.precision, a.repeats);
    let mut pools = Pools::default();
    // The SLO's highest percentile: a trial holds `tail_samples` past it.
    let q = slo
        .bounds
        .iter()
        .map(|b| b.quantile)
        .fold(0.99f64, f64::max)
        .min(0.99999);
    let duration_at = |rate: f64| {
        (a.tail_samples as f64 / ((1.0 - q) * rate)).clamp(a.duration, 4.0 * a.duration)
    };
    on_line(&header());
    let during = crate::nemesis::during::DuringArgs {
        check: a.check,
        check_clients: a.check_clients,
        ..Default::default()
    };
    // The checker's clients run until the last trial ends, at most this.
    let expected = Duration::from_secs_f64(
        a.max_trials as f64 * (4.0 * a.duration + t.warmup + a.pause + t.drop_after + 1.0),
    );
    let (result, found) = crate::nemesis::during::around::<crate::nemesis::control::Control, _>(
        &during,
        &nodes.urls,
        nodes.client.as_ref(),
        None,
        origin,
        expected,
        || {
            (|| -> Result<(), String> {
                while trials.len() < a.max_trials {
                    let Some(rate) = search.next() else {
                        break;
                    };
                    if !trials.is_empty() && a.pause > 0.0 {
                        std::thread::sleep(Duration::from_secs_f64(a.pause));
                    }
                    let seed = t.seed.wrapping_add(trials.len() as u64);
                    let plan = t.plan(&nodes, &workload, t.open(rate), duration_at(rate), seed);
                    let span = crate::load::cpu::Span::start();
                    let prefix = format!("trial {} at {} req/s: ", trials.len() + 1, fmt_num(rate));
                    let (outcome, mut trial) = run_trial(
                        gen,
                        &plan,
                        origin,
                        &progress,
                        &prefix,
                        &mut |_| {},
                        &sampler,
                    )?;
                    let used = span.end();
                    trial.generator_cpu_cores = used.own;
                    trial.machine_cpu_cores = used.machine.filter(|_| local);
                    let why = slo.judge(&trial, &|q| {
                        outcome.all.value_at_quantile(q) as f64 / 1000.0
                    });
                    trial.meets_slo = Some(why.is_empty());
                    on_line(&row(&trial, &why));
                    if trial.per_node.len() > 1 {
                        on_line(&node_row(&trial));
                    }
                    search.record(rate, why.is_empty());
                    let together = pools.add(rate, &trial, &outcome.all);
                    let runs = search.at(rate);
                    if runs.len() > 1 {
                        trial.repeat = Some(runs.len() as u32);
                        let why = together.judge(&slo);
                        search.record_pooled(rate, why.is_empty());
                        on_line(&format!(
                            "{:>10} run {} at this rate: {} of {} met the SLO alone; together {}",
                            "",
                            runs.len(),
                            runs.iter().filter(|m| **m).count(),
                            runs.len(),
                            if why.is_empty() {
                                "they met it".to_string()
                            } else {
                                format!("they failed it ({})", why.join("; "))
                            }
                        ));
                    }
                    trials.push(trial);
                    reasons.push(why);
                }
                Ok(())
            })()
        },
    )?;
    let scrapes = sampler.stop();
    result?;
    let (pass, range) = search.breaking_point();
    // The lowest rate whose majority failed; if the trials ran out before
    // one had a majority, the lowest rate above the breaking point that
    // failed at all.
    let fail = search.bracket().1.or_else(|| {
        trials
            .iter()
            .filter(|t| t.meets_slo == Some(false))
            .filter_map(|t| t.offered_rate)
            .filter(|&r| pass.is_none_or(|p| r > p))
            .min_by(f64::total_cmp)
    });
    // The deciding trial: the last failing run at the lowest failing rate.
    let first_failure = fail.and_then(|f| {
        trials
            .iter()
            .rposition(|t| t.offered_rate == Some(f) && t.meets_slo == Some(false))
    });
    let trials_run = trials.len();
    let machine = Machine {
        cores,
        generator_cpus: crate::load::cpu::own_cpus(),
        objective_ms: slo.bounds.iter().map(|b| b.limit_ms).min_by(f64::total_cmp),
    };
    for (t, why) in trials.iter_mut().zip(reasons) {
        t.why = why;
        t.resources = crate::experiment::verdict::causes::readings(t, machine);
    }
    let check = found
        .checked
        .as_ref()
        .map(|c| crate::report::alongside::check_summary(c, found.linear.as_ref()));
    let mut report = Report {
        schema: crate::report::model::SCHEMA,
        faults: Vec::new(),
        check,
        kind: RunKind::Sweep,
        title: format!("sweep of {}", t.url),
        started_at,
        command: crate::experiment::trial::command_line(),
        target: t.url.clone(),
        workload: workload.describe(),
        slo: Some(slo.describe()),
        trials,
        breaking_point: pass,
        verdict: None,
        cause: None,
        cause_node: None,
        verdict_trial_rate: None,
        breaking_range: range,
        ranking: Vec::new(),
        host_moved: Vec::new(),
        cut_short: (trials_run >= a.max_trials && search.next().is_some()).then_some(trials_run),
        deciding_trial: first_failure,
        machine: Some(machine),
        unseen: scrapes.refusals(),
        share: None,
        model_check: None,
    };
    // The verdict from the report alone, as `strata report judge` gives it.
    let v = replay(&report)?;
    on_line("");
    on_line(&format!(
        "Breaking point: {}{}",
        match (pass, v.range) {
            (Some(p), Some((lo, hi, n))) => format!(
                "{} req/s ({}–{} over {n} repeats)",
                fmt_num(p),
                fmt_num(lo),
                fmt_num(hi)
            ),
            (Some(p), None) => format!("{} req/s", fmt_num(p)),
            (None, _) => "none: no rate met the SLO".into(),
        },
        match (v.host_moved.is_empty(), report.cut_short) {
            (false, _) => " (widened: the host changed under the sweep)",
            (true, Some(_)) => " (the search was cut short by --max-trials)",
            (true, None) => "",
        }
    ));
    on_line(&v.text);
    if let Some(c) = &report.check {
        on_line(crate::report::alongside::summary(&[], Some(c)).trim_end());
    }
    report.verdict = Some(v.text);
    report.cause = Some(v.cause);
    report.cause_node = v.node;
    report.verdict_trial_rate = v.trial_rate;
    report.ranking = v.ranking;
    report.host_moved = v.host_moved;
    report.breaking_range = v.range;
    // The capacity model checked against the breaking point just measured.
    let m = crate::experiment::model_check::check(&report);
    on_line(&m.words());
    report.model_check = Some(m);
    Ok((report, scrapes))
}

/// `strata sweep`: run, print the table and verdict, write the report; not
/// met when no rate met the objective or no request of any trial
/// succeeded, or the consistency check failed.
pub fn main(a: &SweepArgs) -> Result<Ending, String> {
    let json = a.target.json;
    let (report, scrapes) = run(a, &mut |line| {
        if !json {
            println!("{line}");
        }
    })?;
    let dir = a.target.out_dir("sweep");
    crate::report::write_dir(&dir, &report, &scrapes)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        println!("Report: {}", dir.join("report.html").display());
    }
    let (requests, errors) = report
        .trials
        .iter()
        .fold((0, 0), |(r, e), t| (r + t.requests, e + t.errors));
    if let Some(why) = nothing_succeeded(requests, errors) {
        return Ok(Ending::Unmet(why));
    }
    if report.breaking_point.is_none() {
        let lowest = report
            .trials
            .iter()
            .filter_map(|t| t.offered_rate)
            .fold(f64::INFINITY, f64::min);
        return Ok(Ending::Unmet(format!(
            "no rate met the objective ({}), down to {} req/s",
            report.slo.as_deref().unwrap_or("?"),
            fmt_num(lowest)
        )));
    }
    if report.check.as_ref().is_some_and(|c| !c.passed) {
        return Ok(Ending::Unmet(
            "the consistency check failed (see the report's section)".into(),
        ));
    }
    Ok(Ending::Met)
}

/// The runs at each rate taken together: their merged latencies, requests
/// and errors, so a repeated rate is judged on all its runs at once.
#[derive(Default)]
struct Pools(Vec<(f64, Pool)>);

struct Pool {
    latency: hdrhistogram::Histogram<u64>,
    trial: Trial,
    runs: u32,
}

impl Pools {
    /// Add a run at `rate`; the runs at that rate so far, together.
    fn add(&mut self, rate: f64, t: &Trial, latency: &hdrhistogram::Histogram<u64>) -> &Pool {
        let i = match self.0.iter().position(|(r, _)| *r == rate) {
            Some(i) => {
                let p = &mut self.0[i].1;
                // Same bounds (the driver's), so the merge cannot fail;
                // a failure would only leave the earlier runs' latencies.
                let _ = p.latency.add(latency);
                let n = p.runs as f64;
                p.trial.achieved_rate = (p.trial.achieved_rate * n + t.achieved_rate) / (n + 1.0);
                p.trial.requests += t.requests;
                p.trial.errors += t.errors;
                p.runs += 1;
                i
            }
            None => {
                self.0.push((
                    rate,
                    Pool {
                        latency: latency.clone(),
                        trial: t.clone(),
                        runs: 1,
                    },
                ));
                self.0.len() - 1
            }
        };
        &self.0[i].1
    }
}

impl Pool {
    /// Why the runs together failed the SLO (empty: they met it).
    fn judge(&self, slo: &crate::experiment::slo::Slo) -> Vec<String> {
        slo.judge(&self.trial, &|q| {
            self.latency.value_at_quantile(q) as f64 / 1000.0
        })
    }
}
