//! Where the machine's CPU went during a trial: this process's own CPU
//! (getrusage) and the whole machine's busy time (`/proc/stat`), so a
//! verdict can say how the cores were split between the generator, the
//! nodes and everything else. Owns those two readings; must not judge
//! them (the verdict does).

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

/// CPU seconds the whole machine has been busy (every CPU's user, nice,
/// system, irq, softirq and steal time), from `/proc/stat`.
pub fn machine_busy() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    busy_of(&text)
}

fn busy_of(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is
    // already in user).
    if v.len() < 8 {
        return None;
    }
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    Some((v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz)
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
    fn reads_busy_time_from_proc_stat() {
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let text = "cpu  100 5 50 1000 20 3 2 1 7 0\ncpu0 1 2 3 4 5 6 7 8\n";
        let b = busy_of(text).unwrap();
        assert!((b - 161.0 / hz).abs() < 1e-9, "{b}");
        assert_eq!(busy_of("intr 1 2 3"), None);
    }

    #[test]
    fn a_busy_loop_shows_in_both() {
        let s = Span::start();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(31).wrapping_add(1);
        }
        std::hint::black_box(x);
        let u = s.end();
        // A spinning thread used some CPU, and the machine at least some.
        assert!(u.own.unwrap() > 0.1, "{u:?}");
        assert!(u.machine.unwrap() > 0.05, "{u:?}");
    }
}
