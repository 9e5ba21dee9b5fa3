//! Whether a member is worth sending to: after `down_after` failures in a
//! row (refused connections, resets, timeouts) it is marked down and
//! requests go to the others; once its back-off has passed, one probe
//! (`GET /v0/status`) is allowed at a time, and a success brings it back.
//! The back-off doubles with each failed probe, up to a bound. Apart from
//! that, a member is *stalled* while requests to it are outstanding and it
//! has answered nothing for a while (a stopped process, a stalled VM, a
//! disk that froze): new requests try it last until it answers again,
//! without counting it as failed (Cassandra's dynamic snitch and Finagle's
//! least-loaded balancer steer the same way). Owns one member's state; must
//! not send requests.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One member's health, shared by every session.
#[derive(Debug)]
pub struct Health {
    origin: Instant,
    failures: AtomicU32,
    /// Milliseconds since `origin` until which it is down (0: up).
    down_until_ms: AtomicU64,
    backoff_ms: AtomicU64,
    probing: AtomicBool,
    /// How many times it was marked down.
    pub marked_down: AtomicU64,
    /// Requests sent to it and not yet answered (or given up).
    in_flight: AtomicU32,
    /// When it last answered anything, or was first sent to after a
    /// quiet spell, µs since `origin`.
    last_answer_us: AtomicU64,
}

/// Failures in a row that mark a member down, and its back-off's range.
#[derive(Clone, Copy, Debug)]
pub struct HealthConfig {
    pub down_after: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            down_after: 2,
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl Health {
    pub fn new(origin: Instant, cfg: &HealthConfig) -> Health {
        Health {
            origin,
            failures: AtomicU32::new(0),
            down_until_ms: AtomicU64::new(0),
            backoff_ms: AtomicU64::new(cfg.first_backoff.as_millis() as u64),
            probing: AtomicBool::new(false),
            marked_down: AtomicU64::new(0),
            in_flight: AtomicU32::new(0),
            last_answer_us: AtomicU64::new(0),
        }
    }

    fn now_us(&self) -> u64 {
        self.origin.elapsed().as_micros() as u64
    }

    /// A request to it is sent (pair with `answered` or `abandoned`).
    pub fn sending(&self) {
        if self.in_flight.fetch_add(1, Ordering::AcqRel) == 0 {
            // Nothing was outstanding: its silence until now says nothing.
            self.last_answer_us.store(self.now_us(), Ordering::Relaxed);
        }
    }

    /// It answered a request.
    pub fn answered(&self) {
        self.last_answer_us.store(self.now_us(), Ordering::Relaxed);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// A request to it ended without its answer (failed, timed out, or
    /// cut when a hedge won).
    pub fn abandoned(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether requests to it are outstanding and it has answered none for
    /// longer than `quiet`.
    pub fn is_stalled(&self, quiet: Duration) -> bool {
        self.in_flight.load(Ordering::Acquire) > 0
            && self
                .now_us()
                .saturating_sub(self.last_answer_us.load(Ordering::Relaxed))
                > quiet.as_micros() as u64
    }

    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64 + 1
    }

    /// Whether it is down (its back-off not over, or a probe under way).
    pub fn is_down(&self) -> bool {
        let until = self.down_until_ms.load(Ordering::Relaxed);
        until != 0 && (until > self.now_ms() || self.probing.load(Ordering::Relaxed))
    }

    /// Whether it is marked down at all (a probe may be due).
    pub fn marked(&self) -> bool {
        self.down_until_ms.load(Ordering::Relaxed) != 0
    }

    /// Take the one probe of a member whose back-off has passed.
    pub fn take_probe(&self) -> bool {
        let until = self.down_until_ms.load(Ordering::Relaxed);
        until != 0
            && until <= self.now_ms()
            && self
                .probing
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// A request or probe it answered.
    pub fn success(&self, cfg: &HealthConfig) {
        self.failures.store(0, Ordering::Relaxed);
        if self.down_until_ms.load(Ordering::Relaxed) != 0 {
            self.down_until_ms.store(0, Ordering::Relaxed);
            self.backoff_ms
                .store(cfg.first_backoff.as_millis() as u64, Ordering::Relaxed);
        }
        self.probing.store(false, Ordering::Release);
    }

    /// A request or probe it did not answer.
    pub fn failure(&self, cfg: &HealthConfig) {
        let n = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
        let probe = self.probing.load(Ordering::Relaxed);
        if n >= cfg.down_after || probe {
            let mut backoff = self.backoff_ms.load(Ordering::Relaxed);
            if probe {
                // A failed probe: twice as long before the next.
                backoff = (backoff * 2).min(cfg.max_backoff.as_millis() as u64);
                self.backoff_ms.store(backoff, Ordering::Relaxed);
            }
            if self.down_until_ms.load(Ordering::Relaxed) == 0 {
                self.marked_down.fetch_add(1, Ordering::Relaxed);
            }
            self.down_until_ms
                .store(self.now_ms() + backoff, Ordering::Relaxed);
        }
        self.probing.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_after_failures_and_back_after_a_probe() {
        let cfg = HealthConfig {
            down_after: 2,
            first_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(80),
        };
        let h = Health::new(Instant::now(), &cfg);
        h.failure(&cfg);
        assert!(!h.is_down(), "one failure is not enough");
        h.failure(&cfg);
        assert!(h.is_down());
        assert!(!h.take_probe(), "not before its back-off");
        std::thread::sleep(Duration::from_millis(25));
        assert!(h.take_probe());
        assert!(!h.take_probe(), "one probe at a time");
        assert!(h.is_down(), "down while probed");
        // The probe fails: down again, for twice as long.
        h.failure(&cfg);
        std::thread::sleep(Duration::from_millis(25));
        assert!(h.is_down());
        std::thread::sleep(Duration::from_millis(20));
        assert!(h.take_probe());
        h.success(&cfg);
        assert!(!h.is_down() && !h.marked());
        assert_eq!(h.marked_down.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn stalled_while_requests_wait_and_it_answers_none() {
        let h = Health::new(Instant::now(), &HealthConfig::default());
        let quiet = Duration::from_millis(5);
        std::thread::sleep(Duration::from_millis(10));
        assert!(!h.is_stalled(quiet), "idle is not stalled");
        h.sending();
        assert!(!h.is_stalled(quiet), "the quiet before a send says nothing");
        std::thread::sleep(Duration::from_millis(10));
        assert!(h.is_stalled(quiet));
        h.sending();
        h.answered();
        assert!(!h.is_stalled(quiet), "an answer ends it");
        h.abandoned();
        std::thread::sleep(Duration::from_millis(10));
        assert!(!h.is_stalled(quiet), "nothing outstanding");
    }
}
