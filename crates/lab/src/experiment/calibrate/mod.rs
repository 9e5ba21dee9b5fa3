//! `strata calibrate URL`: predicts a node's breaking point from its own
//! measurements, without pushing it past its limit. Each step offers one
//! open-loop rate for a few seconds, reads the node's `/metrics` before and
//! after, and hands the difference to the simulator, which builds a model of
//! the node (admission, CPU per request, WAL group commit) and names its
//! capacity. The CPU a request costs falls as the node gets busier (a core
//! that idles between requests pays for waking up, cold caches and, in a
//! virtual machine, the hypervisor), so a model calibrated at a light load
//! underestimates the node: the next step runs at 90% of the capacity the
//! last one predicted, until two predictions agree. The simulator then
//! searches, in virtual time, the highest rate that meets the SLO: the
//! figure `strata sweep` measures the slow way.
//!
//! With several URLs the cluster's calibration runs instead
//! (`cluster.rs`, each step measured by `measure.rs`), with two steps at the end that price a write's value
//! size (`value.rs`). Either way the steps' own judgement against the SLO
//! checks the model's breaking point (`bracket.rs`).
//!
//! Owns that loop; must not model anything itself (`strata_sim` does) nor
//! pace requests (the driver does).

pub mod bracket;
pub mod cluster;
pub mod measure;
pub mod value;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use strata_sim::calibrate::fit::{fit, FitOptions, FitStep};
use strata_sim::calibrate::node::scenario_from_reading;
use strata_sim::calibrate::reading::Reading;
use strata_sim::predict::{Bound, Objective, Prediction};
use strata_sim::report::node::breaking_point;
use strata_sim::{simulate, CalibrateOptions};

use crate::experiment::slo::{fmt_num, positive, Slo, SloArgs, MIN_ACHIEVED};
use crate::experiment::target::TargetArgs;
use crate::experiment::trial::Progress;
use crate::load::driver;
use crate::report::scrape::{fetch_metrics, metric_sums};

#[derive(clap::Args, Clone, Debug)]
pub struct CalibrateArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The objective of the predicted breaking point, as for sweep.
    #[command(flatten)]
    pub objective: SloArgs,
    /// Rate of the first step, in requests per second.
    #[arg(long, default_value_t = 2000.0)]
    pub start_rate: f64,
    /// How long each step is measured after its warm-up (5s; a bare
    /// number is seconds).
    #[arg(long, default_value_t = 5.0, value_parser = crate::units::seconds)]
    pub duration: f64,
    /// At most this many steps.
    #[arg(long, default_value_t = 8)]
    pub steps: usize,
    /// Stop when two successive predictions of the capacity differ by less
    /// than this fraction.
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,
    /// CPU cores the node may use [default: the CPUs the node reports it
    /// may run on]. With several nodes on this machine: the cores they
    /// (and the generator) share; on separate machines: each node's.
    #[arg(long)]
    pub cores: Option<u32>,
    #[command(flatten)]
    pub sizing: strata_sim::report::cluster::SizingArgs,
}

/// A first step the generator cannot send is tried again at half its
/// rate, down to this.
pub const MIN_START_RATE: f64 = 100.0;

/// The next step runs at this share of the last predicted capacity: busy
/// enough to measure the node's cost under load, below its limit.
pub const NEXT_STEP_SHARE: f64 = 0.9;

