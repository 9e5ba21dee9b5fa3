//! Who is in the cluster and who is reachable: the member list (from
//! configuration), and per peer a phi-accrual failure detector fed by
//! heartbeats and every frame heard. A peer is `up`, `suspect` after about
//! half a second of silence, `down` after about one second, or at once
//! when connecting to it is refused. Owns the members' states; must not
//! decide what to do about them (the coordinator and hints do).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
// tokio's clock: the system's in production, the simulated one under a
// paused or simulated runtime (the turmoil tests).
use tokio::time::Instant;

/// How often a node pings each peer.
pub const HEARTBEAT: Duration = Duration::from_millis(100);
/// phi at which a peer becomes suspect (~460 ms of silence at 100 ms
/// heartbeats) and down (~920 ms).
const PHI_SUSPECT: f64 = 2.0;
const PHI_DOWN: f64 = 4.0;
/// Heartbeat intervals kept for the mean.
const WINDOW: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Up,
    Suspect,
    Down,
}

impl State {
    pub fn as_str(&self) -> &'static str {
        match self {
            State::Up => "up",
            State::Suspect => "suspect",
            State::Down => "down",
        }
    }
}

/// A member of the cluster.
pub struct Member {
    pub url: String,
    pub id: u64,
    pub is_self: bool,
}

struct Inner {
    last_heard: Option<Instant>,
    last_beat: Option<Instant>,
    intervals: Vec<f64>,
    at: usize,
}

/// Phi-accrual failure detection (Hayashibara et al.), with inter-arrival
/// times taken as exponential: phi(t) = t / (mean × ln 10).
pub struct Detector {
    inner: Mutex<Inner>,
    /// Connecting was refused: down until heard from again.
    refused: AtomicBool,
    /// The peer's store refused a write (read-only after a failed fsync,
    /// or a full disk): writes go to other replicas until then.
    read_only_until: Mutex<Option<Instant>>,
}

impl Default for Detector {
    /// A new detector counts as having heard its peer when it was made: a
    /// starting node tries its peers before it has had time to hear them,
    /// and they turn down within a second if they are not there.
    fn default() -> Self {
        Detector {
            inner: Mutex::new(Inner {
                last_heard: Some(Instant::now()),
                last_beat: None,
                intervals: Vec::with_capacity(WINDOW),
                at: 0,
            }),
            refused: AtomicBool::new(false),
            read_only_until: Mutex::new(None),
        }
    }
}

/// How long a peer whose store refused a write is left out of writes
/// before one is tried on it again.
pub const READ_ONLY_FOR: std::time::Duration = std::time::Duration::from_secs(5);

impl Detector {
    /// Any frame from the peer.
    pub fn heard(&self, now: Instant) {
        self.refused.store(false, Ordering::Relaxed);
        let mut i = self.inner.lock();
        i.last_heard = Some(i.last_heard.map_or(now, |l| l.max(now)));
    }

    /// A heartbeat answer: also a sample of the arrival interval.
    pub fn heartbeat(&self, now: Instant) {
        self.heard(now);
        let mut i = self.inner.lock();
        if let Some(prev) = i.last_beat {
            let d = now.saturating_duration_since(prev).as_secs_f64();
            if i.intervals.len() < WINDOW {
                i.intervals.push(d);
            } else {
                let at = i.at;
                i.intervals[at] = d;
                i.at = (at + 1) % WINDOW;
            }
        }
        i.last_beat = Some(now);
    }

    /// Connecting was refused: the process is not there.
    pub fn refused(&self) {
        self.refused.store(true, Ordering::Relaxed);
    }

    /// The peer's store refused a write at `now`.
    pub fn refused_write(&self, now: Instant) {
        *self.read_only_until.lock() = Some(now + READ_ONLY_FOR);
    }

    /// Whether writes should skip the peer at `now`: its store refused
    /// one less than `READ_ONLY_FOR` ago.
    pub fn refuses_writes(&self, now: Instant) -> bool {
        self.read_only_until.lock().is_some_and(|t| now < t)
    }

    pub fn last_heard(&self) -> Option<Instant> {
        self.inner.lock().last_heard
    }

    pub fn phi(&self, now: Instant) -> f64 {
        let i = self.inner.lock();
        let Some(last) = i.last_heard else {
            return f64::INFINITY;
        };
        let mean = if i.intervals.is_empty() {
            HEARTBEAT.as_secs_f64()
        } else {
            i.intervals.iter().sum::<f64>() / i.intervals.len() as f64
        }
        // Never trust a mean below the heartbeat period: a burst of
        // answers must not make a short pause look like a death.
        .max(HEARTBEAT.as_secs_f64());
        now.saturating_duration_since(last).as_secs_f64() / (mean * std::f64::consts::LN_10)
    }

    pub fn state(&self, now: Instant) -> State {
        if self.refused.load(Ordering::Relaxed) {
            return State::Down;
        }
        let phi = self.phi(now);
        if phi >= PHI_DOWN {
            State::Down
        } else if phi >= PHI_SUSPECT {
            State::Suspect
        } else {
            State::Up
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_makes_a_peer_suspect_then_down() {
        let d = Detector::default();
        let t0 = Instant::now();
        assert_eq!(d.state(t0), State::Up, "a grace period at start");
        assert_eq!(
            d.state(t0 + Duration::from_secs(2)),
            State::Down,
            "never heard"
        );
        for i in 0..20 {
            d.heartbeat(t0 + HEARTBEAT * i);
        }
        let last = t0 + HEARTBEAT * 19;
        assert_eq!(d.state(last + Duration::from_millis(150)), State::Up);
        assert_eq!(d.state(last + Duration::from_millis(600)), State::Suspect);
        assert_eq!(d.state(last + Duration::from_millis(1000)), State::Down);
        d.heard(last + Duration::from_millis(1000));
        assert_eq!(d.state(last + Duration::from_millis(1010)), State::Up);
        d.refused();
        assert_eq!(d.state(last + Duration::from_millis(1010)), State::Down);
    }
}
