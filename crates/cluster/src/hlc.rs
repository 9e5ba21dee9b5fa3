//! The hybrid logical clock (Kulkarni et al.) that stamps every write: the
//! wall clock in milliseconds in the high 48 bits, a logical counter in the
//! low 16. `now()` never goes back and always exceeds every timestamp the
//! node has observed, so a write coordinated after a message from another
//! node gets a later version than anything that node had stamped, whatever
//! the two wall clocks say. The wall clock itself is injectable
//! (`WallClock`: the system's by default, simulated time in the turmoil
//! tests). Owns time for versions; must not be used to measure durations.
//!
//! Written by hand rather than with `uhlc`: it is 60 lines, versions must
//! pack into a u64 next to a node id, a test offset must shift the wall
//! clock of one process, and a node must accept (not refuse) timestamps from
//! a peer whose clock runs seconds ahead, up to a bound.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

pub const LOGICAL_BITS: u32 = 16;

/// Where a node reads the wall clock: milliseconds since the Unix epoch.
/// The default is the system clock; a deterministic simulation passes its
/// own (simulated time plus an epoch), so versions are a function of the
/// run's seed.
#[derive(Clone)]
pub struct WallClock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl WallClock {
    pub fn system() -> WallClock {
        WallClock(Arc::new(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        }))
    }

    pub fn new(f: impl Fn() -> u64 + Send + Sync + 'static) -> WallClock {
        WallClock(Arc::new(f))
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        (self.0)()
    }
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock::system()
    }
}

impl std::fmt::Debug for WallClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WallClock(..)")
    }
}

pub struct Hlc {
    last: AtomicU64,
    clock: WallClock,
    /// Added to the wall clock (tests shift one node's clock).
    offset_ms: AtomicI64,
    /// A remote timestamp further ahead of our wall clock than this is
    /// followed only up to the bound (a peer with a wildly wrong clock must
    /// not drag the whole cluster into the future).
    max_ahead_ms: u64,
    /// Remote timestamps that exceeded `max_ahead_ms`.
    pub clamped: AtomicU64,
}

impl Hlc {
    pub fn new(offset_ms: i64, max_ahead_ms: u64) -> Hlc {
        Hlc::with_clock(offset_ms, max_ahead_ms, WallClock::system())
    }

    /// A clock reading its wall time from `clock`.
    pub fn with_clock(offset_ms: i64, max_ahead_ms: u64, clock: WallClock) -> Hlc {
        Hlc {
            last: AtomicU64::new(0),
            clock,
            offset_ms: AtomicI64::new(offset_ms),
            max_ahead_ms,
            clamped: AtomicU64::new(0),
        }
    }

    /// Milliseconds since the Unix epoch as this node's (possibly shifted)
    /// wall clock says.
    pub fn wall_ms(&self) -> u64 {
        let real = self.clock.now_ms() as i64;
        (real + self.offset_ms.load(Ordering::Relaxed)).max(0) as u64
    }

    pub fn set_offset_ms(&self, ms: i64) {
        self.offset_ms.store(ms, Ordering::Relaxed);
    }

    pub fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }

    /// A fresh timestamp, later than every one returned or observed before.
    pub fn now(&self) -> u64 {
        let physical = self.wall_ms() << LOGICAL_BITS;
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let next = physical.max(last + 1);
            match self
                .last
                .compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(l) => last = l,
            }
        }
    }

    /// The latest timestamp handed out or observed (no tick).
    pub fn peek(&self) -> u64 {
        self.last.load(Ordering::Acquire)
    }

    /// Take a timestamp seen on a message into account: later `now()`s
    /// exceed it (up to the bound on how far ahead of our wall clock).
    pub fn observe(&self, remote: u64) {
        let limit = (self.wall_ms() + self.max_ahead_ms) << LOGICAL_BITS;
        let r = if remote > limit {
            self.clamped.fetch_add(1, Ordering::Relaxed);
            limit
        } else {
            remote
        };
        self.last.fetch_max(r, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_and_past_observed() {
        let h = Hlc::new(0, 60_000);
        let a = h.now();
        let b = h.now();
        assert!(b > a);
        // A peer 10 s ahead: our next stamp is later than its.
        let ahead = (h.wall_ms() + 10_000) << LOGICAL_BITS;
        h.observe(ahead);
        assert!(h.now() > ahead);
        // Too far ahead: followed only to the bound.
        let far = (h.wall_ms() + 3_600_000) << LOGICAL_BITS;
        h.observe(far);
        assert!(h.now() < far);
        assert_eq!(h.clamped.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_clock_behind_still_orders_after_what_it_saw() {
        let fast = Hlc::new(10_000, 60_000);
        let slow = Hlc::new(-10_000, 60_000);
        let w1 = fast.now();
        slow.observe(w1);
        assert!(slow.now() > w1);
    }

    #[test]
    fn concurrent_stamps_are_unique() {
        let h = std::sync::Arc::new(Hlc::new(0, 1000));
        let mut all: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let h = h.clone();
                    s.spawn(move || (0..10_000).map(|_| h.now()).collect::<Vec<_>>())
                })
                .collect();
            hs.into_iter().flat_map(|t| t.join().unwrap()).collect()
        });
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
    }
}