/// One calibration step.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub offered: f64,
    pub achieved: f64,
    /// The node's CPU over the step, in cores.
    pub node_cpu_cores: Option<f64>,
    /// Process CPU per request over the step, µs.
    pub cpu_per_request_us: Option<f64>,
    /// The capacity the model built from this step predicts.
    pub capacity: f64,
    pub bottleneck: Option<String>,
    /// The load generator's CPU over the step, in cores (a cluster on this
    /// machine only: it shares the nodes' cores).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator_cpu_cores: Option<f64>,
    /// A cluster: the nodes' runtime parks per request, and the
    /// generator's sleeps per request (see `calibrate::cluster::fit_sleeps`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parks_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator_sleeps_per_request: Option<f64>,
    /// A cluster: the p99 the generator measured over the step, and the
    /// model's p99 at the step's rate, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_p99_ms: Option<f64>,
    /// The share of the node's cores' time the hypervisor took for other
    /// guests over the step (steal): the model stretches each request's
    /// CPU time by what of it the node's pause detector did not see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stolen_share: Option<f64>,
    /// The node served less than `SERVED_SHARE` of the offered rate even
    /// when the step ran again: the rate was past its limit at that moment
    /// (the machine slowed it). Its model is not used; the next step runs
    /// below what it served.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub overloaded: bool,
    /// The generator fell behind this step's schedule even when it ran
    /// again: the step did not offer its rate, so it is no evidence about
    /// the node; its model is not used and the climb ends there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generator_behind: bool,
    /// The CPU per request other work took on the node's cores, as the
    /// node counts them (their busy time less steal less its own CPU):
    /// the generator's when it shares them, the kernel's network work for
    /// the node's connections, a neighbour's. The model adds it to the
    /// node's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_cpu_per_request_us: Option<f64>,
    /// Whether the step met the SLO as a sweep's trial would (a failure
    /// counts only when the step, run once more, failed again); `None`:
    /// no evidence (the generator fell behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub met_slo: Option<bool>,
}

/// A step that serves less than this share of its offered rate overloaded
/// the node.
pub const SERVED_SHARE: f64 = 0.9;

/// Whether a step offered `rate` overloaded the node.
pub fn overloaded(o: &driver::Outcome, rate: f64) -> bool {
    o.achieved_rate() < SERVED_SHARE * rate
}

/// A step's worst lag below this is the generator's jitter, not a backlog:
/// its latencies (from intended send times) carry it, and the node saw its
/// rate.
pub const BACKLOG_LAG: std::time::Duration = std::time::Duration::from_millis(10);

/// Whether a step's generator fell behind its schedule: sends it dropped,
/// or sends it made late itself (its timer, its CPU) while its worst lag
/// grew past `BACKLOG_LAG`. Sends late for want of a free connection are
/// the node's doing, not the generator's; a generator whose sends are a
/// millisecond or two late (a debug build parsing long answers) still
/// offers its rate.
fn generator_behind(o: &driver::Outcome) -> Option<u64> {
    let share = |n: u64| {
        n as f64 > crate::experiment::slo::MAX_LATE * (o.counted + o.dropped).max(1) as f64
    };
    let backlog = o.max_lag > BACKLOG_LAG && share(o.generator_late);
    (share(o.dropped) || backlog).then_some(o.dropped + o.generator_late)
}

/// Whether a step's generator fell behind its schedule, or the node served
/// less than it was offered: either way the step did not measure the node
/// at its rate, and runs again.
fn step_went_wrong(o: &driver::Outcome, rate: f64) -> Option<String> {
    if let Some(behind) = generator_behind(o) {
        return Some(format!("the generator fell behind on {behind} sends"));
    }
    overloaded(o, rate).then(|| format!("the node served only {}", fmt_num(o.achieved_rate())))
}

/// What `strata calibrate` found (written as `calibration.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    pub target: String,
    pub workload: String,
    pub slo: String,
    pub steps: Vec<Step>,
    pub converged: bool,
    pub prediction: Prediction,
    /// The model of the last step, as `strata sim` reads it.
    pub scenario_file: PathBuf,
    /// With several URLs: replication, the step through one node, the
    /// what-ifs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<cluster::ClusterCalibration>,
    /// The steps' own judgement against the SLO, and what it did to the
    /// model's breaking point (`bracket.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<bracket::Evidence>,
    /// The answer's range (`strata_sim::calibrate::fit`): what the steps'
    /// models disagree on and how the host moved between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<(f64, f64)>,
    /// Why there is no answer: the host moved too much between the steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_moved: Option<String>,
}

