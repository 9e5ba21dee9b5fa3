//! `strata load URL[,URL...]`: one run of the driver (open loop at a
//! constant or Poisson rate, or closed-loop clients) against one node or
//! several, with a live progress line, a wrk2-style summary (per node when
//! there are several), every node's metrics sampled on the same time axis,
//! and a report directory; or one share of a run cut over several
//! machines (`--segment`, `--start-at`). Also the pieces a sweep shares:
//! the target and workload arguments and turning a driver outcome into a
//! report trial. Owns the command's behaviour; must not pace or time
//! requests itself.
//!
//! | module | owns |
//! | --- | --- |
//! | `args` | the command line: the rate or clients, a run's share, its workers (the target is `experiment::target`'s) |
//! | `progress` | the live progress line |
//! | `text` | the wrk2-style summary, per node and of the cluster's client |

use std::time::{Duration, Instant, SystemTime};

use crate::experiment::slo::{load_ending, Ending};
use crate::load::driver::{self, Outcome, Pace, Plan};
use crate::report::model::{self, NodeSummary, Percentiles, Report, RunKind, ServerSample, Trial};
use crate::report::scrape::{Sampler, Scrapes};
use crate::units::rfc3339;

use crate::experiment::worker::Workers;

mod args;
mod progress;
mod text;
pub use crate::experiment::target::{TargetArgs, MAX_CONNECTIONS};
pub use args::{LoadArgs, ShareArgs};
pub use progress::Progress;
pub use text::{client_line, per_node_lines, summary};

/// A load run: the driver's outcome, the report trial, the whole report.
pub struct LoadRun {
    pub outcome: Outcome,
    pub report: Report,
    /// The nodes' `/metrics` before and after the run.
    pub scrapes: Scrapes,
}

impl LoadRun {
    pub fn trial(&self) -> &Trial {
        &self.report.trials[0]
    }
}

/// Who sends a trial: this process's driver, or workers, each its share
/// (`strata sweep --workers`), the target as the command line gave it.
#[derive(Clone, Copy)]
pub enum Generators<'a> {
    Here,
    Workers(&'a Workers, &'a TargetArgs),
}

/// Run one trial of `plan`, sent by `gen`, with the samples `sampler`
/// (of the plan's nodes) takes meanwhile (`origin` is the run's time zero
/// for the report's axes).
pub fn run_trial(
    gen: Generators,
    plan: &Plan,
    origin: Instant,
    progress: &Progress,
    prefix: &str,
    on_second: &mut dyn FnMut(&driver::Second),
    sampler: &Sampler,
) -> Result<(Outcome, Trial), String> {
    let client_before = plan.nodes.client.as_ref().map(|c| c.stats().snapshot());
    // The generator's threads from the end of the warm-up on.
    let mut own = crate::load::cpu::OwnThreads::default();
    let (outcome, workers) = match gen {
        Generators::Here => {
            let o = driver::run(plan, on_second, &mut |s| {
                if !s.warming {
                    own.mark();
                }
                progress.show(prefix, s)
            })?;
            (o, Vec::new())
        }
        Generators::Workers(w, target) => {
            progress.show(
                prefix,
                &driver::Snapshot {
                    warming: true,
                    ..Default::default()
                },
            );
            w.run(target, plan, on_second)?
        }
    };
    let own = own.since(&outcome.generator_threads);
    progress.finish();
    // The counted part's start: the run's first send (which may have
    // waited for `start_at`) plus the warm-up.
    let started_s = outcome
        .start
        .saturating_duration_since(origin)
        .as_secs_f64()
        + plan.warmup.as_secs_f64();
    let end_s = started_s + outcome.elapsed.as_secs_f64();
    let during = |v: Vec<ServerSample>| -> Vec<ServerSample> {
        v.into_iter()
            .filter(|s| s.t_s > started_s && s.t_s <= end_s + 0.5)
            .collect()
    };
    let server = during(sampler.snapshot());
    let per_node = sampler.snapshot_nodes().into_iter().map(during).collect();
    let mut trial = to_trial(plan, &outcome, started_s, server, per_node);
    trial.generator_threads = own;
    if !workers.is_empty() {
        // The generator is the workers: their threads, their cores.
        let threads = (plan.threads.max(1) * workers.len()) as f64;
        trial.generator_run_queue_share = trial
            .generator_run_queue_share
            .map(|s| s * plan.threads.max(1) as f64 / threads);
        trial.workers = workers;
    }
    for (n, threads) in trial
        .per_node
        .iter_mut()
        .zip(sampler.threads_between(started_s, end_s + 0.5))
    {
        n.threads = threads;
    }
    trial.client = plan
        .nodes
        .client
        .as_ref()
        .zip(client_before)
        .map(|(c, before)| {
            c.stats()
                .snapshot()
                .into_iter()
                .zip(before)
                .map(|((name, after), (_, b))| (name.to_string(), after.saturating_sub(b)))
                .collect()
        });
    Ok((outcome, trial))
}

