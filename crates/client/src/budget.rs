//! The retry budget: retries (and hedges) may add at most a set share of
//! the requests, plus a few per second, so that failing over never
//! multiplies an overload (Finagle's `RetryBudget`, gRPC's retry
//! throttling). Every request deposits `ratio` of a token, every second
//! deposits `per_second`, a retry withdraws one; the balance is capped so a
//! quiet hour does not save up a storm. Owns the balance; must not decide
//! what is retried.

use std::sync::Mutex;
use std::time::Instant;

/// What the budget allows.
#[derive(Clone, Copy, Debug)]
pub struct BudgetConfig {
    /// Retries per request (0.1: at most one retry for ten requests).
    pub ratio: f64,
    /// Retries allowed each second whatever the traffic (so a client that
    /// sends little can still fail over).
    pub per_second: f64,
    /// The most tokens saved up.
    pub cap: f64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            ratio: 0.1,
            per_second: 10.0,
            cap: 100.0,
        }
    }
}

/// A budget shared by every session of a client.
#[derive(Debug)]
pub struct Budget {
    cfg: BudgetConfig,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    balance: f64,
    refilled: Instant,
}

impl Budget {
    pub fn new(cfg: BudgetConfig) -> Budget {
        Budget {
            cfg,
            state: Mutex::new(State {
                // Start with a second's worth: a cold client can fail over.
                balance: cfg.per_second.min(cfg.cap),
                refilled: Instant::now(),
            }),
        }
    }

    /// A request was sent (not a retry).
    pub fn deposit(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.balance = (s.balance + self.cfg.ratio).min(self.cfg.cap);
    }

    /// Take a token for one retry; `false` when the budget is spent.
    pub fn withdraw(&self) -> bool {
        self.withdraw_at(Instant::now())
    }

    fn withdraw_at(&self, now: Instant) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let secs = now.saturating_duration_since(s.refilled).as_secs_f64();
        s.balance = (s.balance + secs * self.cfg.per_second).min(self.cfg.cap);
        s.refilled = now;
        if s.balance >= 1.0 {
            s.balance -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn retries_stay_within_the_share_of_requests() {
        let b = Budget::new(BudgetConfig {
            ratio: 0.1,
            per_second: 0.0,
            cap: 100.0,
        });
        let t = Instant::now();
        let mut retries = 0;
        // Every request fails and wants a retry: an overloaded cluster.
        for _ in 0..10_000 {
            b.deposit();
            if b.withdraw_at(t) {
                retries += 1;
            }
        }
        assert!((990..=1000).contains(&retries), "{retries}");
    }

    #[test]
    fn the_reserve_refills_with_time_and_is_capped() {
        let b = Budget::new(BudgetConfig {
            ratio: 0.0,
            per_second: 10.0,
            cap: 20.0,
        });
        let t = Instant::now();
        let n = (0..100).filter(|_| b.withdraw_at(t)).count();
        assert_eq!(n, 10, "a second's worth to start");
        let later = t + Duration::from_secs(3600);
        let n = (0..100).filter(|_| b.withdraw_at(later)).count();
        assert_eq!(n, 20, "an hour saves up only the cap");
    }
}
