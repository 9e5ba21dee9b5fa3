//! What the node reports of its own scheduling, so that a stopped or
//! starved process is seen from the inside: a pause detector (a thread
//! that ticks every few milliseconds and records how late it woke), the
//! time its threads waited for a CPU (`/proc/self/task/*/schedstat`), in
//! all and thread by thread, the
//! time its cgroup's CPU quota held it back (`cpu.stat`), and the
//! machine's pressure stall information (`/proc/pressure/*`). Owns
//! the measuring; must not decide anything from the numbers (the lab's
//! verdict does).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// The detector's tick.
pub const TICK: Duration = Duration::from_millis(5);
/// Seconds of maxima the detector keeps (`max_lateness` is the largest).
const WINDOW: usize = 10;

/// The pause detector's record.
pub struct Pauses {
    /// How late each tick woke, in seconds (0.5 ms .. 8 s).
    pub lateness: Histogram,
    /// The largest lateness of each of the last `WINDOW` seconds, in
    /// microseconds, by second (`second % WINDOW`), with the second.
    maxima: [(AtomicU64, AtomicU64); WINDOW],
    origin: Instant,
}

impl Pauses {
    fn new() -> Pauses {
        Pauses {
            lateness: Histogram::new(exponential_buckets(0.0005, 2.0, 15)),
            maxima: Default::default(),
            origin: Instant::now(),
        }
    }

    fn record(&self, late: Duration, at: Instant) {
        self.lateness.observe(late.as_secs_f64());
        let sec = at.duration_since(self.origin).as_secs();
        let (max, when) = &self.maxima[(sec as usize) % WINDOW];
        let us = late.as_micros() as u64;
        if when.swap(sec, Ordering::Relaxed) != sec {
            max.store(us, Ordering::Relaxed);
        } else {
            max.fetch_max(us, Ordering::Relaxed);
        }
    }

    /// The latest wake-up over the last `WINDOW` seconds.
    pub fn max_lateness(&self) -> Duration {
        let now = self.origin.elapsed().as_secs();
        let us = self
            .maxima
            .iter()
            .filter(|(_, when)| now.saturating_sub(when.load(Ordering::Relaxed)) < WINDOW as u64)
            .map(|(max, _)| max.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0);
        Duration::from_micros(us)
    }
}

/// The process's pause detector, started on first use (one thread).
pub fn pauses() -> Arc<Pauses> {
    static P: OnceLock<Arc<Pauses>> = OnceLock::new();
    P.get_or_init(|| {
        let p = Arc::new(Pauses::new());
        let q = p.clone();
        std::thread::Builder::new()
            .name(strata_api::threads::names::PAUSE.into())
            .spawn(move || loop {
                let before = Instant::now();
                std::thread::sleep(TICK);
                let now = Instant::now();
                q.record(now.duration_since(before).saturating_sub(TICK), now);
            })
            .expect("spawn the pause detector");
        p
    })
    .clone()
}

/// Each of this process's threads' times (`/proc/self/task/TID/comm` and
/// `schedstat`), every one of them: `threads` keeps the busiest, and
/// their summed wait is the process's (`run_queue_wait`), from one read.
pub fn all_threads() -> Vec<strata_api::threads::ThreadTimes> {
    use strata_api::threads::from_task;
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let read = |t: &std::fs::DirEntry, f: &str| std::fs::read_to_string(t.path().join(f)).ok();
    dir.flatten()
        .filter_map(|t| {
            from_task(
                t.file_name().to_str()?,
                &read(&t, "schedstat")?,
                &read(&t, "comm")?,
            )
        })
        .collect()
}

/// Time this process's threads spent runnable but waiting for a CPU,
/// summed over `all` its live threads (`all_threads`). Threads that have
/// exited are not counted, so the sum can fall; a reader takes the
/// increase.
pub fn run_queue_wait(all: &[strata_api::threads::ThreadTimes]) -> Duration {
    all.iter().map(|t| t.waiting).sum()
}

