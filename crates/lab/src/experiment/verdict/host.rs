//! Whether the host changed under a sweep: readings that should hold
//! still, or grow with the offered rate, that moved between its trials
//! instead. Four kinds, each a finding with the reading, the node, its
//! two values and the trials (their rate and when they started):
//!
//! | finding | when |
//! | --- | --- |
//! | `repeats` | runs at one rate disagreed (one met the SLO, another failed), or a run failed at a lower rate than one that met, with its p99 `REPEATS_APART` times the other's (not a knife's edge) |
//! | `steal` | the hypervisor took `STEAL` of a node's cores in one trial and less than a fifth of that in another |
//! | `fsync` | a quiet WAL's (busy under `QUIET` of the time) p99 fsync `FSYNC_MOVED` times longer in one trial than in another, and at least `FSYNC_MIN_MS` |
//! | `generator` | the generator's own lateness over `GENERATOR_LATE` at a lower rate than a trial where it was under a fifth of that |
//!
//! A sweep whose host moved still names a cause, and says it is one
//! sample of a host that changed; its breaking point's range is widened
//! to every rate a run failed or met at (`widen`). Owns the findings;
//! must not name a cause (`verdict` does).

use crate::experiment::slo::fmt_num;
use crate::report::model::{HostMove, Trial};

use super::causes::generator::GENERATOR_LATE;
use super::readings::{max, mean, node_count, node_samples};

/// A node's cores' share taken by the hypervisor that is a finding when
/// another trial had under a fifth of it: a tenth of a core is more
/// than a fast request's whole service time every millisecond.
pub const STEAL: f64 = 0.1;
/// Two runs that disagree, one at or below the other's rate, are the
/// host's when the failed one's p99 is this many times the met one's:
/// at the breaking point's edge two runs straddle the bound by a little,
/// and the load at most doubles between them.
pub const REPEATS_APART: f64 = 2.0;
/// A WAL busy under this share of the time is quiet: its fsync's tail is
/// the device's, not a queue's.
pub const QUIET: f64 = 0.3;
/// A quiet WAL's p99 fsync this many times another trial's moved (the
/// device, not the load: the load at most doubles between trials).
pub const FSYNC_MOVED: f64 = 5.0;
/// ... and at least this long, ms (below it the buckets' resolution).
pub const FSYNC_MIN_MS: f64 = 2.0;

fn at(t: &Trial) -> String {
    format!(
        "the trial at {} req/s, {} s in",
        fmt_num(t.offered_rate.unwrap_or(t.achieved_rate)),
        fmt_num(t.started_s)
    )
}

/// Each trial's value of a reading (`None` where it was not read), and
/// the finding when its highest is `factor` times its lowest and at
/// least `floor`.
fn spread(
    trials: &[Trial],
    value: impl Fn(&Trial) -> Option<f64>,
    floor: f64,
    factor: f64,
) -> Option<(&Trial, f64, &Trial, f64)> {
    let vs: Vec<(&Trial, f64)> = trials
        .iter()
        .filter_map(|t| value(t).map(|v| (t, v)))
        .collect();
    let lo = vs.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let hi = vs.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (hi.1 >= floor && hi.1 >= factor * lo.1).then_some((lo.0, lo.1, hi.0, hi.1))
}

fn repeats(trials: &[Trial]) -> Option<HostMove> {
    let rate = |t: &Trial| t.offered_rate.unwrap_or(0.0);
    let judged: Vec<&Trial> = trials.iter().filter(|t| t.offered_rate.is_some()).collect();
    // Pairs (met, failed) with the failed run at or below the met one's
    // rate and its p99 far past the met one's; the lowest failed rate.
    let (met, failed) = judged
        .iter()
        .filter(|f| f.meets_slo == Some(false))
        .flat_map(|f| {
            judged
                .iter()
                .filter(|m| m.meets_slo == Some(true) && rate(m) >= rate(f))
                .filter(|m| f.latency.p99_ms >= REPEATS_APART * m.latency.p99_ms)
                .map(move |m| (*m, *f))
        })
        .min_by(|a, b| {
            rate(a.1)
                .total_cmp(&rate(b.1))
                .then(rate(b.0).total_cmp(&rate(a.0)))
        })?;
    let p99s = format!(
        " (p99 {} ms against {} ms)",
        fmt_num(failed.latency.p99_ms),
        fmt_num(met.latency.p99_ms)
    );
    Some(HostMove {
        what: "repeats".into(),
        node: None,
        from: rate(met),
        to: rate(failed),
        from_s: met.started_s,
        to_s: failed.started_s,
        words: if rate(met) == rate(failed) {
            format!(
                "runs at {} req/s disagreed: {} met the SLO, {} failed it{p99s}",
                fmt_num(rate(met)),
                at(met),
                at(failed)
            )
        } else {
            format!(
                "{} failed the SLO while {} met it{p99s}",
                at(failed),
                at(met)
            )
        },
    })
}