/// The next rate, or `None` when the last two capacities agree.
pub fn next_step(capacities: &[f64], tolerance: f64) -> Option<f64> {
    let last = *capacities.last()?;
    if let [.., prev, _] = capacities {
        if ((last - prev) / last).abs() < tolerance {
            return None;
        }
    }
    Some(last * NEXT_STEP_SHARE)
}

/// A step's measured latency as (quantile, seconds), from the spectrum a
/// sweep's trial keeps of it.
pub fn spectrum(h: &hdrhistogram::Histogram<u64>) -> Vec<(f64, f64)> {
    latency_of(&crate::report::model::spectrum_from_hist(h))
}

/// A latency spectrum as (quantile, seconds), as the fit reads it.
pub fn latency_of(points: &[crate::report::model::SpectrumPoint]) -> Vec<(f64, f64)> {
    points
        .iter()
        .map(|p| (p.quantile, p.latency_ms / 1e3))
        .collect()
}

/// The SLO in the simulator's terms.
pub fn objective(slo: &Slo) -> Objective {
    Objective {
        bounds: slo
            .bounds
            .iter()
            .map(|b| Bound {
                quantile: b.quantile,
                limit_ns: (b.limit_ms * 1e6).round() as u64,
            })
            .collect(),
        max_errors: slo.max_errors,
        min_achieved: MIN_ACHIEVED,
    }
}

/// `name`'s increase from `before` to `after` (parsed `/metrics`).
fn delta(before: &HashMap<String, f64>, after: &HashMap<String, f64>, name: &str) -> Option<f64> {
    Some(after.get(name)? - before.get(name).copied().unwrap_or(0.0))
}

