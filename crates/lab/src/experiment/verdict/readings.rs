//! What every cause's reading stands on: a node's samples in a trial,
//! their mean and largest, the reading's constructor (crossed when its
//! figure reaches its threshold), and each side's starvation: the share
//! of its threads' runnable time spent waiting for a CPU, which the
//! verdict compares between the two sides rather than judges. Each
//! cause's own reading and threshold is its file's (`causes`); their
//! mechanisms are in `docs/lab.md` ("The verdict's thresholds").
//!
//! Owns the figures' common parts; must not judge a resource or weigh
//! one against another.

use crate::report::model::{ResourceReading, ServerSample, Trial};

/// What the readings need beyond the trial (the report keeps it).
pub use crate::report::model::Machine;

/// The mean of some figures; `None` for none.
pub fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut s, mut n) = (0.0, 0usize);
    for x in xs {
        s += x;
        n += 1;
    }
    (n > 0).then(|| s / n as f64)
}

/// The largest of some figures; `None` for none.
pub fn max(xs: impl Iterator<Item = f64>) -> Option<f64> {
    xs.fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

/// A reading, crossed when `value` reaches `threshold`.
pub fn judged(
    resource: &str,
    node: Option<String>,
    value: f64,
    threshold: f64,
    quote: String,
) -> ResourceReading {
    ResourceReading {
        resource: resource.into(),
        node,
        value,
        threshold,
        crossed: value >= threshold,
        quote,
        worst: None,
    }
}

/// A node's samples in a trial: its own, or the trial's for one node.
pub fn node_samples(t: &Trial, i: usize) -> &[ServerSample] {
    match t.per_node.get(i) {
        Some(n) if !n.server.is_empty() || t.per_node.len() > 1 => &n.server,
        _ => &t.server,
    }
}

/// How many nodes a trial has.
pub fn node_count(t: &Trial) -> usize {
    t.per_node.len().max(1)
}

/// How starved of CPU a side was: of its threads' runnable time, the
/// share spent waiting for a CPU, and the mean wait of one wake-up for a
/// core (ms; none where the times a thread was put on a CPU are unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Starvation {
    pub share: f64,
    pub wait_ms: Option<f64>,
    /// Its threads' summed wait for a core, seconds per second.
    pub waiting: Option<f64>,
}

/// A side's starvation from its threads.
pub fn starvation(threads: &[strata_api::threads::ThreadRate]) -> Option<Starvation> {
    let (cpu, wait, slices) = threads.iter().fold((0.0, 0.0, 0.0), |(c, w, n), t| {
        (c + t.cpu, w + t.waiting, n + t.slices)
    });
    (cpu + wait > 0.01).then(|| Starvation {
        share: wait / (cpu + wait),
        wait_ms: (slices > 0.0).then(|| 1000.0 * wait / slices),
        waiting: Some(wait),
    })
}

/// A node's starvation from its threads, or from its samples' totals.
pub fn node_starvation(t: &Trial, i: usize) -> Option<Starvation> {
    if let Some(s) = t.per_node.get(i).and_then(|n| starvation(&n.threads)) {
        return Some(s);
    }
    let xs = node_samples(t, i);
    let cpu = mean(xs.iter().filter_map(|x| x.cpu_cores))?;
    let wait = mean(xs.iter().filter_map(|x| x.run_queue_cores))?;
    (cpu + wait > 0.01).then(|| Starvation {
        share: wait / (cpu + wait),
        wait_ms: None,
        waiting: Some(wait),
    })
}

/// The generator's starvation: from its threads, or from its share of
/// wall time waiting.
pub fn generator_starvation(t: &Trial) -> Option<Starvation> {
    starvation(&t.generator_threads).or(t.generator_run_queue_share.map(|share| Starvation {
        share,
        wait_ms: None,
        waiting: None,
    }))
}
