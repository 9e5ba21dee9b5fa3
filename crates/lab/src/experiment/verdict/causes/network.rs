//! `network`: the path to a node, beyond loopback: time waiting for a
//! replica or in flight that the node's own work does not explain.
//!
//! - Reading: none of its own (the lab reads no network counters); the
//!   contrast is the evidence: the node reported little work and its CPU
//!   and pauses had room.
//! - Its share: the wait for a replica beyond what it reported of its own
//!   work (`Family::Replica`), off loopback and when the replica neither
//!   stopped nor had its CPU cross (else its work's); time in flight off
//!   loopback with neither side starved nor the node stopped
//!   (`places::flight`).
//! - Owns its place's resolution and its words; must not weigh it against
//!   another cause.

use crate::experiment::verdict::places::{cpu_crossed, work, Cause, Context, Place};
use crate::report::model::resource;

/// The wait for replica `p.node`: its work when it ran on this machine,
/// stopped or had its CPU cross; else the path to it.
pub fn resolve(p: &Place, c: &Context) -> Option<Cause> {
    let n = p.node.as_deref()?;
    if c.local() || c.crossed(resource::PAUSE, Some(n)).is_some() || cpu_crossed(n, c) {
        return work(n, false, None, c);
    }
    let r = c.get(resource::NETWORK, Some(n));
    Some(Cause {
        resource: resource::NETWORK.into(),
        node: Some(n.into()),
        why: r.map(|r| r.quote.clone()).unwrap_or_else(|| {
            format!("{n} reported little work of its own, and its CPU and pauses had room: the time was the path to it")
        }),
        crossed: true,
    })
}

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("the network path to {n}: {quote}"),
        format!("{n} itself had room; shorten the path (the same rack or zone), look for loss on it (retransmissions), or offer the load over more connections (each one holds its request for the whole round trip)"),
    )
}
