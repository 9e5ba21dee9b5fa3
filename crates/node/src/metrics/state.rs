//! What `/metrics` reads at scrape time rather than counting as it goes:
//! the engine's counters and shape, admission and the overload guard, the
//! cluster's members, hints and anti-entropy, the runtime, the process's
//! CPU, memory and file descriptors, the disk's free space. Owns turning
//! each of those into metric families; must not keep state of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use strata_api::metrics as metric;
use strata_cluster::Cluster;

use crate::admission::Admission;
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
fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    let name = name.strip_suffix("_total").unwrap_or(name);
    c.encode(e.encode_descriptor(name, help, None, c.metric_type())?)
}

fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
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

impl StateCollector {
    /// The pause detector, the threads' wait for a CPU, the machine's
    /// pressure, the writers waiting on the WAL.
    fn encode_evidence(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        use crate::evidence::{all_threads, pressure, run_queue_wait};
        use strata_api::metrics as m;
        gauge(
            e,
            m::PAUSE_MAX_SECONDS,
            "The latest the pause detector woke over the last 10 seconds",
            self.pauses.max_lateness().as_secs_f64(),
        )?;
        // One read of every thread: the process's wait and each thread's.
        let threads = all_threads();
        counter(
            e,
            m::RUN_QUEUE_WAIT_SECONDS,
            "Time this process's threads were runnable but waiting for a CPU (schedstat, live threads)",
            run_queue_wait(&threads).as_secs_f64(),
        )?;
        super::threads::encode(e, strata_api::threads::busiest(threads))?;
        if let Some(c) = crate::evidence::allowed_cpus() {
            counter(
                e,
                m::ALLOWED_CPUS_BUSY_SECONDS,
                "Busy time of the CPUs this process may run on (its affinity), whoever used them (/proc/stat)",
                c.busy.as_secs_f64(),
            )?;
            counter(
                e,
                m::ALLOWED_CPUS_STOLEN_SECONDS,
                "Of that busy time, what the hypervisor ran other guests in (/proc/stat's steal)",
                c.stolen.as_secs_f64(),
            )?;
        }
        if let Some(t) = crate::evidence::cpu_throttled() {
            counter(
                e,
                m::CPU_THROTTLED_SECONDS,
                "Time this process's cgroup was held back by its CPU quota (cpu.stat's throttled time)",
                t.as_secs_f64(),
            )?;
        }
        for (name, res) in [
            (m::PRESSURE_CPU_SECONDS, "cpu"),
            (m::PRESSURE_IO_SECONDS, "io"),
            (m::PRESSURE_MEMORY_SECONDS, "memory"),
        ] {
            if let Some(d) = pressure(res) {
                counter(
                    e,
                    name,
                    &format!("The machine's pressure stall time: at least one task waited for {res} (/proc/pressure/{res}, some)"),
                    d.as_secs_f64(),
                )?;
            }
        }
        gauge(
            e,
            m::WAL_WRITERS_WAITING,
            "Writes handed to the applier and not yet durable: the writers waiting on the WAL",
            self.cluster.writers_waiting() as f64,
        )
    }

