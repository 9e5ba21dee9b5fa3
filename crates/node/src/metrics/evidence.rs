//! The evidence a verdict reads from `/metrics` about the machine and the
//! process rather than the store: the pause detector, the threads' waits
//! for a CPU, the machine's pressure, the writers waiting on the WAL, and
//! what `/proc` says of this process (CPU, memory, file descriptors).
//! Owns reading and encoding them; must not keep state of its own.

use prometheus_client::encoding::DescriptorEncoder;

use super::state::{counter, gauge, StateCollector};

impl StateCollector {
    /// The pause detector, the threads' wait for a CPU, the machine's
    /// pressure, the writers waiting on the WAL.
    pub(super) fn encode_evidence(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
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