/// Run the calibration; `on_line` receives the table as it grows.
pub fn run(
    a: &CalibrateArgs,
    out: &Path,
    on_line: &mut dyn FnMut(&str),
) -> Result<Calibration, String> {
    let slo = a.objective.parse()?;
    if !positive(a.start_rate) || !positive(a.duration) || a.steps == 0 {
        return Err("--start-rate, --duration and --steps must be positive".into());
    }
    let t = &a.target;
    let target = t.nodes()?;
    if target.len() > 1 {
        return cluster::run(a, &target, out, on_line);
    }
    if a.sizing.size_for.is_some() {
        return Err(
            "--size-for needs the cluster's calibration: give every node's URL (URL1,URL2,...)"
                .into(),
        );
    }
    let workload = t.workload()?;
    t.maybe_preload(&target, &workload)?;
    let url = t.url.trim_end_matches('/').to_string();
    let progress = Progress::new(t.quiet || t.json);
    // A node on this machine whose cores the generator may use too: the
    // model's cores serve the other work on them as well.
    let shares = target.all_loopback() && cluster::generator_shares_cores(&target);
    if shares {
        on_line("the node shares this machine's cores with the generator: the model's CPU per request includes the other work on them");
    }
    on_line(&format!(
        "{:>10} {:>10} {:>9} {:>12} {:>12}  {}",
        "offered", "achieved", "node cpu", "cpu/req µs", "capacity", "bottleneck"
    ));
    let mut steps: Vec<Step> = Vec::new();
    let mut fit_steps: Vec<FitStep> = Vec::new();
    let mut capacities = Vec::new();
    let mut last_scenario = None;
    let mut rate = a.start_rate;
    let mut converged = false;
    for i in 0..a.steps {
        let mut before = fetch_metrics(&url).map_err(|e| format!("{url}/metrics: {e}"))?;
        let seed = t.seed.wrapping_add(i as u64);
        let plan = t.plan(&target, &workload, t.open(rate), a.duration, seed);
        let prefix = format!("step {} at {} req/s: ", i + 1, fmt_num(rate));
        // One run of the step, and the node's metrics after it.
        // One run of the step, the node's metrics after it, and this
        // process's CPU over it (the generator's, in cores' seconds).
        let run_once = || -> Result<_, String> {
            let c0 = measure::own_cpu().map(|c| c.0);
            let o = driver::run(&plan, &mut |_| {}, &mut |s| progress.show(&prefix, s))?;
            progress.finish();
            let generator = measure::own_cpu().zip(c0).map(|(c1, c0)| c1.0 - c0);
            let after = fetch_metrics(&url).map_err(|e| format!("{url}/metrics: {e}"))?;
            Ok((o, after, generator))
        };
        let (mut o, mut after, mut generator_s) = run_once()?;
        // A step whose generator fell behind (a stall of this process, a
        // busy machine) did not offer its rate, and one the node could not
        // carry (the machine slowed it, or the last prediction was high)
        // measured a queue: either way not the node at that rate. Run it
        // again, at most twice.
        for _ in 0..2 {
            let Some(why) = step_went_wrong(&o, rate) else {
                break;
            };
            on_line(&format!(
                "  (step at {} req/s: {why}; running it again)",
                fmt_num(rate)
            ));
            before = after;
            (o, after, generator_s) = run_once()?;
        }
        // A step that failed the SLO runs once more before it counts as
        // evidence that the breaking point is below its rate (a sweep
        // repeats a deciding rate likewise).
        let mut met = bracket::meets(&o, rate, &slo);
        if !met && generator_behind(&o).is_none() && !overloaded(&o, rate) {
            on_line(&format!(
                "  (step at {} req/s failed the SLO (p99 {} ms); running it again)",
                fmt_num(rate),
                fmt_num(o.all.value_at_quantile(0.99) as f64 / 1e3)
            ));
            before = after;
            (o, after, generator_s) = run_once()?;
            met = bracket::meets(&o, rate, &slo);
        }
        // The window the node's counters cover includes the warm-up.
        let secs = o.elapsed.as_secs_f64() + t.warmup;
        let (m0, m1) = (metric_sums(&before), metric_sums(&after));
        let cpu = delta(&m0, &m1, strata_api::metrics::CPU_SECONDS);
        let reqs = delta(&m0, &m1, strata_api::metrics::HTTP_REQUESTS);
        let stolen_share =
            delta(&m0, &m1, strata_api::metrics::ALLOWED_CPUS_STOLEN_SECONDS).map(|s| {
                let cpus = m1.get(strata_api::metrics::PROCESS_CPUS).copied();
                s / (secs * cpus.unwrap_or(1.0).max(1.0))
            });
        // What the node's cores did besides the node, per request, as the
        // node counts them (busy, less the hypervisor's steal, less its
        // own CPU): the generator's work when it shares them, the
        // kernel's network work for the node's connections, a neighbour.
        // The node gets only what is left of them; steal is priced apart.
        let stolen_s =
            delta(&m0, &m1, strata_api::metrics::ALLOWED_CPUS_STOLEN_SECONDS).unwrap_or(0.0);
        // Of the other work, the generator's grows with the rate (per
        // request); the rest does not (cores' worth), as a sweep's check
        // reads its trials (`Reading::from_samples`).
        let other_s = delta(&m0, &m1, strata_api::metrics::ALLOWED_CPUS_BUSY_SECONDS)
            .zip(cpu)
            .map(|(b, c)| (b - stolen_s - c).max(0.0));
        let generator_s = other_s
            .zip(generator_s.filter(|_| shares))
            .map(|(o, g)| g.clamp(0.0, o));
        let shared = generator_s.zip(reqs).map(|(g, n)| g / n.max(1.0));
        let opts = CalibrateOptions {
            cores: a.cores,
            baseline: Some(before.clone()),
            name: Some(format!("{} calibrated at {} req/s", url, fmt_num(rate))),
            shared_per_request: shared,
            background_cores: other_s.map(|o| (o - generator_s.unwrap_or(0.0)) / secs),
            ..Default::default()
        };
        let reading = Reading::from_metrics(&after, &opts).map_err(|e| e.to_string())?;
        let sc = scenario_from_reading(&reading, &opts).map_err(|e| e.to_string())?;
        let (_, an) = simulate(&sc, Path::new("."), sc.seed).map_err(|e| e.to_string())?;
        let step = Step {
            offered: rate,
            achieved: o.achieved_rate(),
            node_cpu_cores: cpu.map(|c| c / secs),
            cpu_per_request_us: cpu.zip(reqs).map(|(c, n)| c / n.max(1.0) * 1e6),
            capacity: an.capacity,
            bottleneck: an.bottleneck.clone(),
            generator_cpu_cores: None,
            parks_per_request: None,
            generator_sleeps_per_request: None,
            p99_ms: Some(o.all.value_at_quantile(0.99) as f64 / 1e3),
            model_p99_ms: None,
            overloaded: overloaded(&o, rate),
            generator_behind: generator_behind(&o).is_some(),
            shared_cpu_per_request_us: other_s.zip(reqs).map(|(o, n)| o / n.max(1.0) * 1e6),
            met_slo: generator_behind(&o).is_none().then_some(met),
            stolen_share,
        };
        if !step.overloaded && !step.generator_behind {
            fit_steps.push(FitStep {
                rate,
                reading,
                met: step.met_slo,
                latency: spectrum(&o.all),
            });
        }
        on_line(&format!(
            "{:>10.0} {:>10.0} {:>9} {:>12} {:>12.0}  {}",
            step.offered,
            step.achieved,
            step.node_cpu_cores
                .map(fmt_num)
                .unwrap_or_else(|| "-".into()),
            step.cpu_per_request_us
                .map(fmt_num)
                .unwrap_or_else(|| "-".into()),
            step.capacity,
            step.bottleneck.as_deref().unwrap_or("-")
        ));
        if step.generator_behind && last_scenario.is_none() && rate / 2.0 >= MIN_START_RATE {
            // Nothing measured yet: the first rate was beyond this
            // generator (a debug build, a busy machine). Start lower.
            on_line(&format!(
                "  (the generator could not send {} req/s from this machine: starting again at {})",
                fmt_num(rate),
                fmt_num(rate / 2.0)
            ));
            steps.push(step);
            rate /= 2.0;
            continue;
        }
        if step.generator_behind {
            // Not evidence about the node: the generator did not send the
            // rate. Nothing higher can be measured from here either.
            on_line(&format!(
                "  (the generator could not send {} req/s from this machine: this step is no evidence about the node, and the climb ends; run the generator elsewhere or with --workers)",
                fmt_num(rate)
            ));
            steps.push(step);
            break;
        }
        if step.overloaded {
            // Past the limit: the node can carry at most what it served.
            on_line("  (the node could not carry this rate: stepping down)");
            rate = step.achieved * NEXT_STEP_SHARE;
            last_scenario.get_or_insert(sc);
            steps.push(step);
            continue;
        }
        capacities.push(an.capacity);
        steps.push(step);
        last_scenario = Some(sc);
        match next_step(&capacities, a.tolerance) {
            Some(r) => rate = r,
            None => {
                converged = true;
                break;
            }
        }
    }
    let sc = last_scenario.ok_or("no step ran")?;
    // The one fitting path a sweep's check uses too: the top step's model
    // (with what it measured beyond the model), its range, the host.
    let (mut prediction, sc, range, host_moved) = if fit_steps.is_empty() {
        let p = breaking_point(&sc, Path::new("."), sc.seed, &objective(&slo), 0.02)?;
        (p, sc, None, None)
    } else {
        let fo = FitOptions {
            calibrate: CalibrateOptions {
                cores: a.cores,
                ..Default::default()
            },
            duration: sc.duration,
            warmup: sc.warmup,
            seed: sc.seed,
            precision: 0.02,
        };
        let f = fit(&fit_steps, &objective(&slo), &fo)?;
        let mut p = f.prediction.clone();
        p.breaking_point = f.model;
        let range = f.low.zip(f.high);
        (p, f.scenario, range, f.host_moved)
    };
    // The steps' own evidence against the model's breaking point.
    let judged: Vec<(f64, Option<bool>)> = steps.iter().map(|s| (s.offered, s.met_slo)).collect();
    let mut bisect = |r: f64| -> Result<Option<bool>, String> {
        let seed = t.seed.wrapping_add(100 + r as u64);
        let plan = t.plan(&target, &workload, t.open(r), a.duration, seed);
        let prefix = format!("bracket step at {} req/s: ", fmt_num(r));
        bracket::judge_twice(r, &slo, on_line, &mut || {
            let o = driver::run(&plan, &mut |_| {}, &mut |s| progress.show(&prefix, s))?;
            progress.finish();
            Ok(generator_behind(&o).is_none().then_some(o))
        })
    };
    let (evidence, answer) = bracket::settle(&judged, prediction.breaking_point, &mut bisect)?;
    // A host that moved too much between the steps leaves no answer, said
    // rather than a number the steps disagree on.
    prediction.breaking_point = answer.filter(|_| host_moved.is_none());
    let scenario_file = save_scenario(out, sc.to_toml()?)?;
    let c = Calibration {
        target: t.url.clone(),
        workload: workload.describe(),
        slo: slo.describe(),
        steps,
        converged,
        prediction,
        scenario_file,
        cluster: None,
        evidence: Some(evidence),
        range,
        host_moved,
    };
    save_calibration(out, &c)?;
    Ok(c)
}

