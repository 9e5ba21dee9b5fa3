//! `memory`: memory on a node's machine, as its memory pressure shows it
//! (some task waiting for memory: reclaim, swap).
//!
//! - Reading: the machine's memory pressure, as the node sees it, against
//!   `MEMORY_PRESSURE`.
//! - Its share: the node's own work and its admission queue when it
//!   crossed (first after a stop: reclaim stalls whatever allocates); an
//!   applier with no fsync to wait for, when it came nearest its
//!   threshold of what holds one.
//! - Owns its reading, its threshold and its words; must not weigh it
//!   against another cause.

use crate::experiment::verdict::readings::{judged, mean};
use crate::report::model::{resource, ResourceReading, ServerSample};

/// Reclaim stalls the allocating thread; one tenth of the time reaches
/// the p99.
pub const MEMORY_PRESSURE: f64 = 0.1;

/// The machine's memory, as this node sees it; `None` where the kernel
/// gives no pressure.
pub fn reading(xs: &[ServerSample], name: &Option<String>) -> Option<ResourceReading> {
    let mem = mean(xs.iter().filter_map(|x| x.pressure_memory))?;
    Some(judged(
        resource::MEMORY,
        name.clone(),
        mem,
        MEMORY_PRESSURE,
        format!(
            "some task on its machine waited for memory {:.0}% of the time (reclaim, swap)",
            mem * 100.0
        ),
    ))
}

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("memory on {n}'s machine: {quote}"),
        format!("more memory for {n}'s machine or cgroup, a smaller block cache and memtables, or fewer processes beside it"),
    )
}
