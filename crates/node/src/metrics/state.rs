//! What `/metrics` reads at scrape time rather than counting as it goes:
//! the engine's counters and shape, admission and the overload guard, the
//! cluster's members, hints and anti-entropy, the runtime, the process's
//! CPU, memory and file descriptors, the disk's free space. Owns turning
//! each of those into metric families; must not keep state of its own.
//! The cluster's families are encoded in `cluster`, the machine's and the
//! process's evidence in `evidence`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use strata_api::metrics as metric;
use strata_cluster::Cluster;

use crate::admission::Admission;

use super::process::process;
use crate::overload::Guard;

pub(super) struct StateCollector {
    pub(super) admission: Arc<Admission>,
    pub(super) guard: Arc<Guard>,
    pub(super) heads: Arc<crate::heads::Heads>,
    pub(super) cluster: Arc<Cluster>,
    /// The runtimes serving HTTP (one, or one per core).
    pub(super) runtimes: Vec<tokio::runtime::RuntimeMetrics>,
    pub(super) pauses: Arc<crate::evidence::Pauses>,
}

impl std::fmt::Debug for StateCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateCollector")
    }
}

/// A counter; `name` is written with its `_total` suffix here for grep's
/// sake, and the encoder adds the suffix itself.
pub(super) fn counter(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: f64,
) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    let name = name.strip_suffix("_total").unwrap_or(name);
    c.encode(e.encode_descriptor(name, help, None, c.metric_type())?)
}

pub(super) fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
    let g = ConstGauge::new(v);
    g.encode(e.encode_descriptor(name, help, None, g.metric_type())?)
}

/// (bytes free to an unprivileged writer, size) of the file system that
/// holds `p`.
fn fs_space(p: &std::path::Path) -> Option<(f64, f64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills a plain C struct; all-zero is a valid value.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path, `s` a struct statvfs we own.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let unit = s.f_frsize as f64;
    Some((s.f_bavail as f64 * unit, s.f_blocks as f64 * unit))
}

/// A gauge with one value per level, labelled `level="N"`.
fn per_level(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    values: impl Iterator<Item = i64>,
) -> std::fmt::Result {
    let mut fam = e.encode_descriptor(name, help, None, ConstGauge::new(0i64).metric_type())?;
    for (i, v) in values.enumerate() {
        ConstGauge::new(v).encode(fam.encode_family(&[("level", i.to_string())])?)?;
    }
    Ok(())
}