/// What the steps said against the model, in a line.
pub fn evidence_line(e: &bracket::Evidence) -> String {
    let model = e
        .model_breaking_point
        .map(|m| fmt_num(m.round()))
        .unwrap_or_else(|| "none".into());
    let (met, failed) = (
        e.bracket
            .met
            .map(|m| fmt_num(m.round()))
            .unwrap_or_else(|| "no rate".into()),
        e.bracket
            .failed
            .map(|m| fmt_num(m.round()))
            .unwrap_or_else(|| "no rate".into()),
    );
    // The bisecting steps, when there were any.
    let more = |lead: &str| match e.bisected.len() {
        0 => String::new(),
        n => format!("{lead} {n} more steps"),
    };
    match e.verdict {
        bracket::Verdict::Agrees => format!(
            "The steps agree with the model: met the SLO at {met}, failed it at {failed} req/s."
        ),
        bracket::Verdict::ModelAbove => format!(
            "The steps contradict the model: it meets the SLO up to {model} req/s, but steps failed it (twice each) below that. The node has a delay the model lacks; the breaking point below is the middle of what the steps measured: met at {met}, failed at {failed} req/s{}.",
            more(" after")
        ),
        bracket::Verdict::ModelBelow => format!(
            "A step did better than the model: it breaks at {model} req/s, but a step met the SLO at {met} req/s; the answer is that rate, as an answer below what a step measured would contradict its own evidence."
        ),
        bracket::Verdict::Inconclusive => format!(
            "Steps failed the SLO at rates down to {failed} req/s, below the model's {model}, and none met it at any rate tried{}: the node was failing wherever it was measured (a store still busy with a preload, a slow phase of the machine), which bounds nothing; the model's figure stands. Run the calibration again once the node is quiet.",
            more(", bisecting included, after")
        ),
    }
}

