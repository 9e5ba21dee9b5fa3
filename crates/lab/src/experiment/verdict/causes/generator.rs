//! `generator`: the load generator, not the target: its timer sending
//! late with a connection free, or its threads waiting for a CPU.
//!
//! - Reading: the share of sends it made more than 1 ms late with a
//!   connection free against `GENERATOR_LATE`, or its threads' share of
//!   their runnable time waiting for a CPU against `GENERATOR_WAITING`,
//!   whichever is further past.
//! - Its share: its own lateness (`Family::Generator`), unless the nodes
//!   starved it (they share its cores and held more of them than
//!   anything else: one of their threads flat out, or the machine's
//!   CPU); time in flight when it was starved beside the node
//!   (`places::flight`); a queue at a node with room that only its
//!   bursts explain (`places::work`).
//! - Owns its reading, its thresholds, its place's resolution and its
//!   words; must not weigh it against another cause.

use crate::experiment::verdict::places::{
    shared_machine, starved_by_nodes, work, Cause, Context, Place, STARVED,
};
use crate::experiment::verdict::readings::{generator_starvation, judged};
use crate::report::model::{resource, ResourceReading, Trial};

/// One send in twenty off its schedule changes the offered load itself.
pub const GENERATOR_LATE: f64 = 0.05;
/// The generator then reads answers late as often as on time.
pub const GENERATOR_WAITING: f64 = 0.5;

/// The generator's reading: the worse of its two figures, as a share of
/// its threshold.
pub fn reading(t: &Trial) -> ResourceReading {
    let late = t.generator_late_sends as f64 / t.requests.max(1) as f64;
    let waiting = t.generator_run_queue_share.unwrap_or(0.0);
    let (value, threshold) = if late / GENERATOR_LATE >= waiting / GENERATOR_WAITING {
        (late, GENERATOR_LATE)
    } else {
        (waiting, GENERATOR_WAITING)
    };
    judged(
        resource::GENERATOR,
        None,
        value,
        threshold,
        format!(
            "the generator's timer made {:.1}% of sends late with a connection free, and its threads waited for a CPU {:.0}% of the time",
            late * 100.0,
            waiting * 100.0
        ),
    )
}

/// The generator's own lateness: a node's thread flat out when the nodes
/// starved it, the machine's CPU when they held its cores, else its own.
pub fn resolve(_p: &Place, c: &Context) -> Option<Cause> {
    let r = c.get(resource::GENERATOR, None)?;
    // Late because the nodes held the cores it shares with them, one of
    // their threads flat out: that thread.
    let starved = generator_starvation(c.trial).is_some_and(|g| g.share >= STARVED);
    if starved && starved_by_nodes(c) {
        let busy = c
            .readings
            .iter()
            .find(|t| t.resource == resource::THREAD && t.crossed);
        if let Some(t) = busy.and_then(|t| t.node.as_deref()) {
            if let Some(w) = work(t, false, None, c).filter(|w| w.resource == resource::THREAD) {
                return Some(Cause {
                    why: format!(
                        "{}; the generator, late ({}), shares its cores with the nodes, which held more of them than anything else",
                        w.why, r.quote
                    ),
                    crossed: true,
                    ..w
                });
            }
        }
    }
    if let Some(m) = shared_machine(c) {
        return Some(c.cause(
            m,
            format!(
                "{}; the generator shares those cores with the nodes, which used most of them: {}",
                m.quote, r.quote
            ),
        ));
    }
    Some(c.cause(r, r.quote.clone()))
}

/// The cause in words, and what would raise the limit.
pub fn words(quote: &str) -> (String, String) {
    (
        format!("the load generator, not the target: {quote}"),
        "run the generator with more --threads, on a quieter machine, or on another one; the figure is a floor, not the target's limit".into(),
    )
}