impl Collector for StateCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let a = &self.admission;
        gauge(
            &mut e,
            metric::ADMISSION_IN_SERVICE,
            "Requests in service now",
            a.in_service() as f64,
        )?;
        gauge(
            &mut e,
            metric::ADMISSION_WAITING,
            "Requests waiting for admission now",
            a.waiting() as f64,
        )?;
        gauge(
            &mut e,
            metric::ADMISSION_LIMIT,
            "Current limit of requests in service",
            a.limit() as f64,
        )?;
        let (max_in_service, max_waiting, max_wait) = a.bounds();
        gauge(
            &mut e,
            metric::MAX_IN_SERVICE,
            "Configured ceiling of requests in service",
            max_in_service as f64,
        )?;
        gauge(
            &mut e,
            metric::MAX_WAITING,
            "Configured number of waiting places",
            max_waiting as f64,
        )?;
        gauge(
            &mut e,
            metric::MAX_WAIT_SECONDS,
            "Configured longest wait for admission",
            max_wait.as_secs_f64(),
        )?;
        let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed) as f64;
        counter(
            &mut e,
            metric::ADMITTED_AT_ONCE,
            "Requests admitted without waiting (request-nonblock)",
            load(&a.admitted_at_once),
        )?;
        counter(
            &mut e,
            metric::ADMITTED_AFTER_WAIT,
            "Requests admitted after waiting (request-block)",
            load(&a.admitted_after_wait),
        )?;
        counter(
            &mut e,
            metric::REFUSED_QUEUE_FULL,
            "Requests refused at once: no room to wait",
            load(&a.refused_full),
        )?;
        counter(
            &mut e,
            metric::REFUSED_TIMEOUT,
            "Requests refused after waiting too long",
            load(&a.refused_timeout),
        )?;

        let g = &self.guard;
        gauge(
            &mut e,
            metric::CONNECTIONS_OPEN,
            "Client connections open now",
            g.open_now() as f64,
        )?;
        gauge(
            &mut e,
            metric::CONNECTIONS_LIMIT,
            "Current limit of client connections (the overload guard's)",
            g.limit() as f64,
        )?;
        gauge(
            &mut e,
            metric::RUNTIME_LAG_SECONDS,
            "Mean wait of requests between arriving in their socket and being read, over the last 50 ms window that had requests",
            g.wait().as_secs_f64(),
        )?;
        counter(
            &mut e,
            metric::CONNECTIONS_ACCEPTED,
            "Client connections accepted",
            load(&g.accepted),
        )?;
        counter(
            &mut e,
            metric::CONNECTIONS_SHED,
            "Connections closed after an answer because the node was over its connection limit",
            load(&g.shed),
        )?;
        counter(
            &mut e,
            metric::CONNECTIONS_STALE_CLOSED,
            "Connections answered 503 and closed at once: their first request had waited (in the kernel's backlog or parked) past the longest wait",
            load(&g.stale_closed),
        )?;
        counter(
            &mut e,
            metric::CONNECTIONS_PARKED,
            "Connections accepted past the connection limit and parked unread until there was room (newest first)",
            load(&g.parked),
        )?;
        gauge(
            &mut e,
            strata_api::metrics::CONNECTIONS_AWAITING_HEAD,
            "Connections whose first request head has not all arrived (bounded by --max-awaiting-heads, and per peer address)",
            self.heads.len() as f64,
        )?;
        counter(
            &mut e,
            strata_api::metrics::CONNECTIONS_SLOW_HEAD_CLOSED,
            "Connections closed while idle before their first whole request head, to keep within --max-awaiting-heads (per peer address too)",
            load(&self.heads.closed),
        )?;
        counter(
            &mut e,
            metric::CONNECTIONS_EVICTED,
            "Parked connections closed unread to make room for a new one when every place under --max-connections was taken (oldest first)",
            load(&g.evicted),
        )?;

        self.encode_cluster(&mut e)?;
        let s = self.cluster.local().stats();
        gauge(
            &mut e,
            metric::MEMTABLE_BYTES,
            "Bytes in the memtable and immutable memtables",
            s.memtable_bytes as f64,
        )?;
        gauge(
            &mut e,
            metric::IMMUTABLE_MEMTABLES,
            "Immutable memtables waiting for flush",
            s.immutable_memtables as f64,
        )?;
        gauge(
            &mut e,
            metric::ENGINE_NO_SPACE,
            "1 while writes are refused (507) because a flush or compaction found the disk full; 0 once a retry found room",
            if s.no_space { 1.0 } else { 0.0 },
        )?;
        counter(
            &mut e,
            metric::ENGINE_NO_SPACE_ERRORS,
            "Commit groups (their writes refused with 507), flushes and compactions (each retried after 1 s) that found the disk full",
            s.no_space_errors as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_TABLES_QUARANTINED,
            "Tables that failed a checksum and were set aside under DATA/quarantine (their keys are repaired from the replicas)",
            s.tables_quarantined as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_SCRUB_BYTES,
            "Bytes of table blocks the background scrub read from disk and checked against their checksums (--scrub-rate)",
            s.scrub_bytes as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_SCRUB_PASSES,
            "Passes the scrub finished over every table",
            s.scrub_passes as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_SCRUB_CORRUPTIONS,
            "Damaged blocks the scrub found (each table set aside and repaired from the replicas)",
            s.scrub_corruptions as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_READ_ERRORS,
            "Reads of table blocks the disk failed (EIO), by lookups, scans and the scrub",
            s.read_errors as f64,
        )?;
        per_level(
            &mut e,
            metric::TABLES,
            "Tables per level",
            s.levels.iter().map(|l| l.tables as i64),
        )?;
        per_level(
            &mut e,
            metric::ENGINE_LEVEL_BYTES,
            "Bytes of tables per level",
            s.levels.iter().map(|l| l.bytes as i64),
        )?;
        counter(
            &mut e,
            metric::FLUSHES,
            "Memtable flushes",
            s.flushes as f64,
        )?;
        counter(
            &mut e,
            metric::FLUSH_BYTES,
            "Bytes written by flushes",
            s.flush_bytes as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_FLUSH_SECONDS,
            "Time spent flushing",
            s.flush_seconds,
        )?;
        counter(
            &mut e,
            metric::COMPACTIONS,
            "Compactions",
            s.compactions as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_COMPACTION_READ_BYTES,
            "Bytes read by compactions",
            s.compaction_bytes_read as f64,
        )?;
        counter(
            &mut e,
            metric::COMPACTION_WRITTEN_BYTES,
            "Bytes written by compactions",
            s.compaction_bytes_written as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_COMPACTION_SECONDS,
            "Time spent compacting",
            s.compaction_seconds,
        )?;
        counter(
            &mut e,
            metric::WRITE_STALLS,
            "Write stall episodes",
            s.stalls as f64,
        )?;
        counter(
            &mut e,
            metric::WRITE_STALL_SECONDS,
            "Time writes spent stalled",
            s.stall_seconds,
        )?;
        counter(
            &mut e,
            metric::WAL_LOCK_WAIT_SECONDS,
            "Time commit groups waited for the WAL's lock held by another thread",
            s.wal_lock_wait_seconds,
        )?;
        counter(
            &mut e,
            metric::ENGINE_WRITE_SLOWDOWNS,
            "Writes delayed by 1 ms for level-0 pressure",
            s.slowdowns as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_BUSY,
            "Writes refused as busy after the stall timeout",
            s.busy_errors as f64,
        )?;
        counter(
            &mut e,
            metric::WAL_WRITTEN_BYTES,
            "Bytes appended to the WAL",
            s.wal_bytes as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_USER_WRITTEN_BYTES,
            "Key and value bytes written by users",
            s.user_bytes_written as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_BLOOM_NEGATIVES,
            "Table lookups a bloom filter answered with no",
            s.bloom_negatives as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_BLOCK_CACHE_HITS,
            "Block cache hits",
            s.cache_hits as f64,
        )?;
        counter(
            &mut e,
            metric::ENGINE_BLOCK_CACHE_MISSES,
            "Block cache misses",
            s.cache_misses as f64,
        )?;
        gauge(
            &mut e,
            metric::BLOCK_CACHE_BYTES,
            "Bytes held by the block cache",
            s.cache_usage_bytes as f64,
        )?;
        gauge(
            &mut e,
            metric::ENGINE_DISK_BYTES,
            "Bytes of live tables and WAL on disk",
            s.disk_bytes as f64,
        )?;
        if let Some((free, size)) = fs_space(self.cluster.local().path()) {
            gauge(
                &mut e,
                metric::DISK_FREE_BYTES,
                "Bytes free for the node's data (the file system of its data directory, as an unprivileged writer sees it)",
                free,
            )?;
            gauge(
                &mut e,
                metric::DISK_SIZE_BYTES,
                "Size of the file system of the node's data directory",
                size,
            )?;
        }

        if !self.runtimes.is_empty() {
            let workers = || {
                self.runtimes
                    .iter()
                    .flat_map(|rt| (0..rt.num_workers()).map(move |w| (rt, w)))
            };
            gauge(
                &mut e,
                metric::RUNTIME_WORKERS,
                "Worker threads of the runtimes that serve HTTP (all runtimes)",
                workers().count() as f64,
            )?;
            counter(
                &mut e,
                metric::RUNTIME_PARKS,
                "Times a runtime worker went idle (parked) waiting for work, all workers",
                workers()
                    .map(|(rt, w)| rt.worker_park_count(w))
                    .sum::<u64>() as f64,
            )?;
            counter(
                &mut e,
                metric::RUNTIME_BUSY,
                "Time runtime workers spent running tasks (not parked), all workers",
                workers()
                    .map(|(rt, w)| rt.worker_total_busy_duration(w).as_secs_f64())
                    .sum::<f64>(),
            )?;
        }
        self.encode_evidence(&mut e)?;
        let p = process();
        gauge(
            &mut e,
            metric::PROCESS_CPUS,
            "CPUs this process may run on (its affinity mask and cgroup quota)",
            std::thread::available_parallelism().map_or(1, |n| n.get()) as f64,
        )?;
        counter(
            &mut e,
            metric::CPU_SECONDS,
            "User and system CPU time of the process",
            p.cpu_seconds,
        )?;
        gauge(
            &mut e,
            metric::RESIDENT_BYTES,
            "Resident set size",
            p.rss_bytes as f64,
        )?;
        gauge(
            &mut e,
            metric::RESIDENT_ANON_BYTES,
            "Of the resident set, anonymous memory (the heap, the block cache, memtables)",
            p.rss_anon_bytes as f64,
        )?;
        gauge(
            &mut e,
            metric::PROCESS_RESIDENT_FILE_BYTES,
            "Of the resident set, file pages mapped in (the tables' mmaps; the kernel may take them back)",
            p.rss_file_bytes as f64,
        )?;
        gauge(
            &mut e,
            metric::OPEN_FDS,
            "Open file descriptors",
            p.open_fds as f64,
        )?;
        Ok(())
    }
}
