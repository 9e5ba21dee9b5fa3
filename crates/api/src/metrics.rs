//! The names, as `/metrics` exposes them, of everything a node writes
//! there: one constant each, used by the node that writes it and by the
//! lab and the simulator that read it. Those the readers rely on are in
//! `ALL` and `HISTOGRAMS`, so that the node's test can check that every
//! one is served (a renamed metric fails there, not silently in a report).
//! Owns the names; must not parse or serve anything.

/// Served by a node only once it has called a peer (families whose
/// members are peers).
pub const CLUSTER_ONLY: &[&str] = &[REPLICA_ERRORS, REPLICA_SUM, REPLICA_COUNT, HINTS_PENDING];

/// Every name below, for the node's test.
pub const ALL: &[&str] = &[
    CPU_SECONDS,
    RESIDENT_BYTES,
    OPEN_FDS,
    PROCESS_CPUS,
    RESIDENT_ANON_BYTES,
    RUN_QUEUE_WAIT_SECONDS,
    CPU_THROTTLED_SECONDS,
    ALLOWED_CPUS_BUSY_SECONDS,
    PRESSURE_CPU_SECONDS,
    PRESSURE_IO_SECONDS,
    PRESSURE_MEMORY_SECONDS,
    PAUSE_LATENESS_SUM,
    PAUSE_LATENESS_COUNT,
    PAUSE_MAX_SECONDS,
    ADMISSION_IN_SERVICE,
    ADMISSION_WAITING,
    ADMISSION_LIMIT,
    ADMITTED_AT_ONCE,
    ADMITTED_AFTER_WAIT,
    REFUSED_QUEUE_FULL,
    REFUSED_TIMEOUT,
    CONNECTIONS_OPEN,
    CONNECTIONS_LIMIT,
    CONNECTIONS_SHED,
    CONNECTIONS_AWAITING_HEAD,
    CONNECTIONS_SLOW_HEAD_CLOSED,
    FLUSHES,
    FLUSH_BYTES,
    COMPACTION_WRITTEN_BYTES,
    WAL_WRITTEN_BYTES,
    COMPACTIONS,
    WRITE_STALLS,
    WRITE_STALL_SECONDS,
    WAL_LOCK_WAIT_SECONDS,
    MEMTABLE_BYTES,
    BLOCK_CACHE_BYTES,
    IMMUTABLE_MEMTABLES,
    TABLES,
    FSYNC_SUM,
    FSYNC_COUNT,
    FSYNC_BUCKET,
    COMMIT_GROUP_SUM,
    COMMIT_GROUP_COUNT,
    WAL_WRITERS_WAITING,
    REPLICA_ERRORS,
    REPLICA_SUM,
    REPLICA_COUNT,
    NOT_ENOUGH_REPLICAS,
    HINTS_PENDING,
    HTTP_REQUESTS,
    HTTP_DURATION_SUM,
    HTTP_DURATION_COUNT,
    RUNTIME_WORKERS,
    RUNTIME_BUSY,
    RUNTIME_PARKS,
    CLUSTER_MEMBERS,
    MAX_IN_SERVICE,
    MAX_WAITING,
    MAX_WAIT_SECONDS,
];

/// Histogram families (served as `_bucket`, `_sum` and `_count`), for the
/// node's test.
pub const HISTOGRAMS: &[&str] = &[
    COMMIT_GROUP,
    FSYNC_DURATION,
    SERVICE_DURATION,
    PAUSE_LATENESS,
];

