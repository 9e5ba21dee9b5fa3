//! `admission`: a node's admission limit (`--max-in-service`) full, its
//! requests waiting for a place in service while its CPU and disk had
//! room.
//!
//! - Reading: the share of samples with every place in service taken or
//!   requests waiting (or refused) against `ADMISSION_SHARE`.
//! - Its share: the node's admission place (`Family::Admission`), unless
//!   what works behind it crossed (`BEHIND`, in that order: theirs, the
//!   queue was in front of them), the WAL's fsync excepted when the limit
//!   itself kept commit groups small; a queue in the node's own work when
//!   it crossed and nothing else on the node explains it.
//! - Owns its reading, its threshold, its place's resolution and its
//!   words; must not weigh it against another cause.

use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::places::{index, Cause, Context, Place};
use crate::experiment::verdict::readings::{judged, max, node_samples};
use crate::report::model::{resource, ResourceReading, ServerSample};

/// Every place taken half the time: arrivals queue as often as not.
pub const ADMISSION_SHARE: f64 = 0.5;

/// What works behind admission, in the order a crossed one takes the
/// queue in front of it (its refusals too: `errors`).
pub const BEHIND: [&str; 6] = [
    resource::PAUSE,
    resource::MEMORY,
    resource::STALLS,
    resource::FSYNC,
    resource::CPU,
    resource::THREAD,
];

/// How often every place was taken or requests waited.
pub fn reading(xs: &[ServerSample], name: &Option<String>) -> ResourceReading {
    let busy = xs
        .iter()
        .filter(|x| {
            x.waiting.unwrap_or(0.0) > 0.0
                || x.admitted_after_wait.unwrap_or(0.0) > 0.0
                || x.refused.unwrap_or(0.0) > 0.0
                || matches!((x.in_service, x.limit), (Some(s), Some(l)) if l > 0.0 && s >= l)
        })
        .count() as f64
        / xs.len().max(1) as f64;
    judged(
        resource::ADMISSION,
        name.clone(),
        busy,
        ADMISSION_SHARE,
        format!(
            "all {} places in service were taken or requests waited in {:.0}% of samples ({} refused)",
            max(xs.iter().filter_map(|x| x.limit)).map(fmt_num).unwrap_or_else(|| "?".into()),
            busy * 100.0,
            fmt_num(xs.iter().filter_map(|x| x.refused).sum())
        ),
    )
}

/// Admission is a queue in front of the work: the work behind it, when
/// that crossed, unless the limit itself kept the WAL from batching
/// (commit groups as large as the places allow).
pub fn resolve(p: &Place, c: &Context) -> Option<Cause> {
    let n = p.node.as_deref()?;
    let capped = index(n)
        .map(|i| node_samples(c.trial, i))
        .is_some_and(|xs| {
            xs.iter().any(|x| {
                matches!((x.writes_per_fsync, x.limit), (Some(w), Some(l)) if l > 0.0 && w >= 0.8 * l)
            })
        });
    for behind in BEHIND {
        if behind == resource::FSYNC && capped {
            continue;
        }
        if let Some(r) = c.crossed(behind, Some(n)) {
            let a = c
                .get(resource::ADMISSION, Some(n))
                .map(|a| a.quote.as_str())
                .unwrap_or("");
            return Some(c.cause(
                r,
                format!("{} (requests waited for admission behind it: {a})", r.quote),
            ));
        }
    }
    let r = c.get(resource::ADMISSION, Some(n))?;
    Some(c.cause(r, r.quote.clone()))
}

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("admission on {n}: {quote}, while its CPU and disk had room"),
        format!("raise `--max-in-service` on {n}, or try `--admission adaptive`"),
    )
}
