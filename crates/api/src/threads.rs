//! One thread's share of a process's time, as both sides of a run read it:
//! the node exports each of its threads' time on a CPU and runnable but
//! waiting for one (`/proc/self/task/TID/schedstat`, named by `comm`) under
//! the metric names below, and the lab reads its own generator's threads
//! the same way, so a busy or starved thread is named alike on either
//! side. Owns the shape, the labels, the threads' names (`names`, typed
//! once: each side names its threads with them, the verdict reads them)
//! and the parsing of `schedstat`; must not read files (each side reads
//! its own `/proc`).

use std::time::Duration;

use crate::metrics;

/// Every thread Strata names, on the node and in the lab. A name is at
/// most 15 bytes (Linux's `comm`); the lab's numbered ones take a `-N`.
pub mod names {
    /// The async runtime's threads (workers and blocking pool alike).
    pub const RUNTIME: &str = "strata-runtime";
    /// The applier: WAL writes and their fsyncs, one commit group at a
    /// time.
    pub const APPLY: &str = "strata-apply";
    pub const WALSYNC: &str = "strata-walsync";
    pub const FLUSH: &str = "strata-flush";
    pub const COMPACT: &str = "strata-compact";
    pub const TREES: &str = "strata-trees";
    pub const HINTS: &str = "strata-hints";
    pub const PAUSE: &str = "strata-pause";
    pub const NODE_MAIN: &str = "strata-node-main";
    /// Test only: the engine's held-lock fail point.
    pub const LOCK_HOLD: &str = "strata-lockhold";
    /// The generator's sending threads (`strata-load-N`), its timer and
    /// its scrapes of the nodes (`strata-scrape-N`).
    pub const LOAD: &str = "strata-load";
    pub const TIMER: &str = "strata-timer";
    pub const SCRAPE: &str = "strata-scrape";

    /// A numbered thread's name: `strata-load-3`.
    pub fn numbered(prefix: &str, n: usize) -> String {
        format!("{prefix}-{n}")
    }
}

/// The labels of the per-thread metrics: the thread's name, its id.
pub const THREAD_LABEL: &str = "thread";
pub const TID_LABEL: &str = "tid";

/// The metric families (counters, seconds).
pub const CPU_SECONDS: &str = metrics::THREAD_CPU_SECONDS;
pub const WAIT_SECONDS: &str = metrics::THREAD_WAIT_SECONDS;
/// Times each thread was put on a CPU (a counter): the wait per time is
/// how long a wake-up waited for a core.
pub const SLICES: &str = metrics::THREAD_SLICES;

/// At most this many threads are exported, the busiest first: a process
/// with a thread per blocked request must not grow its scrape without
/// bound.
pub const MAX_THREADS: usize = 64;

/// One thread's times since it started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadTimes {
    /// `comm`: at most 15 bytes, as the kernel keeps it.
    pub name: String,
    pub tid: u32,
    /// On a CPU (the scheduler's precise runtime).
    pub on_cpu: Duration,
    /// Runnable but waiting for a CPU.
    pub waiting: Duration,
    /// Times it was put on a CPU.
    pub slices: u64,
}

/// A `schedstat` line: nanoseconds on a CPU, nanoseconds waiting on a
/// run queue, times put on a CPU.
pub fn parse_schedstat(s: &str) -> Option<(Duration, Duration, u64)> {
    let mut f = s.split_whitespace();
    let on: u64 = f.next()?.parse().ok()?;
    let wait: u64 = f.next()?.parse().ok()?;
    let slices: u64 = f.next()?.parse().ok()?;
    Some((Duration::from_nanos(on), Duration::from_nanos(wait), slices))
}

/// One thread from its `/proc/PID/task/TID` entry: the entry's name (the
/// tid), its `schedstat` and its `comm`, as read.
pub fn from_task(tid: &str, schedstat: &str, comm: &str) -> Option<ThreadTimes> {
    let (on_cpu, waiting, slices) = parse_schedstat(schedstat)?;
    Some(ThreadTimes {
        name: comm.trim_end().to_string(),
        tid: tid.parse().ok()?,
        on_cpu,
        waiting,
        slices,
    })
}

/// The busiest `MAX_THREADS` of `all`, by time on a CPU.
pub fn busiest(mut all: Vec<ThreadTimes>) -> Vec<ThreadTimes> {
    all.sort_by(|a, b| b.on_cpu.cmp(&a.on_cpu).then(a.tid.cmp(&b.tid)));
    all.truncate(MAX_THREADS);
    all
}

/// What each thread did between two readings of the same process, per
/// second of `secs`: (name, tid, cores on a CPU, cores' worth waiting).
/// A thread absent from the first reading started meanwhile and counts
/// from zero; one absent from the second ended and is left out.
pub fn rates(before: &[ThreadTimes], after: &[ThreadTimes], secs: f64) -> Vec<ThreadRate> {
    let secs = secs.max(1e-3);
    let mut out: Vec<ThreadRate> = after
        .iter()
        .map(|a| {
            let b = before.iter().find(|b| b.tid == a.tid && b.name == a.name);
            let d = |x: Duration, y: Option<Duration>| {
                x.saturating_sub(y.unwrap_or_default()).as_secs_f64() / secs
            };
            ThreadRate {
                name: a.name.clone(),
                tid: a.tid,
                cpu: d(a.on_cpu, b.map(|b| b.on_cpu)),
                waiting: d(a.waiting, b.map(|b| b.waiting)),
                slices: a.slices.saturating_sub(b.map_or(0, |b| b.slices)) as f64 / secs,
            }
        })
        .collect();
    out.sort_by(|a, b| b.cpu.total_cmp(&a.cpu).then(a.tid.cmp(&b.tid)));
    out
}

/// One thread over an interval: cores on a CPU and cores' worth waiting
/// for one (both in seconds per second), and how often it was put on one.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThreadRate {
    pub name: String,
    pub tid: u32,
    pub cpu: f64,
    pub waiting: f64,
    /// Times put on a CPU, per second.
    #[serde(default)]
    pub slices: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_is_read_and_rates_are_per_second() {
        assert_eq!(
            parse_schedstat("2000000000 500000000 77\n"),
            Some((Duration::from_secs(2), Duration::from_millis(500), 77))
        );
        assert_eq!(parse_schedstat("garbage"), None);
        let t = |name: &str, tid, on, wait| ThreadTimes {
            name: name.into(),
            tid,
            on_cpu: Duration::from_millis(on),
            waiting: Duration::from_millis(wait),
            slices: on,
        };
        let before = vec![t("strata-apply", 7, 1000, 100), t("gone", 9, 5, 5)];
        let after = vec![t("strata-apply", 7, 2900, 300), t("new", 11, 200, 0)];
        let r = rates(&before, &after, 2.0);
        assert_eq!(r[0].name, "strata-apply");
        assert!((r[0].cpu - 0.95).abs() < 1e-9 && (r[0].waiting - 0.1).abs() < 1e-9);
        assert_eq!(r[0].slices, 950.0);
        assert_eq!((r[1].name.as_str(), r[1].cpu), ("new", 0.1));
        assert_eq!(r.len(), 2);
    }
}