/// Write the model as `OUT/scenario.toml` (creating OUT); its path.
fn save_scenario(out: &Path, toml: String) -> Result<PathBuf, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let f = out.join("scenario.toml");
    std::fs::write(&f, toml).map_err(|e| format!("{}: {e}", f.display()))?;
    Ok(f)
}

/// Write the calibration as `OUT/calibration.json`.
fn save_calibration(out: &Path, c: &Calibration) -> Result<(), String> {
    let json = serde_json::to_string_pretty(c).map_err(|e| e.to_string())?;
    let p = out.join("calibration.json");
    std::fs::write(&p, json + "\n").map_err(|e| format!("{}: {e}", p.display()))
}

/// The closing lines: the prediction and how to check it.
pub fn conclusion(a: &CalibrateArgs, c: &Calibration) -> Vec<String> {
    let p = &c.prediction;
    let mut v = vec![String::new()];
    if !c.converged {
        v.push(format!(
            "Not converged after {} steps: the last two predictions differ by {}% or more; \
             the figures below come from the last step.",
            c.steps.len(),
            fmt_num(a.tolerance * 100.0)
        ));
    }
    v.push(format!(
        "Predicted capacity: {} req/s ({}: {}).",
        fmt_num(p.capacity.round()),
        p.bottleneck.as_deref().unwrap_or("no bottleneck"),
        p.capacity_text
    ));
    let range = c
        .range
        .map(|(lo, hi)| {
            if hi - lo < 0.5 {
                " (no range: one step's model, nothing to disagree with)".to_string()
            } else {
                format!(
                    " (range {}–{}: what the steps' models disagree on and how the host moved between them)",
                    fmt_num(lo.round()),
                    fmt_num(hi.round())
                )
            }
        })
        .unwrap_or_default();
    v.push(match (p.breaking_point, &c.host_moved) {
        (_, Some(why)) => format!("Predicted breaking point for {}: none: {why}.", c.slo),
        (Some(b), None) => format!(
            "Predicted breaking point for {}: {} req/s{range}.",
            c.slo,
            fmt_num(b.round())
        ),
        (None, None) => format!(
            "Predicted breaking point for {}: none (no rate met it).",
            c.slo
        ),
    });
    if let Some(e) = c
        .evidence
        .as_ref()
        .filter(|e| e.verdict != bracket::Verdict::Agrees)
    {
        v.push(evidence_line(e));
    }
    if let Some(cl) = &c.cluster {
        v.push(String::new());
        v.extend(cluster::what_if_lines(cl, &c.slo));
        v.push(String::new());
    }
    let t = &a.target;
    // A workload file names its own keys and values: the flags for them
    // are a built-in's only.
    let sizes = if t.workload_is_file() {
        String::new()
    } else {
        format!(" --keys {} --value-size {}", t.keys, t.value_size)
    };
    v.push(format!(
        "Check it: strata sweep {} --workload {}{sizes} --slo '{}' --max-errors {}",
        t.url, t.workload, a.objective.slo, a.objective.max_errors
    ));
    v.push(format!("Model: strata sim {}", c.scenario_file.display()));
    v
}