// The process.
pub const CPU_SECONDS: &str = "process_cpu_seconds_total";
pub const RESIDENT_BYTES: &str = "process_resident_memory_bytes";
pub const OPEN_FDS: &str = "process_open_fds";
pub const PROCESS_CPUS: &str = "strata_process_cpus";
pub const RESIDENT_ANON_BYTES: &str = "strata_process_resident_anon_bytes";
/// Time the node's threads were runnable but waiting for a CPU
/// (`/proc/self/task/*/schedstat`, summed).
pub const RUN_QUEUE_WAIT_SECONDS: &str = "strata_process_run_queue_wait_seconds_total";
/// Each thread's time on a CPU and waiting for one, labelled `thread`
/// (its name) and `tid` (`threads`).
pub const THREAD_CPU_SECONDS: &str = "strata_thread_cpu_seconds_total";
pub const THREAD_WAIT_SECONDS: &str = "strata_thread_run_queue_wait_seconds_total";
pub const THREAD_SLICES: &str = "strata_thread_timeslices_total";
/// Busy time of the CPUs the node may run on (its affinity), whoever used
/// them; with `PROCESS_CPUS`, whether its cores were full.
pub const ALLOWED_CPUS_BUSY_SECONDS: &str = "strata_host_allowed_cpus_busy_seconds_total";
/// Of that busy time, what the hypervisor took for other guests (steal):
/// time the node's cores ran nothing of this machine's.
pub const ALLOWED_CPUS_STOLEN_SECONDS: &str = "strata_host_allowed_cpus_stolen_seconds_total";
/// Time the node's cgroup was held back by its CPU quota.
pub const CPU_THROTTLED_SECONDS: &str = "strata_process_cpu_throttled_seconds_total";
/// The machine's pressure stall information (`/proc/pressure/*`, "some"):
/// time at least one task waited for the resource.
pub const PRESSURE_CPU_SECONDS: &str = "strata_host_pressure_cpu_waiting_seconds_total";
pub const PRESSURE_IO_SECONDS: &str = "strata_host_pressure_io_waiting_seconds_total";
pub const PRESSURE_MEMORY_SECONDS: &str = "strata_host_pressure_memory_waiting_seconds_total";

// The pause detector: a thread that ticks every few milliseconds and
// records how late it woke.
/// The family: how late each tick woke (buckets from 0.5 ms, doubling).
pub const PAUSE_LATENESS: &str = "strata_pause_lateness_seconds";
pub const PAUSE_LATENESS_SUM: &str = "strata_pause_lateness_seconds_sum";
pub const PAUSE_LATENESS_COUNT: &str = "strata_pause_lateness_seconds_count";
/// The latest wake-up over the last 10 seconds.
pub const PAUSE_MAX_SECONDS: &str = "strata_pause_max_seconds";

// Admission and connections.
pub const ADMISSION_IN_SERVICE: &str = "strata_admission_in_service";
pub const ADMISSION_WAITING: &str = "strata_admission_waiting";
pub const ADMISSION_LIMIT: &str = "strata_admission_limit";
pub const ADMITTED_AT_ONCE: &str = "strata_admission_admitted_at_once_total";
pub const ADMITTED_AFTER_WAIT: &str = "strata_admission_admitted_after_wait_total";
pub const REFUSED_QUEUE_FULL: &str = "strata_admission_refused_queue_full_total";
pub const REFUSED_TIMEOUT: &str = "strata_admission_refused_timeout_total";
pub const CONNECTIONS_OPEN: &str = "strata_connections_open";
pub const CONNECTIONS_LIMIT: &str = "strata_connections_limit";
pub const CONNECTIONS_SHED: &str = "strata_connections_shed_total";
pub const CONNECTIONS_AWAITING_HEAD: &str = "strata_connections_awaiting_head";
pub const CONNECTIONS_SLOW_HEAD_CLOSED: &str = "strata_connections_slow_head_closed_total";