fn steal(trials: &[Trial], i: usize) -> Option<HostMove> {
    let node = format!("node-{}", i + 1);
    let (lo_t, lo, hi_t, hi) = spread(
        trials,
        |t| {
            mean(
                node_samples(t, i)
                    .iter()
                    .filter_map(|x| x.allowed_cpus_stolen),
            )
        },
        STEAL,
        5.0,
    )?;
    Some(HostMove {
        what: "steal".into(),
        node: Some(node.clone()),
        from: lo,
        to: hi,
        from_s: lo_t.started_s,
        to_s: hi_t.started_s,
        words: format!(
            "the hypervisor took {:.0}% of {node}'s cores in {} and {:.0}% in {}",
            hi * 100.0,
            at(hi_t),
            lo * 100.0,
            at(lo_t)
        ),
    })
}

fn fsync(trials: &[Trial], i: usize) -> Option<HostMove> {
    let node = format!("node-{}", i + 1);
    let quiet_p99 = |t: &Trial| {
        let xs = node_samples(t, i);
        let busy = mean(xs.iter().filter_map(|x| x.fsync_busy))?;
        (busy < QUIET)
            .then(|| max(xs.iter().filter_map(|x| x.fsync_p99_ms)))
            .flatten()
    };
    let (lo_t, lo, hi_t, hi) = spread(trials, quiet_p99, FSYNC_MIN_MS, FSYNC_MOVED)?;
    Some(HostMove {
        what: "fsync".into(),
        node: Some(node.clone()),
        from: lo,
        to: hi,
        from_s: lo_t.started_s,
        to_s: hi_t.started_s,
        words: format!(
            "{node}'s WAL, quiet, took {} ms for its p99 fsync in {} and {} ms in {}",
            fmt_num(hi),
            at(hi_t),
            fmt_num(lo),
            at(lo_t)
        ),
    })
}

fn generator(trials: &[Trial]) -> Option<HostMove> {
    let late = |t: &Trial| t.generator_late_sends as f64 / t.requests.max(1) as f64;
    let rate = |t: &Trial| t.offered_rate.unwrap_or(0.0);
    let worst = trials
        .iter()
        .filter(|t| late(t) >= GENERATOR_LATE)
        .filter(|w| {
            trials
                .iter()
                .any(|o| rate(o) > rate(w) && late(o) < late(w) / 5.0)
        })
        .max_by(|a, b| late(a).total_cmp(&late(b)))?;
    let calm = trials
        .iter()
        .filter(|o| rate(o) > rate(worst))
        .min_by(|a, b| late(a).total_cmp(&late(b)))?;
    Some(HostMove {
        what: "generator".into(),
        node: None,
        from: late(calm),
        to: late(worst),
        from_s: calm.started_s,
        to_s: worst.started_s,
        words: format!(
            "the generator's timer made {:.1}% of sends late in {} and {:.1}% in {}, a higher rate",
            late(worst) * 100.0,
            at(worst),
            late(calm) * 100.0,
            at(calm)
        ),
    })
}

/// Every way the host moved under the sweep's trials.
pub fn moved(trials: &[Trial]) -> Vec<HostMove> {
    let nodes = trials.iter().map(node_count).max().unwrap_or(0);
    let mut out: Vec<HostMove> = repeats(trials).into_iter().collect();
    for i in 0..nodes {
        out.extend(steal(trials, i));
        out.extend(fsync(trials, i));
    }
    out.extend(generator(trials));
    out
}

/// The breaking point's range widened to every rate a run failed at
/// below it and met at above it (how far a host that moved can move it).
pub fn widen(
    trials: &[Trial],
    pass: Option<f64>,
    range: Option<(f64, f64, u32)>,
) -> Option<(f64, f64, u32)> {
    let pass = pass?;
    let (mut lo, mut hi, n) = range.unwrap_or((pass, pass, 1));
    for t in trials {
        let Some(r) = t.offered_rate else { continue };
        match t.meets_slo {
            Some(false) if r < lo => lo = r,
            Some(true) if r > hi => hi = r,
            _ => {}
        }
    }
    Some((lo, hi, n))
}