/// The report's view of one outcome: `server` holds the samples summed
/// over the nodes, `node_server` each node's own (in the plan's order).
pub fn to_trial(
    plan: &Plan,
    o: &Outcome,
    started_s: f64,
    server: Vec<ServerSample>,
    mut node_server: Vec<Vec<ServerSample>>,
) -> Trial {
    let (offered_rate, clients) = match plan.pace {
        Pace::Open { rate, .. } => (Some(rate), None),
        Pace::Closed { clients, .. } => (None, Some(clients)),
    };
    let (cpu, rss) = crate::report::model::cpu_and_rss(&server);
    node_server.resize(plan.nodes.len(), Vec::new());
    let per_node = plan
        .nodes
        .urls
        .iter()
        .zip(node_server)
        .enumerate()
        .map(|(i, (url, samples))| {
            let totals = o.per_node.get(i).copied().unwrap_or_default();
            let (cpu, rss) = crate::report::model::cpu_and_rss(&samples);
            NodeSummary {
                url: url.clone(),
                connections: totals.connections,
                requests: totals.requests,
                errors: totals.errors,
                server: samples,
                server_cpu_cores: cpu,
                server_rss_bytes: rss,
                threads: Vec::new(),
            }
        })
        .collect();
    Trial {
        offered_rate,
        clients,
        started_s,
        duration_s: o.elapsed.as_secs_f64(),
        // Dropped sends count as requests that failed: dropping must never
        // make a saturated target look healthy.
        requests: o.counted + o.dropped,
        achieved_rate: o.achieved_rate(),
        errors: o.errors + o.dropped,
        error_pct: 100.0 * (o.errors + o.dropped) as f64 / (o.counted + o.dropped).max(1) as f64,
        latency: Percentiles::from_hist(&o.all),
        per_op: o
            .per_op
            .iter()
            .map(|p| model::OpSummary {
                op: p.op.to_string(),
                requests: p.requests,
                errors: p.errors,
                latency: Percentiles::from_hist(&p.hist),
            })
            .collect(),
        spectrum: model::spectrum_from_hist(&o.all),
        timeline: o
            .timeline
            .iter()
            .map(|s| model::Second {
                t_s: started_s + s.index as f64,
                requests: s.requests,
                errors: s.errors,
                p50_ms: s.p50_us as f64 / 1000.0,
                p99_ms: s.p99_us as f64 / 1000.0,
                max_ms: s.max_us as f64 / 1000.0,
                per_node: s
                    .per_node
                    .iter()
                    .map(|&(requests, errors, p99_us)| model::NodeSecond {
                        requests,
                        errors,
                        p99_ms: p99_us as f64 / 1000.0,
                    })
                    .collect(),
            })
            .collect(),
        meets_slo: None,
        why: Vec::new(),
        late_sends: o.late,
        max_lag_ms: o.max_lag.as_secs_f64() * 1000.0,
        dropped_sends: o.dropped,
        unfinished: o.unfinished,
        connections_opened: Some(o.connections),
        capped_sends: o.capped,
        generator_cpu_cores: None,
        machine_cpu_cores: None,
        distinct_keys: Some(o.distinct_keys),
        server_cpu_cores: cpu,
        server_rss_bytes: rss,
        server,
        per_node,
        slowest: crate::load::slowest::breakdown(&o.slowest, &plan.nodes.urls),
        generator_late_sends: o.generator_late,
        resources: Vec::new(),
        repeat: None,
        // Of each thread's wall time, waiting for a CPU.
        client: None,
        generator_threads: Vec::new(),
        workers: Vec::new(),
        failed_statuses: o.failed_statuses(),
        first_failure: o.first_failure_words(&plan.nodes.urls),
        generator_run_queue_share: (!(o.generator_on_cpu + o.generator_run_queue).is_zero()).then(
            || {
                o.generator_run_queue.as_secs_f64()
                    / (o.elapsed.as_secs_f64() * plan.threads.max(1) as f64).max(1e-3)
            },
        ),
    }
}

/// Run the load and build its report (nothing is written or printed).
/// With `--fault`, the faults go to the cluster `strata cluster up` runs
/// in `--cluster-dir`, through its control socket.
pub fn run(a: &LoadArgs) -> Result<LoadRun, String> {
    if a.during.faults.is_empty() {
        return run_on::<crate::nemesis::control::Control>(a, None);
    }
    let mut c = crate::nemesis::control::Control::connect(&a.during.cluster_dir)?;
    run_on(a, Some(&mut c))
}

