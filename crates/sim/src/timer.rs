//! A runtime's timer in virtual time, as tokio 1.6 (the seed program's
//! runtime) implements it: a hierarchical wheel of whole ticks counted from
//! the start of the run (6 levels of 64 slots), turned by one thread. A
//! sleep's deadline is rounded up to a tick and filed at the level of the
//! highest 6-bit group in which it differs from the wheel's time; the
//! thread must wake at the start of its slot there (the tick itself on
//! level 0) to fire it or file it lower. The thread sleeps from the moment
//! it parks for whole ticks until the first such wake (so it wakes at that
//! tick plus its park's phase, plus the OS's slack on its sleep), and at
//! each wake fires every timer due by then, together. A sleep due before
//! the tick the thread sleeps for wakes it (after a thread wake-up), and it
//! parks again from there. It also keeps the clients' thread: tasks woken
//! for it run after one wake-up, together with any already waiting for
//! that wake-up. Owns the timers, the thread's wakes and the wake-up draws;
//! must not know what a fired event means (that is `model`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use crate::des::{same_gen, Ev};
use crate::dist::Sampler;
use crate::rng::SimRng;
use crate::scenario::node::Timer;

/// The random stream of wake-up draws (apart from the stages' and the
/// clients', so that adding a timer does not reshuffle theirs).
const STREAM: u64 = 0x7469_6d65;

/// A pending timer. Ordered by the tick the thread must wake at for it
/// (its slot's start), then by registration order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    wake: u64,
    seq: u64,
    /// The tick it is due at.
    when: u64,
    ev: u64,
    /// When it was registered.
    since: u64,
}

pub struct TimerRt {
    tick: u64,
    slack_fraction: f64,
    slack_max: u64,
    wakeup: Option<Sampler>,
    rng: SimRng,
    wheel: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    /// The wheel's time: the tick of the thread's last wake.
    elapsed: u64,
    /// The tick the thread sleeps for (u64::MAX: none, it sleeps until
    /// woken), and when it wakes.
    parked_for: u64,
    wake_at: u64,
    /// Tags the thread's current wake; older scheduled wakes are stale.
    gen: u32,
    /// The thread is firing timers: new ones wait for its next park.
    firing: bool,
    /// When the clients' thread next runs, if a wake-up is under way.
    clients_at: Option<u64>,
}

impl TimerRt {
    pub fn new(spec: &Timer, base: &Path, seed: u64) -> Result<TimerRt, String> {
        let wakeup = spec
            .wakeup
            .as_ref()
            .map(|d| Sampler::compile(d, base).map_err(|e| format!("timer.wakeup: {e}")))
            .transpose()?;
        let (slack_fraction, slack_max) = spec
            .slack
            .map(|s| (s.fraction, s.max.0))
            .unwrap_or((0.0, 0));
        Ok(TimerRt {
            tick: spec.tick.0.max(1),
            slack_fraction,
            slack_max,
            wakeup,
            rng: SimRng::new(seed, STREAM),
            wheel: BinaryHeap::new(),
            seq: 0,
            elapsed: 0,
            parked_for: u64::MAX,
            wake_at: u64::MAX,
            gen: 0,
            firing: false,
            clients_at: None,
        })
    }

    /// Whether woken threads take time to run.
    pub fn has_wakeup(&self) -> bool {
        self.wakeup.is_some()
    }

    /// One thread wake-up (0 without `wakeup`).
    pub fn wakeup(&mut self) -> u64 {
        match &self.wakeup {
            Some(d) => d.sample(&mut self.rng),
            None => 0,
        }
    }

    /// The OS's slack on a sleep of `d` ns.
    pub fn slack(&self, d: u64) -> u64 {
        ((d as f64 * self.slack_fraction) as u64).min(self.slack_max)
    }

