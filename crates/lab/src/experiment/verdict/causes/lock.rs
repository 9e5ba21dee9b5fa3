//! `lock`: a lock the writes need, held by another thread: a node's
//! commit groups waiting to take the WAL's lock while something else
//! holds it (a rotation, a checkpoint; in the corpus, the engine's
//! held-lock fail point).
//!
//! - Reading: of the applier's busy time (waiting for the WAL's lock, in
//!   fsync, on a CPU), the share it waited for the lock
//!   (`strata_engine_wal_lock_wait_seconds_total`) against `LOCK_WAIT`;
//!   none from a node that does not export the wait. A share, not the
//!   seconds waited per second: at 8 writes a second, each write waiting
//!   4 ms for the lock adds up to 0.03 s a second and still is most of
//!   every write's time (the first held-lock sweep recorded, judged on
//!   seconds per second, named the node's CPU at 6 % of its threshold).
//! - Its share: the node's write path (`Family::Wal`) when it crossed,
//!   after the node's stalls and a stop (theirs hold the applier
//!   themselves) and before its fsync: the writes queued for an applier
//!   that was waiting for the lock, neither on a CPU nor in fsync.
//! - Owns its reading, its threshold and its words; must not weigh it
//!   against another cause.

use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::readings::{judged, mean};
use crate::report::model::{resource, ResourceReading, ServerSample};

/// The applier waiting a fifth of its busy time for a lock: each commit
/// group takes a quarter longer from that wait alone (as
/// `places::STARVED` for a CPU).
pub const LOCK_WAIT: f64 = 0.2;

/// The WAL's lock, where the node exports its wait: its share of the
/// applier's busy time, the lock's wait, the WAL's fsync and `applier`
/// (the applier thread's cores, when its threads were read).
pub fn reading(
    xs: &[ServerSample],
    name: &Option<String>,
    applier: Option<f64>,
) -> Option<ResourceReading> {
    let wait = mean(xs.iter().filter_map(|x| x.wal_lock_wait))?;
    let fsync = mean(xs.iter().filter_map(|x| x.fsync_busy)).unwrap_or(0.0);
    let busy = wait + fsync + applier.unwrap_or(0.0);
    let share = if busy > 0.0 { wait / busy } else { 0.0 };
    Some(judged(
        resource::LOCK,
        name.clone(),
        share,
        LOCK_WAIT,
        format!(
            "its applier waited for the WAL's lock, held by another thread, {:.0}% of its busy time ({} s per second; in fsync {} s, on a CPU {} s)",
            share * 100.0,
            fmt_num(wait),
            fmt_num(fsync),
            applier.map(fmt_num).unwrap_or_else(|| "?".into())
        ),
    ))
}

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("a lock on {n} the writes wait for: {quote}"),
        format!("another thread holds the WAL's lock of {n} while the writes wait for it: find which (the report's Threads section, /debug/pprof/profile) and keep slow work (I/O, sleeps) out from under that lock; more cores or a faster disk will not help"),
    )
}
