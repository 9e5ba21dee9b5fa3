//! `thread`: one thread of a node (or of the generator) busy on a CPU
//! while its process had cores to spare: its work does not spread over
//! cores, so more cores would not help.
//!
//! - Reading: the process's busiest thread's share of one core against
//!   `THREAD_BUSY`, crossed only while the process had `SPARE_CORES` of
//!   the cores it may run on left.
//! - Its share: the node's write path when its applier was on a CPU more
//!   than in fsync (`fsync`'s resolution); its own work and time in
//!   flight when the thread crossed and was running rather than waiting
//!   for a core (`places::work`, `places::flight`); the generator's
//!   lateness when the nodes starved it with a thread flat out
//!   (`generator`).
//! - Owns its reading, its thresholds, the threads' roles and its words;
//!   must not weigh it against another cause.

use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::readings::judged;
use crate::report::model::{resource, ResourceReading};
use strata_api::threads::{names, ThreadRate};

/// The work serialized on one thread cannot go faster past this share of
/// a core.
pub const THREAD_BUSY: f64 = 0.9;
/// Cores a process must have left beside its busiest thread for that
/// thread to be the limit rather than the process's cores.
pub const SPARE_CORES: f64 = 0.5;

/// What a thread is for, by its name, when the name says it.
pub fn role(name: &str) -> Option<&'static str> {
    Some(match name {
        n if n == names::RUNTIME => "a runtime thread: HTTP, the requests' own work, and blocking work (reads, metrics, scrub)",
        n if n == names::APPLY => "the applier: WAL writes and their fsyncs, one commit group at a time",
        n if n == names::WALSYNC => "the WAL's timed fsync",
        n if n == names::FLUSH => "the memtable flush",
        n if n == names::COMPACT => "compaction",
        n if n == names::TREES => "anti-entropy's trees",
        n if n == names::HINTS => "hint delivery",
        n if n == names::PAUSE => "the pause detector",
        n if n == names::LOCK_HOLD => "the engine's held-lock fail point (test only)",
        n if n.starts_with(names::SCRAPE) => "the lab's scrape of a node",
        n if n.starts_with(names::LOAD) => "a generator thread: sends and reads answers",
        n if n == names::TIMER => "the generator's timer",
        _ => return None,
    })
}

/// A process's busiest thread against `THREAD_BUSY`: crossed when it used
/// that much of one core while its process had `SPARE_CORES` of the
/// cores it may run on left (so more cores would not have helped: the
/// work waited for that one thread).
pub fn reading(
    threads: &[ThreadRate],
    node: Option<String>,
    used: Option<f64>,
    cpus: Option<f64>,
) -> Option<ResourceReading> {
    let top = threads.first()?;
    let spare = match (used, cpus) {
        (Some(u), Some(c)) => c - u,
        _ => 0.0,
    };
    let who = node.clone().unwrap_or_else(|| "the generator".into());
    let mut r = judged(
        resource::THREAD,
        node,
        top.cpu,
        THREAD_BUSY,
        format!(
            "{who}'s busiest thread, {} (tid {}{}), was {:.0}% busy and waited for a CPU {:.0}% of its time; the process used {} of its {} cores{}",
            top.name,
            top.tid,
            role(&top.name).map(|r| format!("; {r}")).unwrap_or_default(),
            top.cpu * 100.0,
            100.0 * top.waiting / (top.cpu + top.waiting).max(1e-9),
            used.map(fmt_num).unwrap_or_else(|| "?".into()),
            cpus.map(fmt_num).unwrap_or_else(|| "?".into()),
            threads
                .get(1)
                .map(|n| format!(" (next: {} at {:.0}%)", n.name, n.cpu * 100.0))
                .unwrap_or_default()
        ),
    );
    r.crossed = r.crossed && spare >= SPARE_CORES;
    Some(r)
}

/// The cause in words, and what would raise the limit: `node` none for
/// the generator's thread.
pub fn words(node: Option<&str>, quote: &str) -> (String, String) {
    match node {
        None => (
            format!("one of the generator's threads: {quote}"),
            "run the generator with more --threads (each sends on its own thread); the figure is a floor, not the target's limit".into(),
        ),
        Some(n) => (
            format!("one thread of {n}: {quote}"),
            format!("that thread's work does not spread over cores: more cores will not help; profile {n} (/debug/pprof/profile) and find what that thread does per request (for the runtime, `--worker-threads`)"),
        ),
    }
}