    /// A sleep registered at `now`, due at `deadline`, fires `ev`.
    pub fn sleep(&mut self, now: u64, deadline: u64, ev: Ev) -> Slept {
        let when = deadline.div_ceil(self.tick);
        if when <= self.elapsed {
            return Slept::Elapsed;
        }
        self.seq += 1;
        let wake = slot_start(self.elapsed, when);
        self.wheel.push(Reverse(Entry {
            wake,
            seq: self.seq,
            when,
            ev: ev.0,
            since: now,
        }));
        // tokio compares the due tick with the tick the thread sleeps for.
        if self.firing || when >= self.parked_for {
            return Slept::Filed;
        }
        let at = now + self.wakeup();
        if at >= self.wake_at {
            return Slept::Filed; // it wakes before that anyway
        }
        self.parked_for = when;
        self.wake_at = at;
        self.gen = self.gen.wrapping_add(1);
        Slept::Wake(at, self.gen)
    }

    /// Whether a scheduled wake tagged `gen` is the thread's current one.
    pub fn is_current(&self, gen: u32) -> bool {
        same_gen(self.gen, gen)
    }

    /// The thread wakes at `now`: the timers due by the current tick, slot
    /// by slot and in registration order within a slot, each with the
    /// time it was registered. Call `park` when they are handled.
    pub fn fire(&mut self, now: u64, out: &mut Vec<(Ev, u64)>) {
        self.firing = true;
        let due = now / self.tick;
        while let Some(&Reverse(e)) = self.wheel.peek() {
            if e.wake > due {
                break;
            }
            self.wheel.pop();
            if e.when <= e.wake {
                out.push((Ev(e.ev), e.since));
            } else {
                // Its slot's start: file it lower, from there.
                let wake = slot_start(e.wake, e.when);
                self.wheel.push(Reverse(Entry { wake, ..e }));
            }
        }
        self.elapsed = self.elapsed.max(due);
    }

    /// The thread parks at `now` for the first pending tick: whole ticks
    /// from the current one, plus the OS's slack. Returns the wake to
    /// schedule, if any timer is pending.
    pub fn park(&mut self, now: u64) -> Option<(u64, u32)> {
        self.firing = false;
        self.gen = self.gen.wrapping_add(1);
        let Some(&Reverse(Entry { wake: tick, .. })) = self.wheel.peek() else {
            self.parked_for = u64::MAX;
            self.wake_at = u64::MAX;
            return None;
        };
        let d = (tick - now / self.tick) * self.tick;
        self.parked_for = tick;
        self.wake_at = now + d + self.slack(d);
        Some((self.wake_at, self.gen))
    }

    /// A task of the clients' thread was woken at `now`: when it runs. A
    /// wake-up already under way takes it along; else one starts now.
    pub fn clients_run_at(&mut self, now: u64) -> u64 {
        match self.clients_at {
            Some(t) if t >= now => t,
            _ => {
                let t = now + self.wakeup();
                self.clients_at = Some(t);
                t
            }
        }
    }
}

/// What became of a sleep.
#[derive(Debug, PartialEq, Eq)]
pub enum Slept {
    /// Filed; the timer thread wakes for it in its own time.
    Filed,
    /// Filed, and it wakes the timer thread, which must wake then: schedule
    /// the wake (time, tag).
    Wake(u64, u32),
    /// Already due (not after the wheel's time): it fires at once.
    Elapsed,
}

