//! Where the machine's CPU went during a trial: this process's own CPU
//! (getrusage) and the whole machine's busy time, so a verdict can say how
//! the cores were split between the generator, the nodes and everything
//! else. The machine's is the kernel's interrupt and softirq time (where
//! the loopback network's work goes) plus the sum of every process's CPU
//! time
//! (`/proc/PID/stat`, which the kernel keeps to the scheduler's precise
//! runtime), not `/proc/stat`'s per-CPU counters: those are sampled at
//! each timer tick, and a load whose bursts fall between ticks (a
//! generator and nodes that wake on the millisecond) showed there as
//! 0.02 cores busy while the nodes alone used 0.55. Processes that end
//! during the span are left out. Owns those two readings; must not judge
//! them (the verdict does). Also each of this process's threads
//! (`own_threads`).

use std::time::Instant;

/// CPU seconds this process has used (user + system).
pub fn own() -> Option<f64> {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Some(t(u.ru_utime) + t(u.ru_stime))
}

/// Each of this process's threads' times (`/proc/self/task`), the busiest
/// `strata_api::threads::MAX_THREADS`: the generator's threads, read as a
/// node reads its own.
pub fn own_threads() -> Vec<strata_api::threads::ThreadTimes> {
    use strata_api::threads::{busiest, from_task};
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let read = |t: &std::fs::DirEntry, f: &str| std::fs::read_to_string(t.path().join(f)).ok();
    let all = dir
        .flatten()
        .filter_map(|t| {
            from_task(
                t.file_name().to_str()?,
                &read(&t, "schedstat")?,
                &read(&t, "comm")?,
            )
        })
        .collect();
    busiest(all)
}

/// The generator's threads over a run: marked once when the counted part
/// begins, read again at its end; the sending threads, ended by then,
/// bring their own figures.
#[derive(Default)]
pub struct OwnThreads(Option<(Instant, Vec<strata_api::threads::ThreadTimes>)>);

impl OwnThreads {
    /// The first call reads every thread; later calls do nothing.
    pub fn mark(&mut self) {
        if self.0.is_none() {
            self.0 = Some((Instant::now(), own_threads()));
        }
    }

    /// Each thread since the mark, with `sending` (the sending threads'
    /// own), busiest first.
    pub fn since(
        self,
        sending: &[strata_api::threads::ThreadRate],
    ) -> Vec<strata_api::threads::ThreadRate> {
        let mut out = match self.0 {
            Some((t0, before)) => {
                strata_api::threads::rates(&before, &own_threads(), t0.elapsed().as_secs_f64())
            }
            None => Vec::new(),
        };
        out.extend(sending.iter().cloned());
        out.sort_by(|a, b| b.cpu.total_cmp(&a.cpu).then(a.tid.cmp(&b.tid)));
        out
    }
}

/// CPU seconds the machine has been busy: every process now running
/// (user and system), plus the kernel's interrupt and softirq time (the
/// loopback network's work, charged to no process), from `/proc/stat`.
pub fn machine_busy() -> Option<f64> {
    let irq = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| irq_ticks(&t))
        .unwrap_or(0);
    let mut ticks = 0u64;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(e.path().join("stat")) {
            ticks += ticks_of(&text).unwrap_or(0);
        }
    }
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    Some((ticks + irq) as f64 / hz)
}

/// irq + softirq of `/proc/stat`'s `cpu` line (fields 6 and 7).
fn irq_ticks(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    Some(v.get(5)? + v.get(6)?)
}

/// utime + stime of a `/proc/PID/stat` line (fields 14 and 15; the
/// command name in parentheses may hold spaces).
fn ticks_of(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) is f[11].
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The machine's online CPUs, whatever this process's affinity.
pub fn online_cores() -> Option<f64> {
    // SAFETY: sysconf reads a constant.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n > 0).then_some(n as f64)
}

/// The CPUs this process may run on (its affinity).
pub fn own_cpus() -> Option<f64> {
    // SAFETY: sched_getaffinity fills the set we pass; all-zero is valid.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; the size is the set's.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return None;
    }
    // SAFETY: CPU_COUNT reads the set within its size.
    let n = unsafe { libc::CPU_COUNT(&set) };
    (n > 0).then_some(n as f64)
}

/// Readings at the start of a span, to turn into cores at its end.
pub struct Span {
    wall: Instant,
    own: Option<f64>,
    machine: Option<f64>,
}

/// Cores used over a span: by this process and by the whole machine.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Used {
    pub own: Option<f64>,
    pub machine: Option<f64>,
}

impl Span {
    pub fn start() -> Span {
        Span {
            wall: Instant::now(),
            own: own(),
            machine: machine_busy(),
        }
    }

    pub fn end(&self) -> Used {
        let secs = self.wall.elapsed().as_secs_f64().max(1e-3);
        let per = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(b, a)| (b - a).max(0.0) / secs);
        Used {
            own: per(own(), self.own),
            machine: per(machine_busy(), self.machine),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_process_cpu_time_from_its_stat() {
        let line =
            "4242 (strata load (x)) S 1 4242 4242 0 -1 4194304 100 0 0 0 170 45 0 0 20 0 9 0 1 2 3";
        assert_eq!(ticks_of(line), Some(215));
        assert_eq!(ticks_of("4242 (x) S 1"), None);
        assert_eq!(
            irq_ticks("cpu  100 5 50 1000 20 3 2 1 7 0\ncpu0 1 2 3\n"),
            Some(5)
        );
    }

    #[test]
    fn a_busy_loop_shows_in_both() {
        // This thread's own CPU clock, so that a busy machine (tests in
        // parallel) only makes the loop longer, not the assertion wrong.
        let thread_cpu = || {
            let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
            // SAFETY: clock_gettime writes into the struct we pass.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
        };
        let s = Span::start();
        let (c0, t) = (thread_cpu(), Instant::now());
        let mut x = 0u64;
        while thread_cpu() - c0 < 0.3 && t.elapsed().as_secs() < 30 {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let used = thread_cpu() - c0;
        let u = s.end();
        let wall = t.elapsed().as_secs_f64();
        // The thread used `used` s of CPU, however long a busy machine
        // made that take: the process and the machine saw all of it (less
        // /proc's 10 ms ticks at each end), in cores over the span. (On a
        // machine so busy that the loop got under 0.05 s in 30 s this
        // says nothing; it never fails for being slow.)
        assert!(
            u.own.unwrap() * wall >= used - 0.05,
            "{u:?} over {wall} s, {used} s used"
        );
        assert!(
            u.machine.unwrap() * wall >= used - 0.05,
            "{u:?} over {wall} s, {used} s used"
        );
    }
}
