//! `pause`: a node stopping (a stopped or throttled process, a VM's
//! steal, swapping), seen by its pause detector from inside and by the
//! lab's scrapes from outside.
//!
//! - Reading: the latest its detector woke (ms; a scrape that took as
//!   long counts from a node with no detector, a missed scrape as
//!   `PAUSE_MS`) against `PAUSE_MS`; not while its CPUs were full, unless
//!   it stopped `OWN_PAUSE_FACTOR` times longer than each co-located peer
//!   (`weigh`).
//! - Its share: when it crossed, the node's write path (writes queued
//!   through the stop), its own work, its admission queue and the time
//!   in flight to it, before anything else on the node.
//! - Owns its reading, its thresholds and its words; must not weigh it
//!   against another cause.

use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::readings::{judged, max};
use crate::report::model::{resource, ResourceReading, ServerSample};

/// Five times the detector's 5 ms tick and beyond any scheduling delay
/// of a machine with room.
pub const PAUSE_MS: f64 = 50.0;
/// How many times longer than each co-located peer's a node's pause must
/// be to be its own while its CPUs were full.
pub const OWN_PAUSE_FACTOR: f64 = 3.0;

/// A node's pause reading before it is weighed against its peers'.
pub struct Pause {
    /// The node's index.
    pub index: usize,
    /// The reading's place in the list of readings.
    pub reading: usize,
    /// The longest stop seen, ms.
    pub raw: f64,
    /// Whether its full CPUs or its quota would explain it.
    pub explained: bool,
}

/// Pauses seen from inside (the detector), and from outside (ticks with
/// no sample at all, and, from a node with no detector, a scrape that
/// took long). A stopped process stops its detector too, which sees the
/// stop when it runs again; so from a node that has one, a slow scrape
/// its detector did not see was the node's queue (the scrape waits behind
/// the load like any request), not a stop. `cpu_bound`: whether the
/// node's own CPU reading crossed (then its wait for a CPU, or its quota,
/// explains a pause). `at`: where the reading goes in the trial's list.
pub fn reading(
    xs: &[ServerSample],
    name: &Option<String>,
    index: usize,
    at: usize,
    cpu_bound: bool,
) -> (ResourceReading, Pause) {
    let field = |f: fn(&ServerSample) -> Option<f64>| xs.iter().filter_map(f);
    let detector = max(field(|x| x.pause_max_ms));
    let inside = detector.unwrap_or(0.0);
    let slow_scrape = max(field(|x| x.scrape_ms)).unwrap_or(0.0);
    let gaps = xs.windows(2).filter(|w| w[1].t_s - w[0].t_s > 1.8).count();
    let paused = inside
        .max(if detector.is_none() { slow_scrape } else { 0.0 })
        .max(if gaps > 0 { PAUSE_MS } else { 0.0 });
    let pause = Pause {
        index,
        reading: at,
        raw: paused,
        explained: cpu_bound,
    };
    let r = judged(
        resource::PAUSE,
        name.clone(),
        paused,
        PAUSE_MS,
        format!(
            "it stopped for up to {} ms (its pause detector; the lab's scrapes took up to {} ms, {} missed)",
            fmt_num(inside),
            fmt_num(slow_scrape),
            gaps
        ),
    );
    (r, pause)
}

/// A pause that the node's full CPUs explain is the CPU's, unless it is
/// the node's own: its co-located peers share those CPUs, so a node that
/// stopped several times longer than each of them (at least the
/// threshold) was stopped by something else (a signal, a debugger, its
/// VM), not by waiting for a CPU.
pub fn weigh(pauses: &[Pause], out: &mut [ResourceReading]) {
    for p in pauses {
        let own = pauses.len() > 1
            && p.raw >= PAUSE_MS
            && pauses
                .iter()
                .filter(|q| q.index != p.index)
                .all(|q| p.raw >= OWN_PAUSE_FACTOR * q.raw.max(1.0));
        if let Some(r) = out.get_mut(p.reading) {
            r.value = if p.explained && !own { 0.0 } else { p.raw };
            r.crossed = r.value >= r.threshold;
        }
    }
}

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("{n} stopping: {quote}"),
        format!("find what stops {n} (a stopped or throttled process, a VM's steal, swapping); clients that fail over to another replica or hedge reads ride through it; until then the limit is set by the pauses, not by load"),
    )
}