    fn encode_cluster(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let c = &self.cluster;
        let st = c.stats();
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
        counter(
            e,
            metric::NOT_ENOUGH_REPLICAS,
            "Requests answered 504: fewer than ack replicas answered in time",
            get(&st.not_enough_replicas),
        )?;
        counter(
            e,
            metric::CLUSTER_READ_REPAIRS,
            "Stale replicas written back to by reads",
            get(&st.read_repairs),
        )?;
        counter(
            e,
            metric::CLUSTER_SUPERSEDED_RETRIES,
            "Writes stamped again because a replica held a newer version",
            get(&st.superseded_retries),
        )?;
        counter(
            e,
            metric::CLUSTER_REPEATED_WRITES,
            "Writes sent again by a client (the same Strata-Write-Id) whose first phase found an earlier attempt applied: finished at its version, not applied twice",
            get(&st.repeated_writes),
        )?;
        counter(
            e,
            metric::CLUSTER_STAMPED_PAST_NEWER,
            "Writes stamped past a version newer than this node's clock (found by their first phase, or by a replica holding it)",
            get(&st.stamped_past_newer),
        )?;
        counter(
            e,
            metric::CLUSTER_CLOCK_CLAMPED,
            "Peer timestamps too far ahead of this node's clock, followed only up to the bound",
            c.hlc().clamped.load(Ordering::Relaxed) as f64,
        )?;
        let rs = c.reaper_stats();
        counter(
            e,
            metric::CLUSTER_TOMBSTONES_PURGED,
            "Tombstones dropped after the grace period, once every member held them or newer",
            get(&rs.purged),
        )?;
        counter(
            e,
            metric::CLUSTER_TOMBSTONES_KEPT,
            "Tombstones past the grace period kept because a member was down, silent or behind",
            get(&rs.kept),
        )?;
        counter(
            e,
            metric::CLUSTER_WRITES_TOO_OLD,
            "Fresh writes refused (to be stamped again) because stamped longer ago than the tombstone grace period",
            get(&rs.refused_old),
        )?;
        let ae = c.anti_entropy_stats();
        for (name, help, v) in [
            (
                metric::ANTIENTROPY_EXCHANGES,
                "Anti-entropy exchanges this node started (one home set with one peer)",
                &ae.exchanges,
            ),
            (
                metric::ANTIENTROPY_FAILED,
                "Anti-entropy exchanges that failed (a peer silent, down or still building its trees)",
                &ae.failed,
            ),
            (
                metric::ANTIENTROPY_PULLED,
                "Records fetched from peers by anti-entropy and applied here",
                &ae.pulled,
            ),
            (
                metric::ANTIENTROPY_PUSHED,
                "Records this node's exchanges pushed to peers and they applied",
                &ae.pushed,
            ),
            (
                metric::ANTIENTROPY_ALREADY_THERE,
                "Records an exchange moved that the receiver already held (overstreaming)",
                &ae.already_there,
            ),
            (
                metric::ANTIENTROPY_SENT_BYTES,
                "Bytes of anti-entropy frames this node's exchanges sent",
                &ae.bytes_sent,
            ),
            (
                metric::ANTIENTROPY_RECEIVED_BYTES,
                "Bytes of anti-entropy frames this node's exchanges received",
                &ae.bytes_received,
            ),
            (
                metric::ANTIENTROPY_APPLIED_FROM_PEERS,
                "Records peers' exchanges pushed here that were applied",
                &ae.received,
            ),
        ] {
            counter(e, name, help, get(v))?;
        }
        let view = c.snapshot();
        let pairs: Vec<Option<std::time::Duration>> = view
            .ranges
            .iter()
            .flat_map(|r| r.synced.iter().map(|s| s.1))
            .collect();
        if !pairs.is_empty() {
            gauge(
                e,
                metric::ANTIENTROPY_OLDEST_SYNC_SECONDS,
                "Age of the oldest completed exchange over this node's ranges and their other replicas (0 before any)",
                pairs
                    .iter()
                    .flatten()
                    .map(|d| d.as_secs_f64())
                    .fold(0.0, f64::max),
            )?;
            gauge(
                e,
                metric::ANTIENTROPY_NEVER_SYNCED,
                "Pairs of (range, other replica) not yet exchanged since this node started",
                pairs.iter().filter(|p| p.is_none()).count() as f64,
            )?;
        }
        gauge(
            e,
            metric::CLUSTER_MEMBERS,
            "Members of the cluster, this node included",
            view.members.len() as f64,
        )?;
        let peers: Vec<_> = view.members.iter().filter(|m| !m.is_self).collect();
        let mut fam = e.encode_descriptor(
            metric::CLUSTER_MEMBER_STATE,
            "This node's failure detector: 1 for the state each peer is in",
            None,
            ConstGauge::new(0i64).metric_type(),
        )?;
        for m in &peers {
            for s in [
                strata_cluster::State::Up,
                strata_cluster::State::Suspect,
                strata_cluster::State::Down,
            ] {
                ConstGauge::new((m.state == s) as i64).encode(fam.encode_family(&[
                    ("peer", m.url.clone()),
                    ("state", s.as_str().to_string()),
                ])?)?;
            }
        }
        type HintField = fn(&strata_cluster::PeerHints) -> u64;
        let hint_metrics: [(&str, &str, HintField, bool); 5] = [
            (
                metric::HINTS_PENDING,
                "Hints waiting for each peer",
                |h| h.count,
                false,
            ),
            (
                metric::HINTS_PENDING_BYTES,
                "Bytes of hints waiting for each peer",
                |h| h.bytes,
                false,
            ),
            (
                metric::HINTS_WRITTEN,
                "Hints kept for each peer",
                |h| h.written,
                true,
            ),
            (
                metric::HINTS_DELIVERED,
                "Hints delivered to each peer",
                |h| h.delivered,
                true,
            ),
            (
                metric::HINTS_DROPPED,
                "Hints dropped (over the byte bound, expired, or the writer queue full), by peer",
                |h| h.dropped,
                true,
            ),
        ];
        for (name, help, f, is_counter) in hint_metrics {
            if is_counter {
                let mut fam =
                    e.encode_descriptor(name, help, None, ConstCounter::new(0u64).metric_type())?;
                for m in &peers {
                    ConstCounter::new(f(&m.hints))
                        .encode(fam.encode_family(&[("peer", m.url.clone())])?)?;
                }
            } else {
                let mut fam =
                    e.encode_descriptor(name, help, None, ConstGauge::new(0i64).metric_type())?;
                for m in &peers {
                    ConstGauge::new(f(&m.hints) as i64)
                        .encode(fam.encode_family(&[("peer", m.url.clone())])?)?;
                }
            }
        }
        Ok(())
    }
}

/// What /proc says about this process.
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub rss_bytes: u64,
    /// Of the RSS: anonymous memory (the heap: where a leak shows) and
    /// file pages mapped in (the tables' mmaps: page cache the kernel may
    /// take back).
    pub rss_anon_bytes: u64,
    pub rss_file_bytes: u64,
    pub open_fds: usize,
}

pub fn process() -> ProcessStats {
    // /proc/self/stat: fields 14 and 15 are utime and stime in clock ticks
    // (100 per second on Linux); the command name may hold spaces, so split
    // after its closing parenthesis.
    let cpu_seconds = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some(ticks as f64 / 100.0)
        })
        .unwrap_or(0.0);
    let rss_bytes = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096);
    let open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |k| k * 1024)
    };
    let (rss_anon_bytes, rss_file_bytes) = (kib("RssAnon:"), kib("RssFile:"));
    ProcessStats {
        rss_anon_bytes,
        rss_file_bytes,
        cpu_seconds,
        rss_bytes,
        open_fds,
    }
}
