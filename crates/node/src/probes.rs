//! USDT probes of the `strata` provider (the `usdt` crate: SystemTap SDT
//! notes on Linux, DTrace elsewhere), named as in the seed reports. The first
//! argument is always an id (a request id, or a background job id), so that
//! scripts key their timings by id and never by thread: tokio moves a
//! request between threads (lesson 3). A disabled probe costs a test of a
//! semaphore word; arguments are not even evaluated. Owns probe definitions
//! and the request-id counter; must not decide anything.

use std::sync::atomic::{AtomicU64, Ordering};

#[usdt::provider(provider = "strata")]
mod strata_provider {
    /// A request arrived: id, method, path.
    fn request__start(id: u64, method: &str, path: &str) {}
    /// The request had to wait for admission.
    fn request__block(id: u64) {}
    /// The request was admitted at once.
    fn request__nonblock(id: u64) {}
    /// The answer is ready: id, HTTP status.
    fn request__done(id: u64, status: u16) {}
    /// A write is handed to the store (WAL commit): request id.
    fn persist__start(id: u64) {}
    /// The write is durable as configured: request id.
    fn persist__done(id: u64) {}
    /// A replica operation goes to a peer: request id (0 for background
    /// work), peer URL, operation (write, read, version, repair, hint).
    fn replica__send(id: u64, peer: &str, op: &str) {}
    /// Its answer (or failure): request id, peer, operation, 1 if it
    /// succeeded, microseconds since the send.
    fn replica__answer(id: u64, peer: &str, op: &str, ok: u8, micros: u64) {}
    fn flush__start(job: u64, memtable_bytes: u64) {}
    fn flush__done(job: u64, bytes: u64) {}
    fn compaction__start(job: u64, input_level: u64, input_bytes: u64) {}
    fn compaction__done(job: u64, bytes_read: u64, bytes_written: u64) {}
}

pub(crate) use strata_provider::*;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh request id.
pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Fire `request-start` (for measuring a probe's cost from outside the crate).
#[inline(never)]
pub fn fire_request_start(id: u64, method: &str, path: &str) {
    request__start!(|| (id, method, path));
}

/// Register the probes (needed by DTrace; harmless on Linux).
pub fn register() {
    if let Err(e) = usdt::register_probes() {
        tracing::warn!(error = %e, "could not register USDT probes");
    }
}

/// Fire the engine's background-work probes from its events.
pub fn engine_event(e: &strata_engine::Event) {
    use strata_engine::Event::*;
    match e {
        FlushStarted {
            job,
            memtable_bytes,
        } => flush__start!(|| (*job, *memtable_bytes)),
        FlushFinished {
            job, bytes_written, ..
        } => flush__done!(|| (*job, *bytes_written)),
        CompactionStarted {
            job,
            input_level,
            input_bytes,
            ..
        } => compaction__start!(|| (*job, *input_level as u64, *input_bytes)),
        CompactionFinished {
            job,
            bytes_read,
            bytes_written,
            ..
        } => compaction__done!(|| (*job, *bytes_read, *bytes_written)),
        _ => {}
    }
}
