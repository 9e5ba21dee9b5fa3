//! `stalls`: a node's engine holding writes back while flush and
//! compaction catch up (a write stall).
//!
//! - Reading: the share of the time writes were stalled against
//!   `STALL_SHARE` (two stalls or more count as crossed).
//! - Its share: the node's stall place (`Family::Stalls`), always; its
//!   write path when its stalls crossed (the applier held by them); its
//!   own work or its admission queue behind it when it crossed and the
//!   node's CPU had room.
//! - Owns its reading, its threshold, its place's resolution and its
//!   words; must not weigh it against another cause.

use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::places::{Cause, Context, Place};
use crate::experiment::verdict::readings::{judged, max, mean};
use crate::report::model::{resource, ResourceReading, ServerSample};

/// A stall holds every write for its length: any recurring one (this
/// share of the time, or two stalls) is in the tail.
pub const STALL_SHARE: f64 = 0.01;

/// Write stalls: flush and compaction behind.
pub fn reading(xs: &[ServerSample], name: &Option<String>) -> ResourceReading {
    let field = |f: fn(&ServerSample) -> Option<f64>| xs.iter().filter_map(f);
    let stalls: f64 = field(|x| x.stalls).sum();
    let share = mean(field(|x| x.stall_share)).unwrap_or(0.0);
    let value = if stalls >= 2.0 {
        share.max(STALL_SHARE)
    } else {
        share
    };
    judged(
        resource::STALLS,
        name.clone(),
        value,
        STALL_SHARE,
        format!(
            "its writes were stalled {:.1}% of the time ({} stalls; {} flushes, {} compactions, up to {} memtables waiting for flush and {} tables in level 0)",
            share * 100.0,
            fmt_num(stalls),
            fmt_num(field(|x| x.flushes).sum()),
            fmt_num(field(|x| x.compactions).sum()),
            max(field(|x| x.immutables)).map(fmt_num).unwrap_or_else(|| "?".into()),
            max(field(|x| x.l0_tables)).map(fmt_num).unwrap_or_else(|| "?".into()),
        ),
    )
}

/// The stall place is the stalls', crossed or not.
pub fn resolve(p: &Place, c: &Context) -> Option<Cause> {
    let r = c.get(resource::STALLS, p.node.as_deref())?;
    Some(c.cause(r, r.quote.clone()))
}

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("write stalls on {n}, flush and compaction falling behind: {quote}"),
        format!("give {n}'s memtable more room (`--memtable-bytes`), fewer or smaller writes per second, or a faster disk for flush and compaction"),
    )
}
