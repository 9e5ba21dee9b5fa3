//! When each request should be sent: a constant rate, or Poisson arrivals
//! at the same mean. Owns the intended-send-time sequence; must not send.

use std::time::Duration;

use rand::{Rng, SeedableRng};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Arrivals {
    Constant,
    Poisson,
}

/// Offsets from the start of the run, one per request, in order.
pub struct Schedule {
    rate: f64,
    arrivals: Arrivals,
    rng: rand::rngs::StdRng,
    next: f64,
}

impl Schedule {
    pub fn new(rate: f64, arrivals: Arrivals, seed: u64) -> Schedule {
        Schedule {
            rate,
            arrivals,
            rng: rand::rngs::StdRng::seed_from_u64(seed),
            next: 0.0,
        }
    }

    /// A schedule whose first send is at `first` (a thread's share of a
    /// constant schedule starts at its place in the round).
    pub fn starting_at(rate: f64, arrivals: Arrivals, seed: u64, first: Duration) -> Schedule {
        let mut s = Schedule::new(rate, arrivals, seed);
        s.next = first.as_secs_f64();
        s
    }

    /// The intended send time of the next request, as an offset.
    pub fn next_offset(&mut self) -> Duration {
        let t = self.next;
        let gap = match self.arrivals {
            Arrivals::Constant => 1.0 / self.rate,
            Arrivals::Poisson => {
                // Exponential inter-arrival times with mean 1/rate.
                let u: f64 = self.rng.random_range(f64::MIN_POSITIVE..1.0);
                -u.ln() / self.rate
            }
        };
        self.next += gap;
        Duration::from_secs_f64(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let mut s = Schedule::new(1000.0, Arrivals::Constant, 1);
        let v: Vec<_> = (0..3).map(|_| s.next_offset()).collect();
        assert_eq!(v[0], Duration::ZERO);
        assert_eq!(v[2], Duration::from_millis(2));
    }

    #[test]
    fn poisson_has_the_same_mean_rate() {
        let mut s = Schedule::new(10_000.0, Arrivals::Poisson, 7);
        let mut last = Duration::ZERO;
        for _ in 0..100_000 {
            last = s.next_offset();
        }
        // 100,000 arrivals at 10,000/s take about 10 s (within 2%).
        let secs = last.as_secs_f64();
        assert!((9.8..10.2).contains(&secs), "{secs}");
    }
}