/// Time of the CPUs this process may run on (its affinity mask), from
/// `/proc/stat`'s per-CPU lines.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AllowedCpus {
    /// Busy (user, nice, system, irq, softirq, steal): whether the cores
    /// it has are full, whoever keeps them busy.
    pub busy: Duration,
    /// Of `busy`, steal: time the hypervisor ran another guest on them.
    /// A node's own CPU time does not count it, so a model that prices a
    /// request by that time alone sees a whole core where the node had
    /// less.
    pub stolen: Duration,
}

/// The busy and stolen time of the CPUs this process may run on.
pub fn allowed_cpus() -> Option<AllowedCpus> {
    // SAFETY: sched_getaffinity fills the set we pass; all-zero is valid.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; the size is the set's.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return None;
    }
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    let (mut busy, mut stolen) = (0u64, 0u64);
    for line in stat.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let Some(cpu) = f.next().and_then(|c| c.parse::<usize>().ok()) else {
            continue;
        };
        // SAFETY: CPU_ISSET reads the set within its size.
        if cpu >= libc::CPU_SETSIZE as usize || !unsafe { libc::CPU_ISSET(cpu, &set) } {
            continue;
        }
        let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
        // user nice system idle iowait irq softirq steal
        busy += [0, 1, 2, 5, 6, 7]
            .iter()
            .filter_map(|&i| v.get(i))
            .sum::<u64>();
        stolen += v.get(7).copied().unwrap_or(0);
    }
    let secs = |ticks: u64| Duration::from_secs_f64(ticks as f64 / hz);
    Some(AllowedCpus {
        busy: secs(busy),
        stolen: secs(stolen),
    })
}

/// Time this process's cgroup was held back by its CPU quota (CFS
/// bandwidth throttling): `throttled_usec` of cgroup v2's `cpu.stat`, or
/// `throttled_time` (ns) of v1's; `None` when neither can be read.
pub fn cpu_throttled() -> Option<Duration> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in groups.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let (file, key, unit_ns) = if controllers.is_empty() {
            (
                format!("/sys/fs/cgroup{path}/cpu.stat"),
                "throttled_usec",
                1_000,
            )
        } else if controllers.split(',').any(|c| c == "cpu") {
            (
                format!("/sys/fs/cgroup/cpu{path}/cpu.stat"),
                "throttled_time",
                1,
            )
        } else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(file.replace("//", "/")) else {
            continue;
        };
        if let Some(v) = stat.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse::<u64>().ok()).flatten()
        }) {
            return Some(Duration::from_nanos(v * unit_ns));
        }
    }
    None
}

/// The machine's pressure of `resource` (cpu, io, memory): total time at
/// least one task waited for it ("some ... total=", microseconds).
pub fn pressure(resource: &str) -> Option<Duration> {
    let s = std::fs::read_to_string(format!("/proc/pressure/{resource}")).ok()?;
    let some = s.lines().find(|l| l.starts_with("some "))?;
    let total = some
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?;
    Some(Duration::from_micros(total.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_thread_is_seen_late() {
        let p = Pauses::new();
        let t = Instant::now();
        p.record(Duration::from_micros(200), t);
        p.record(Duration::from_millis(150), t);
        p.record(Duration::from_micros(300), t);
        assert_eq!(p.max_lateness(), Duration::from_millis(150));
    }

    #[test]
    fn schedstat_and_pressure_read() {
        // This process has threads; their wait is a number (maybe zero).
        let ts = all_threads();
        let _ = run_queue_wait(&ts);
        assert!(ts.iter().any(|t| t.tid == std::process::id()), "{ts:?}");
        // Some cgroup's cpu.stat is there (v1 or v2), and reads.
        assert!(cpu_throttled().is_some());
        // The CPUs this process may run on have been busy some time.
        let cpus = allowed_cpus().unwrap();
        assert!(
            cpus.busy > Duration::ZERO && cpus.stolen <= cpus.busy,
            "{cpus:?}"
        );
        // Pressure is there on kernels with PSI; when it is, it parses.
        if std::path::Path::new("/proc/pressure/cpu").exists() {
            assert!(pressure("cpu").is_some());
        }
    }
}
