//! `fsync`: a node's WAL fsync, busy (one fsync after another, the
//! disk's pace) or slow (each write waiting on the device however seldom
//! the WAL is busy).
//!
//! - Reading: the share of the time the WAL spent in fsync against
//!   `FSYNC_BUSY`; crossed too when its p99 fsync takes `SLOW_FSYNC` of
//!   the objective's tightest bound.
//! - Its share: the node's write-path place (`Family::Wal`: queued for
//!   the applier, the write, the fsync), unless the node's stalls, a
//!   stop or a held lock crossed (theirs), or the applier was on a CPU more than in
//!   fsync (the applier's `thread`, or the node's CPU when it waited for
//!   one), or there was no fsync to wait for (what holds an applier,
//!   nearest its threshold); and a queue in the node's own work when
//!   nothing on the node explains it and the WAL crossed.
//! - Owns its reading, its thresholds, its place's resolution and its
//!   words; must not weigh it against another cause.

use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::places::{index, work, Cause, Context, Place, STARVED};
use crate::experiment::verdict::readings::{judged, max, mean};
use crate::report::model::{resource, Machine, ResourceReading, ServerSample};

/// A WAL busy this share of the time queues a commit group behind the
/// one in flight most of the time.
pub const FSYNC_BUSY: f64 = 0.7;
/// A p99 fsync this share of the objective's tightest bound is slow.
pub const SLOW_FSYNC: f64 = 0.5;

/// The WAL's fsync: busy (one fsync after another), or slow. A write that
/// arrives during an fsync waits for it and then for its own, so an fsync
/// whose p99 takes half the objective's bound leaves a write no time to
/// meet it however seldom the WAL is busy (a slow-but-idle disk).
pub fn reading(xs: &[ServerSample], name: &Option<String>, m: Machine) -> Option<ResourceReading> {
    let field = |f: fn(&ServerSample) -> Option<f64>| xs.iter().filter_map(f);
    let busy = mean(field(|x| x.fsync_busy))?;
    let p99 = max(field(|x| x.fsync_p99_ms));
    let slow =
        matches!((p99, m.objective_ms), (Some(f), Some(o)) if o > 0.0 && f >= SLOW_FSYNC * o);
    let mut r = judged(
        resource::FSYNC,
        name.clone(),
        busy,
        FSYNC_BUSY,
        format!(
            "its WAL fsync was busy {:.0}% of the time (p99 fsync {} ms{}, {} writes per fsync, up to {} writers waiting)",
            busy * 100.0,
            p99.map(fmt_num).unwrap_or_else(|| "?".into()),
            match m.objective_ms {
                Some(o) if slow => format!(", at least half the objective's {} ms", fmt_num(o)),
                _ => String::new(),
            },
            mean(field(|x| x.writes_per_fsync)).map(fmt_num).unwrap_or_else(|| "?".into()),
            max(field(|x| x.writers_waiting)).map(fmt_num).unwrap_or_else(|| "?".into()),
        ),
    );
    r.crossed |= slow;
    // The slower figure's share of its threshold, when it is further past
    // it than the busy share.
    if let (Some(f), Some(o)) = (p99, m.objective_ms.filter(|o| *o > 0.0)) {
        let slowness = f / (SLOW_FSYNC * o);
        if slowness > busy / FSYNC_BUSY {
            r.worst = Some(slowness);
        }
    }
    Some(r)
}

