//! When to hedge a GET ("The Tail at Scale", Dean and Barroso): a second
//! request goes to another replica once the first has taken longer than a
//! percentile of recent GETs (the 95th by default), never sooner than a
//! floor. The recent latencies are a ring of the last 1,024 answers; the
//! percentile is recomputed every 64. Owns the estimate; must not send.

use std::sync::Mutex;
use std::time::Duration;

const RING: usize = 1024;
const EVERY: usize = 64;

/// Recent GET latencies, shared by every session.
#[derive(Debug)]
pub struct Window {
    quantile: f64,
    floor: Duration,
    state: Mutex<Ring>,
}

#[derive(Debug)]
struct Ring {
    us: Vec<u32>,
    next: usize,
    since: usize,
    delay: Duration,
}

impl Window {
    /// Hedge after the `quantile` of recent latencies, at least `floor`.
    pub fn new(quantile: f64, floor: Duration) -> Window {
        Window {
            quantile: quantile.clamp(0.5, 0.9999),
            floor,
            state: Mutex::new(Ring {
                us: Vec::with_capacity(RING),
                next: 0,
                since: 0,
                // Until there is a history: a generous default.
                delay: floor.max(Duration::from_millis(10)),
            }),
        }
    }

    pub fn record(&self, latency: Duration) {
        let us = latency.as_micros().min(u32::MAX as u128) as u32;
        let mut r = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if r.us.len() < RING {
            r.us.push(us);
        } else {
            let i = r.next;
            r.us[i] = us;
        }
        r.next = (r.next + 1) % RING;
        r.since += 1;
        if r.since >= EVERY && r.us.len() >= EVERY {
            r.since = 0;
            let mut sorted = r.us.clone();
            let k = ((sorted.len() - 1) as f64 * self.quantile).round() as usize;
            let (_, v, _) = sorted.select_nth_unstable(k);
            r.delay = Duration::from_micros(*v as u64).max(self.floor);
        }
    }

    /// How long a GET may take before it is hedged.
    pub fn delay(&self) -> Duration {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_follows_the_percentile_of_recent_latencies() {
        let w = Window::new(0.95, Duration::from_micros(100));
        for i in 0..1000u64 {
            w.record(Duration::from_micros(1000 + i));
        }
        let d = w.delay().as_micros();
        assert!((1900..=1960).contains(&d), "{d}");
        // Faster answers later: the ring forgets the old ones.
        for _ in 0..RING {
            w.record(Duration::from_micros(10));
        }
        assert_eq!(
            w.delay(),
            Duration::from_micros(100),
            "never below the floor"
        );
    }
}