/// `strata calibrate`: run, print the steps and the prediction, write
/// `calibration.json` and `scenario.toml`.
pub fn main(a: &CalibrateArgs) -> Result<(), String> {
    let json = a.target.json;
    let dir = a.target.out_dir("calibrate");
    let c = run(a, &dir, &mut |line| {
        if !json {
            println!("{line}");
        }
    })?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&c).map_err(|e| e.to_string())?
        );
    } else {
        for line in conclusion(a, &c) {
            println!("{line}");
        }
        println!("Report: {}", dir.join("calibration.json").display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_follow_the_prediction_until_two_agree() {
        assert_eq!(next_step(&[], 0.05), None);
        assert_eq!(next_step(&[40_000.0], 0.05), Some(36_000.0));
        assert_eq!(next_step(&[40_000.0, 60_000.0], 0.05), Some(54_000.0));
        assert_eq!(next_step(&[40_000.0, 60_000.0, 62_000.0], 0.05), None);
        // A falling prediction counts too.
        assert_eq!(next_step(&[60_000.0, 59_000.0], 0.05), None);
    }

    #[test]
    fn the_slo_becomes_the_simulator_objective() {
        let o = objective(&Slo::parse("p99<=10ms,max<=1s", "0.1%").unwrap());
        assert_eq!(
            o.bounds,
            vec![
                Bound {
                    quantile: 0.99,
                    limit_ns: 10_000_000
                },
                Bound {
                    quantile: 1.0,
                    limit_ns: 1_000_000_000
                }
            ]
        );
        assert!((o.max_errors - 0.001).abs() < 1e-12);
    }
}