/// The tick the wheel's thread must wake at for a timer due at `when`,
/// filed when the wheel's time is `elapsed`: the start of its slot at the
/// level of the highest 6-bit group in which the two differ (tokio's
/// `level_for`; the tick itself on level 0).
fn slot_start(elapsed: u64, when: u64) -> u64 {
    let masked = (elapsed ^ when) | 63;
    let level = (63 - masked.leading_zeros() as u64) / 6;
    let bits = 6 * level;
    if bits >= 64 {
        return when;
    }
    when & !((1u64 << bits) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::node::Slack;
    use crate::units::Dur;

    const MS: u64 = 1_000_000;

    fn timer(slack: Option<Slack>) -> TimerRt {
        let spec = Timer {
            tick: Dur(MS),
            slack,
            wakeup: None,
        };
        TimerRt::new(&spec, Path::new("."), 1).unwrap()
    }

    /// tokio's rounding and its park: a 1.5 ms sleep registered at 0.3 ms
    /// is due at tick 2; the thread, parked at 0.3 ms, sleeps 2 whole ms
    /// and wakes at 2.3 ms, where both timers due by tick 2 fire together.
    #[test]
    fn rounds_up_to_ticks_and_keeps_the_park_phase() {
        let mut t = timer(None);
        let now = 300_000;
        let Slept::Wake(at, gen) = t.sleep(now, now + 1_500_000, Ev(1)) else {
            panic!("the first sleep wakes the thread")
        };
        assert_eq!(at, now, "an earlier deadline wakes the thread at once");
        assert!(t.is_current(gen));
        assert_eq!(t.sleep(now, now + 1_200_000, Ev(2)), Slept::Filed);
        let mut out = Vec::new();
        t.fire(now, &mut out);
        assert!(out.is_empty());
        let (wake, gen2) = t.park(now).unwrap();
        assert_eq!(wake, 2 * MS + 300_000);
        assert!(!t.is_current(gen) && t.is_current(gen2));
        t.fire(wake, &mut out);
        assert_eq!(
            out,
            vec![(Ev(1), now), (Ev(2), now)],
            "in registration order"
        );
        assert!(t.park(wake).is_none());
    }

    /// The OS's slack lengthens the thread's sleep: 12.5% of it, capped.
    #[test]
    fn slack_is_a_share_of_the_sleep_capped() {
        let mut t = timer(Some(Slack {
            fraction: 0.125,
            max: Dur(MS),
        }));
        assert_eq!(t.slack(2 * MS), 250_000);
        assert_eq!(t.slack(1000 * MS), MS);
        t.sleep(0, 40 * MS, Ev(7));
        let (wake, _) = t.park(0).unwrap();
        assert_eq!(wake, 41 * MS, "40 ms, plus 12.5% capped at 1 ms");
        let mut out = Vec::new();
        t.fire(wake, &mut out);
        assert_eq!(out, vec![(Ev(7), 0)]);
    }

    /// A sleep that crosses a 64-tick boundary is filed on level 1: the
    /// thread wakes at the slot's start (tick 960 for tick 1000), files it
    /// on level 0, and sleeps again, paying the OS's slack twice.
    #[test]
    fn higher_levels_wake_the_thread_at_their_slot_start() {
        assert_eq!(slot_start(0, 5), 5);
        assert_eq!(slot_start(0, 1000), 960);
        assert_eq!(slot_start(960, 1000), 1000);
        assert_eq!(slot_start(63, 65), 64);
        assert_eq!(slot_start(0, 5000), 4096);
        let mut t = timer(Some(Slack {
            fraction: 0.125,
            max: Dur(MS),
        }));
        t.sleep(0, 1000 * MS, Ev(3));
        let (wake, _) = t.park(0).unwrap();
        assert_eq!(wake, 961 * MS, "the slot's start, 1 ms late");
        let mut out = Vec::new();
        t.fire(wake, &mut out);
        assert!(out.is_empty(), "filed lower, not due yet");
        let (wake, _) = t.park(wake).unwrap();
        assert_eq!(wake, 1001 * MS, "39 ms from tick 961, 1 ms late again");
        t.fire(wake, &mut out);
        assert_eq!(out, vec![(Ev(3), 0)]);
    }

    /// Clients woken while a wake-up of their thread is under way run with
    /// it; later ones start another.
    #[test]
    fn clients_woken_together_run_together() {
        let spec = Timer {
            tick: Dur(MS),
            slack: None,
            wakeup: Some(crate::dist::DistSpec::constant(Dur(400_000))),
        };
        let mut t = TimerRt::new(&spec, Path::new("."), 1).unwrap();
        assert_eq!(t.clients_run_at(MS), MS + 400_000);
        assert_eq!(t.clients_run_at(MS + 100_000), MS + 400_000);
        assert_eq!(t.clients_run_at(2 * MS), 2 * MS + 400_000);
    }
}