/// [`run`], with the faults of `--fault` injected into `target` (a
/// cluster the lab started).
pub fn run_on<T: crate::nemesis::schedule::Target + Send>(
    a: &LoadArgs,
    target: Option<&mut T>,
) -> Result<LoadRun, String> {
    let mut plan = a.plan()?;
    let workers = a.workers.connect()?;
    a.target.maybe_preload(&plan.nodes, &plan.workload)?;
    if workers.is_some() && plan.start_at.is_none() {
        // Time for the request to reach every worker.
        plan.start_at = Some(SystemTime::now() + crate::experiment::worker::client::LEAD);
    }
    // The instant the run starts, fixed now: the interval log and the
    // report carry it, and a share of a run waits for it here (the faults'
    // and the samples' clock starts just before it).
    let (start, late) = driver::resolve_start(plan.start_at);
    plan.start_at = Some(start);
    let wait = start.duration_since(SystemTime::now());
    if let (Ok(wait), None) = (wait, &workers) {
        if !a.target.quiet && !a.target.json && wait > Duration::from_secs(1) {
            eprintln!("Waiting until {} to start", crate::units::rfc3339_ms(start));
        }
        std::thread::sleep(wait.saturating_sub(Duration::from_millis(100)));
    }
    let share = share_summary(&plan, a.share.start_at, start, late);
    let origin = Instant::now();
    let started_at = rfc3339(SystemTime::now());
    let sampler = Sampler::start(&plan.nodes.targets, origin, Duration::from_secs(1));
    let progress = Progress::new(a.target.quiet || a.target.json);
    let mut hdr = match &a.hdr {
        Some(p) => Some(
            crate::report::hdrlog::HdrLogWriter::create_share(
                p,
                start,
                share.as_ref().map(|s| s.segment.as_str()),
            )
            .map_err(|e| format!("{}: {e}", p.display()))?,
        ),
        None => None,
    };
    let mut hdr_err = None;
    let warm = plan.warmup.as_secs_f64();
    let mut on_second = |s: &driver::Second| {
        if let Some(w) = hdr.as_mut() {
            for (op, h) in &s.per_op {
                if let Err(e) = w.interval(warm + s.index as f64, 1.0, op, h) {
                    hdr_err.get_or_insert(e.to_string());
                }
            }
        }
    };
    let expected = plan.warmup + plan.duration + plan.drop_after;
    let (r, found) = crate::nemesis::during::around(
        &a.during,
        &plan.nodes.urls,
        plan.nodes.client.as_ref(),
        target,
        origin,
        expected,
        || {
            let gen = match &workers {
                Some(w) => Generators::Workers(w, &a.target),
                None => Generators::Here,
            };
            run_trial(gen, &plan, origin, &progress, "", &mut on_second, &sampler)
        },
    )?;
    let scrapes = sampler.stop();
    let (outcome, trial) = r?;
    let faults = crate::report::alongside::with_recovery(found.faults, &trial);
    let check = found
        .checked
        .as_ref()
        .map(|c| crate::report::alongside::check_summary(c, found.linear.as_ref()));
    if let Some(w) = hdr {
        w.finish().map_err(|e| e.to_string())?;
    }
    if let Some(e) = hdr_err {
        return Err(format!("writing the HDR log: {e}"));
    }
    let how = match plan.pace {
        Pace::Open { rate, .. } => format!("{rate} req/s offered"),
        Pace::Closed { clients, .. } => format!("{clients} closed-loop clients"),
    };
    let report = Report {
        schema: crate::report::model::SCHEMA,
        faults,
        check,
        kind: RunKind::Load,
        title: format!("load of {}: {how}", a.target.url),
        started_at,
        command: command_line(),
        target: a.target.url.clone(),
        workload: plan.workload.describe(),
        slo: None,
        trials: vec![trial],
        breaking_point: None,
        verdict: None,
        cause: None,
        cause_node: None,
        verdict_trial_rate: None,
        breaking_range: None,
        ranking: Vec::new(),
        host_moved: Vec::new(),
        cut_short: None,
        deciding_trial: None,
        machine: None,
        unseen: scrapes.refusals(),
        share,
        model_check: None,
    };
    Ok(LoadRun {
        outcome,
        report,
        scrapes,
    })
}

/// What the report says of a run's share: which, and when it started
/// against the instant asked for (`None` for a whole run started at once).
fn share_summary(
    plan: &Plan,
    asked: Option<SystemTime>,
    start: SystemTime,
    late: Option<Duration>,
) -> Option<model::ShareSummary> {
    let segment = plan.workload.segment();
    if segment.is_whole() && asked.is_none() {
        return None;
    }
    Some(model::ShareSummary {
        segment: segment.to_string(),
        start_at: asked.map(crate::units::rfc3339_ms),
        started: crate::units::rfc3339_ms(start),
        late_ms: late.map(|d| d.as_secs_f64() * 1000.0),
    })
}

/// `strata load`: run, print the summary, write the report, and say how
/// the run ended against its objective (`slo::load_ending`).
pub fn main(a: &LoadArgs) -> Result<Ending, String> {
    let objective = a.objective.parse()?;
    let r = run(a)?;
    let dir = a.target.out_dir("load");
    crate::report::write_dir(&dir, &r.report, &r.scrapes)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if a.target.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r.report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", summary(r.trial(), &r.outcome));
        if let Some(s) = &r.report.share {
            println!("  Share: {}", crate::report::markdown::share_words(s));
        }
        print!(
            "{}",
            crate::report::alongside::summary(&r.report.faults, r.report.check.as_ref())
        );
        println!("  Report: {}", dir.join("report.html").display());
    }
    Ok(load_ending(
        objective.as_ref(),
        r.trial(),
        &|q| r.outcome.all.value_at_quantile(q) as f64 / 1000.0,
        r.report.check.as_ref().is_some_and(|c| !c.passed),
    ))
}

/// The command line, for the report.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}
