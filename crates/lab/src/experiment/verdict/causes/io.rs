//! `io`: the disk under a node, as its machine's I/O pressure shows it
//! (some task waiting for the disk), beside what the node's engine wrote.
//!
//! - Reading: the machine's I/O pressure, as the node sees it, against
//!   `IO_PRESSURE`.
//! - Its share: the node's own work when it read from its engine and the
//!   disk crossed (`places::work`); beside the WAL's fsync, quoted and
//!   corroborating it (`fsync`); an applier with no fsync to wait for,
//!   when it came nearest its threshold of what holds one.
//! - Owns its reading, its threshold and its words; must not weigh it
//!   against another cause.

use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::readings::{judged, mean};
use crate::report::model::{resource, ResourceReading, ServerSample};

/// Some task waiting for the disk half the time: a WAL write meets a
/// queue as often as not.
pub const IO_PRESSURE: f64 = 0.5;

/// The machine's disk, as this node sees it; `None` where the kernel
/// gives no pressure.
pub fn reading(xs: &[ServerSample], name: &Option<String>) -> Option<ResourceReading> {
    let field = |f: fn(&ServerSample) -> Option<f64>| xs.iter().filter_map(f);
    let io = mean(field(|x| x.pressure_io))?;
    let wal = mean(field(|x| x.wal_bytes_per_s));
    let flush = mean(field(|x| x.flush_bytes_per_s));
    let compaction = mean(field(|x| x.compaction_bytes_per_s));
    let engine_mb = |xs: &[Option<f64>]| xs.iter().flatten().sum::<f64>() / 1e6;
    Some(judged(
        resource::IO,
        name.clone(),
        io,
        IO_PRESSURE,
        format!(
            "some task on its machine waited for the disk {:.0}% of the time, while its engine wrote {} MB/s to it (WAL {}, flushes {}, compactions {}; {} flushes, {} compactions)",
            io * 100.0,
            fmt_num(engine_mb(&[wal, flush, compaction])),
            fmt_num(engine_mb(&[wal])),
            fmt_num(engine_mb(&[flush])),
            fmt_num(engine_mb(&[compaction])),
            fmt_num(field(|x| x.flushes).sum()),
            fmt_num(field(|x| x.compactions).sum()),
        ),
    ))
}

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("the disk under {n}: {quote}"),
        format!("a faster disk for {n}, or less else on it; reads that miss the cache (`--block-cache-bytes`) and compactions share it with the WAL"),
    )
}