/// Why node `p.node`'s write path was slow: its stalls or a stop when
/// they crossed, the applier's own work when it was on a CPU more than in
/// fsync, what holds an applier with no fsync to wait for, else the WAL.
pub fn resolve(p: &Place, c: &Context) -> Option<Cause> {
    let n = p.node.as_deref()?;
    if let Some(r) = c.crossed(resource::STALLS, Some(n)) {
        return Some(c.cause(r, format!("{} (the applier held by it)", r.quote)));
    }
    // A stopped node's applier queue is what arrived during the stop,
    // committed after it.
    if let Some(r) = c.crossed(resource::PAUSE, Some(n)) {
        return Some(c.cause(
            r,
            format!(
                "{} (writes queued for its applier through the stop)",
                r.quote
            ),
        ));
    }
    // An applier waiting for a lock another thread held: the lock.
    if let Some(r) = c.crossed(resource::LOCK, Some(n)) {
        return Some(c.cause(
            r,
            format!(
                "{} (writes queued for its applier, which waited for the lock)",
                r.quote
            ),
        ));
    }
    let f = c.get(resource::FSYNC, Some(n))?;
    // Requests that spent most of this place waiting for the fsync itself
    // waited for the device, however seldom the WAL was busy (at a low
    // rate a slow disk is busy 1 % of the time and still the whole tail):
    // the fsync, below.
    let on_device = p.device >= 0.5 * p.share;
    if let Some(cause) = applier(n, f, on_device, p, c) {
        return cause;
    }
    if f.value < 0.01 && !on_device {
        return no_fsync(n, c);
    }
    let io = c.crossed(resource::IO, Some(n));
    let how = if f.value >= f.threshold {
        "busy: one fsync after another, the disk's pace"
    } else if f.value < 0.5 * f.threshold {
        "seldom busy but slow: each fsync waited on the device"
    } else {
        "not yet busy enough to queue, each write waiting for its own"
    };
    let mut why = format!("{} ({how})", f.quote);
    if let Some(io) = io {
        why += &format!("; {}", io.quote);
    }
    Some(Cause {
        crossed: f.crossed || io.is_some(),
        ..c.cause(f, why)
    })
}

/// What the applier spent its time on, when not mostly waiting for the
/// device: on a CPU more than in fsync, its own work (the node's CPU when
/// it waited for one; else the applier thread). `None` to go on to the
/// fsync.
fn applier(
    n: &str,
    f: &ResourceReading,
    on_device: bool,
    p: &Place,
    c: &Context,
) -> Option<Option<Cause>> {
    let a = index(n)
        .and_then(|i| c.trial.per_node.get(i))
        .and_then(|x| {
            x.threads
                .iter()
                .find(|t| t.name == strata_api::threads::names::APPLY)
        })
        .filter(|_| !on_device)
        .filter(|a| a.cpu > f.value && a.cpu >= f.value.max(0.1))?;
    if a.waiting >= STARVED * (a.cpu + a.waiting) {
        return Some(work(n, false, Some(p.mean_ms), c));
    }
    let t = c
        .get(resource::THREAD, Some(n))
        .filter(|t| t.quote.contains(strata_api::threads::names::APPLY));
    let why = format!(
        "its applier (strata-apply, tid {}: WAL writes, memtable inserts and fsyncs, one commit group at a time) was on a CPU {:.0}% of the time and waited for one {:.0}%, its WAL fsync busy {:.0}%: the writes queued behind the applier's own work{}",
        a.tid,
        a.cpu * 100.0,
        100.0 * a.waiting / (a.cpu + a.waiting).max(1e-9),
        f.value * 100.0,
        t.map(|t| format!("; {}", t.quote)).unwrap_or_default()
    );
    Some(Some(Cause {
        resource: resource::THREAD.into(),
        node: Some(n.into()),
        why,
        crossed: t.is_some_and(|t| t.crossed),
    }))
}

/// The applier had no fsync to wait for: of what holds one (`HOLDS`), the
/// reading nearest its threshold.
fn no_fsync(n: &str, c: &Context) -> Option<Cause> {
    let r = HOLDS
        .iter()
        .filter_map(|w| c.get(w, Some(n)))
        .max_by(|a, b| (a.value / a.threshold).total_cmp(&(b.value / b.threshold)))?;
    Some(c.cause(
        r,
        format!(
            "{} (writes queued for the applier, which had no fsync to wait for; of what holds it, this came nearest its threshold, at {:.0}%)",
            r.quote,
            100.0 * r.value / r.threshold.max(1e-12)
        ),
    ))
}

/// What holds an applier that has no fsync to wait for.
const HOLDS: [&str; 4] = [
    resource::STALLS,
    resource::IO,
    resource::MEMORY,
    resource::CPU,
];

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("the WAL fsync of {n}: {quote}"),
        format!("the disk's fsync tail sets the pace of writes on {n}: a disk with faster fsync (the p99 fsync above), `--durability interval(10)` to take the fsync off the request's path, or more writers per commit group (group commit amortizes one fsync over them); more nodes spread the writes"),
    )
}