// The engine.
pub const FLUSHES: &str = "strata_engine_flushes_total";
pub const FLUSH_BYTES: &str = "strata_engine_flush_bytes_total";
pub const COMPACTION_WRITTEN_BYTES: &str = "strata_engine_compaction_written_bytes_total";
pub const WAL_WRITTEN_BYTES: &str = "strata_engine_wal_written_bytes_total";
pub const COMPACTIONS: &str = "strata_engine_compactions_total";
pub const WRITE_STALLS: &str = "strata_engine_write_stalls_total";
pub const WRITE_STALL_SECONDS: &str = "strata_engine_write_stall_seconds_total";
/// Time commit groups waited to take the WAL's lock while another thread
/// held it.
pub const WAL_LOCK_WAIT_SECONDS: &str = "strata_engine_wal_lock_wait_seconds_total";
pub const MEMTABLE_BYTES: &str = "strata_engine_memtable_bytes";
/// Bytes the block cache holds.
pub const BLOCK_CACHE_BYTES: &str = "strata_engine_block_cache_bytes";
pub const IMMUTABLE_MEMTABLES: &str = "strata_engine_immutable_memtables";
/// Tables per level (`level="0"`: the debt flush leaves to compaction).
pub const TABLES: &str = "strata_engine_tables";
pub const FSYNC_SUM: &str = "strata_engine_wal_fsync_duration_seconds_sum";
pub const FSYNC_COUNT: &str = "strata_engine_wal_fsync_duration_seconds_count";
pub const FSYNC_BUCKET: &str = "strata_engine_wal_fsync_duration_seconds_bucket";
pub const COMMIT_GROUP_SUM: &str = "strata_engine_commit_group_writes_sum";
pub const COMMIT_GROUP_COUNT: &str = "strata_engine_commit_group_writes_count";
/// Writes handed to the applier and not yet answered.
pub const WAL_WRITERS_WAITING: &str = "strata_wal_writers_waiting";

// The cluster.
pub const REPLICA_ERRORS: &str = "strata_replica_errors_total";
pub const REPLICA_SUM: &str = "strata_replica_duration_seconds_sum";
pub const REPLICA_COUNT: &str = "strata_replica_duration_seconds_count";
/// The histogram family of replica operations, send to answer.
pub const REPLICA_DURATION: &str = "strata_replica_duration_seconds";
pub const NOT_ENOUGH_REPLICAS: &str = "strata_cluster_not_enough_replicas_total";
pub const HINTS_PENDING: &str = "strata_hints_pending";
/// Requests answered, by method and status (a counter).
pub const HTTP_REQUESTS: &str = "strata_http_requests_total";
/// The histogram family of each request's time, arrival to answer.
pub const HTTP_DURATION: &str = "strata_http_request_duration_seconds";
pub const HTTP_DURATION_SUM: &str = "strata_http_request_duration_seconds_sum";
pub const HTTP_DURATION_COUNT: &str = "strata_http_request_duration_seconds_count";
pub const CLUSTER_MEMBERS: &str = "strata_cluster_members";

// The runtime's workers.
pub const RUNTIME_WORKERS: &str = "strata_runtime_workers";
pub const RUNTIME_BUSY: &str = "strata_runtime_worker_busy_seconds_total";
pub const RUNTIME_PARKS: &str = "strata_runtime_worker_parks_total";

// Admission's settings and the time a request holds its permit.
pub const MAX_IN_SERVICE: &str = "strata_admission_max_in_service";
pub const MAX_WAITING: &str = "strata_admission_max_waiting";
pub const MAX_WAIT_SECONDS: &str = "strata_admission_max_wait_seconds";
/// A histogram family.
pub const SERVICE_DURATION: &str = "strata_admission_service_duration_seconds";
/// The histogram family of each waiting request's wait for admission.
pub const ADMISSION_WAIT_DURATION: &str = "strata_admission_wait_duration_seconds";

// Histogram families of the engine.
pub const FSYNC_DURATION: &str = "strata_engine_wal_fsync_duration_seconds";
pub const COMMIT_GROUP: &str = "strata_engine_commit_group_writes";

// The rest the node writes (read by no other crate yet): typed here so
// that each name is spelled once.

pub const RUNTIME_LAG_SECONDS: &str = "strata_runtime_lag_seconds";

pub const CONNECTIONS_ACCEPTED: &str = "strata_connections_accepted_total";
pub const CONNECTIONS_STALE_CLOSED: &str = "strata_connections_stale_closed_total";
pub const CONNECTIONS_PARKED: &str = "strata_connections_parked_total";
pub const CONNECTIONS_EVICTED: &str = "strata_connections_evicted_total";

pub const ENGINE_NO_SPACE: &str = "strata_engine_no_space";
pub const ENGINE_NO_SPACE_ERRORS: &str = "strata_engine_no_space_errors_total";
pub const ENGINE_TABLES_QUARANTINED: &str = "strata_engine_tables_quarantined_total";
pub const ENGINE_SCRUB_BYTES: &str = "strata_engine_scrub_bytes_total";
pub const ENGINE_SCRUB_PASSES: &str = "strata_engine_scrub_passes_total";
pub const ENGINE_SCRUB_CORRUPTIONS: &str = "strata_engine_scrub_corruptions_total";
pub const ENGINE_READ_ERRORS: &str = "strata_engine_read_errors_total";
pub const ENGINE_LEVEL_BYTES: &str = "strata_engine_level_bytes";
pub const ENGINE_FLUSH_SECONDS: &str = "strata_engine_flush_seconds_total";
pub const ENGINE_COMPACTION_READ_BYTES: &str = "strata_engine_compaction_read_bytes_total";
pub const ENGINE_COMPACTION_SECONDS: &str = "strata_engine_compaction_seconds_total";
pub const ENGINE_WRITE_SLOWDOWNS: &str = "strata_engine_write_slowdowns_total";
pub const ENGINE_BUSY: &str = "strata_engine_busy_total";
pub const ENGINE_USER_WRITTEN_BYTES: &str = "strata_engine_user_written_bytes_total";
pub const ENGINE_BLOOM_NEGATIVES: &str = "strata_engine_bloom_negatives_total";
pub const ENGINE_BLOCK_CACHE_HITS: &str = "strata_engine_block_cache_hits_total";
pub const ENGINE_BLOCK_CACHE_MISSES: &str = "strata_engine_block_cache_misses_total";
pub const ENGINE_DISK_BYTES: &str = "strata_engine_disk_bytes";

pub const DISK_FREE_BYTES: &str = "strata_disk_free_bytes";
pub const DISK_SIZE_BYTES: &str = "strata_disk_size_bytes";

pub const PROCESS_RESIDENT_FILE_BYTES: &str = "strata_process_resident_file_bytes";

pub const CLUSTER_READ_REPAIRS: &str = "strata_cluster_read_repairs_total";
pub const CLUSTER_SUPERSEDED_RETRIES: &str = "strata_cluster_superseded_retries_total";
pub const CLUSTER_REPEATED_WRITES: &str = "strata_cluster_repeated_writes_total";
pub const CLUSTER_STAMPED_PAST_NEWER: &str = "strata_cluster_stamped_past_newer_total";
pub const CLUSTER_CLOCK_CLAMPED: &str = "strata_cluster_clock_clamped_total";
pub const CLUSTER_TOMBSTONES_PURGED: &str = "strata_cluster_tombstones_purged_total";
pub const CLUSTER_TOMBSTONES_KEPT: &str = "strata_cluster_tombstones_kept_total";
pub const CLUSTER_WRITES_TOO_OLD: &str = "strata_cluster_writes_too_old_total";
pub const CLUSTER_MEMBER_STATE: &str = "strata_cluster_member_state";

pub const ANTIENTROPY_EXCHANGES: &str = "strata_antientropy_exchanges_total";
pub const ANTIENTROPY_FAILED: &str = "strata_antientropy_failed_total";
pub const ANTIENTROPY_PULLED: &str = "strata_antientropy_pulled_total";
pub const ANTIENTROPY_PUSHED: &str = "strata_antientropy_pushed_total";
pub const ANTIENTROPY_ALREADY_THERE: &str = "strata_antientropy_already_there_total";
pub const ANTIENTROPY_SENT_BYTES: &str = "strata_antientropy_sent_bytes_total";
pub const ANTIENTROPY_RECEIVED_BYTES: &str = "strata_antientropy_received_bytes_total";
pub const ANTIENTROPY_APPLIED_FROM_PEERS: &str = "strata_antientropy_applied_from_peers_total";
pub const ANTIENTROPY_OLDEST_SYNC_SECONDS: &str = "strata_antientropy_oldest_sync_seconds";
pub const ANTIENTROPY_NEVER_SYNCED: &str = "strata_antientropy_never_synced";

pub const HINTS_PENDING_BYTES: &str = "strata_hints_pending_bytes";
pub const HINTS_WRITTEN: &str = "strata_hints_written";
pub const HINTS_DELIVERED: &str = "strata_hints_delivered";
pub const HINTS_DROPPED: &str = "strata_hints_dropped";
