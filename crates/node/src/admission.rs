//! Admission control between the network and the store: at most
//! `max_in_service` requests in service, at most `max_waiting` waiting, each
//! for at most `max_wait`. A request that finds no room, or waits too long,
//! is refused at once (the API answers 503 with `Retry-After`). Owns the
//! limits and the counts of admitted-at-once, admitted-after-waiting and
//! refused (the node's `request-nonblock` / `request-block` figures), and
//! the adaptive mode that moves the in-service limit to hold service time
//! near a target; must not know about HTTP.
//!
//! The adaptive mode checks each cut: by Little's law a window's mean
//! concurrency is (time in service) / (window length). If latency comes
//! from requests queueing behind each other in service, it falls with that
//! concurrency; if it comes from somewhere else (the node's core taken by
//! refusing 10x its capacity, a slow disk), a cut only lowers throughput.
//! A cut after which service time fell by less than half as much as
//! concurrency did is undone, and the limit is not cut again for a while.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How the limit of requests in service moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The limit stays at `max_in_service`.
    Fixed,
    /// AIMD on service time: every `ADJUST_EVERY`, if the mean time from
    /// admission to answer exceeded `target`, the limit shrinks by 10%
    /// (not below `min`); if it stayed under and the limit was nearly all
    /// in use, the limit grows by 5% (at least 1, at most `max_in_service`).
    /// The node then refuses early instead of letting latency grow.
    Adaptive { target: Duration, min: usize },
}

/// How often the adaptive limit is adjusted.
pub const ADJUST_EVERY: Duration = Duration::from_millis(100);

/// Windows without cuts after a cut that did not help.
const HOLD_WINDOWS: u32 = 20;
/// Windows a cut waits for concurrency to fall before it is judged.
const JUDGE_WITHIN: u32 = 3;

/// What the controller saw in one window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Mean requests in service (time in service / window length).
    pub concurrency: f64,
    /// Mean time in service.
    pub mean: Duration,
}

/// Whether a cut helped: `Some(true)` if, from `before` to `after`, mean
/// service time fell by at least half as much (relatively) as mean
/// concurrency did; `Some(false)` if concurrency fell and latency did not
/// follow; `None` while concurrency has not fallen by 3% yet (permits come
/// back as requests finish, so a cut takes effect gradually).
pub fn cut_helped(before: Window, after: Window) -> Option<bool> {
    if before.concurrency <= 0.0 || before.mean.is_zero() {
        return None;
    }
    let fell_n = 1.0 - after.concurrency / before.concurrency;
    if fell_n < 0.03 {
        return None;
    }
    let fell_w = 1.0 - after.mean.as_secs_f64() / before.mean.as_secs_f64();
    Some(fell_w >= 0.5 * fell_n)
}

/// The adaptive controller's memory between windows.
struct Controller {
    window_start: Instant,
    /// A cut waiting for its verdict: the limit before it, the window
    /// that prompted it, and how many windows are left to judge it.
    cut: Option<(usize, Window, u32)>,
    /// Windows left during which the limit is not cut.
    hold: u32,
}

/// The adaptive rule, as a function: the next limit from the current one,
/// the window's mean service time and the most requests in service seen.
pub fn next_limit(
    limit: usize,
    mean: Duration,
    peak: usize,
    target: Duration,
    min: usize,
    max: usize,
) -> usize {
    if mean > target {
        ((limit as f64 * 0.9).floor() as usize).max(min)
    } else if peak * 10 >= limit * 8 {
        (limit + (limit / 20).max(1)).min(max)
    } else {
        limit
    }
}

struct Shared {
    permits: Arc<Semaphore>,
    /// Permits that will be forgotten when returned (the limit shrank while
    /// they were in use).
    debt: AtomicUsize,
    window_nanos: AtomicU64,
    window_count: AtomicU64,
    window_peak: AtomicUsize,
    /// Time each ticket was held (admission to answer), and time each
    /// admitted or refused request waited: the service and wait
    /// distributions a model of this node is calibrated from.
    service: Histogram,
    wait: Histogram,
}

pub struct Admission {
    shared: Arc<Shared>,
    mode: Mode,
    limit: AtomicUsize,
    max_in_service: usize,
    max_waiting: usize,
    max_wait: Duration,
    waiting: AtomicUsize,
    controller: std::sync::Mutex<Controller>,
    pub admitted_at_once: AtomicU64,
    pub admitted_after_wait: AtomicU64,
    pub refused_full: AtomicU64,
    pub refused_timeout: AtomicU64,
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No permit and the waiting line is full.
    QueueFull,
    /// Waited `max_wait` without getting a permit.
    WaitedTooLong,
}

/// A place in service; dropping it frees the place and records how long it
/// was held.
pub struct Ticket {
    permit: Option<OwnedSemaphorePermit>,
    shared: Arc<Shared>,
    since: Instant,
    /// True if the request had to wait.
    pub waited: bool,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let s = &self.shared;
        s.window_nanos
            .fetch_add(self.since.elapsed().as_nanos() as u64, Ordering::Relaxed);
        s.window_count.fetch_add(1, Ordering::Relaxed);
        s.service.observe(self.since.elapsed().as_secs_f64());
        let permit = self.permit.take().expect("ticket holds a permit");
        let paid = s
            .debt
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| d.checked_sub(1))
            .is_ok();
        if paid {
            permit.forget();
        }
    }
}

impl Admission {
    pub fn new(mode: Mode, max_in_service: usize, max_waiting: usize, max_wait: Duration) -> Self {
        // Adaptive starts at the ceiling and comes down if service time says
        // so: starting low would refuse good traffic while it climbs.
        let initial = max_in_service;
        Admission {
            shared: Arc::new(Shared {
                permits: Arc::new(Semaphore::new(initial)),
                debt: AtomicUsize::new(0),
                window_nanos: AtomicU64::new(0),
                window_count: AtomicU64::new(0),
                window_peak: AtomicUsize::new(0),
                service: Histogram::new(exponential_buckets(10e-6, 2.0, 22)),
                wait: Histogram::new(exponential_buckets(10e-6, 2.0, 22)),
            }),
            mode,
            limit: AtomicUsize::new(initial),
            max_in_service,
            max_waiting,
            max_wait,
            waiting: AtomicUsize::new(0),
            controller: std::sync::Mutex::new(Controller {
                window_start: Instant::now(),
                cut: None,
                hold: 0,
            }),
            admitted_at_once: AtomicU64::new(0),
            admitted_after_wait: AtomicU64::new(0),
            refused_full: AtomicU64::new(0),
            refused_timeout: AtomicU64::new(0),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    fn ticket(&self, p: OwnedSemaphorePermit, waited: bool) -> Ticket {
        let in_service = self.in_service();
        self.shared
            .window_peak
            .fetch_max(in_service, Ordering::Relaxed);
        Ticket {
            permit: Some(p),
            shared: self.shared.clone(),
            since: Instant::now(),
            waited,
        }
    }

    /// Take a place in service. `already` is how long the request waited
    /// before it was read (in its socket, for a runtime worker): it counts
    /// against `max_wait`, and a request that already waited that long is
    /// refused before anything else is done for it. `on_wait` runs once if
    /// the request has to wait (the node fires its `request-block` probe
    /// there).
    pub async fn admit(
        &self,
        already: Duration,
        on_wait: impl FnOnce(),
    ) -> Result<Ticket, Refused> {
        self.admit_within(self.max_wait, already, on_wait).await
    }

    /// `admit`, with the longest wait cut to `within` if that is shorter
    /// (the node's overload guard shortens it while it turns work away).
    pub async fn admit_within(
        &self,
        within: Duration,
        already: Duration,
        on_wait: impl FnOnce(),
    ) -> Result<Ticket, Refused> {
        let max_wait = self.max_wait.min(within);
        if already >= max_wait {
            self.refused_timeout.fetch_add(1, Ordering::Relaxed);
            self.shared.wait.observe(already.as_secs_f64());
            return Err(Refused::WaitedTooLong);
        }
        if let Ok(p) = self.shared.permits.clone().try_acquire_owned() {
            self.admitted_at_once.fetch_add(1, Ordering::Relaxed);
            return Ok(self.ticket(p, false));
        }
        // Take a place in the waiting line, if there is one.
        let mut w = self.waiting.load(Ordering::Relaxed);
        loop {
            if w >= self.max_waiting {
                self.refused_full.fetch_add(1, Ordering::Relaxed);
                return Err(Refused::QueueFull);
            }
            match self
                .waiting
                .compare_exchange_weak(w, w + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => w = now,
            }
        }
        on_wait();
        let waited_from = Instant::now();
        let r = tokio::time::timeout(
            max_wait - already,
            self.shared.permits.clone().acquire_owned(),
        )
        .await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        self.shared
            .wait
            .observe((already + waited_from.elapsed()).as_secs_f64());
        match r {
            Ok(Ok(p)) => {
                self.admitted_after_wait.fetch_add(1, Ordering::Relaxed);
                Ok(self.ticket(p, true))
            }
            _ => {
                self.refused_timeout.fetch_add(1, Ordering::Relaxed);
                Err(Refused::WaitedTooLong)
            }
        }
    }

    /// Move the limit to `new` (taking permits back as they return).
    pub fn set_limit(&self, new: usize) {
        let old = self.limit.swap(new, Ordering::AcqRel);
        let s = &self.shared;
        if new > old {
            let mut add = new - old;
            // Cancel debt first: those permits stay in circulation.
            while add > 0 {
                match s
                    .debt
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| d.checked_sub(1))
                {
                    Ok(_) => add -= 1,
                    Err(_) => break,
                }
            }
            s.permits.add_permits(add);
        } else if new < old {
            let take = old - new;
            let forgotten = s.permits.forget_permits(take);
            s.debt.fetch_add(take - forgotten, Ordering::AcqRel);
        }
    }

    /// One step of the adaptive rule; returns the new limit. A no-op in
    /// fixed mode.
    pub fn adjust(&self) -> usize {
        let limit = self.limit();
        let Mode::Adaptive { target, min } = self.mode else {
            return limit;
        };
        let s = &self.shared;
        let mut c = self.controller.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let length = now.duration_since(c.window_start).as_secs_f64();
        c.window_start = now;
        let n = s.window_count.swap(0, Ordering::AcqRel);
        let nanos = s.window_nanos.swap(0, Ordering::AcqRel);
        let peak = s.window_peak.swap(self.in_service(), Ordering::AcqRel);
        if n == 0 || length <= 0.0 {
            return limit;
        }
        let window = Window {
            concurrency: nanos as f64 / 1e9 / length,
            mean: Duration::from_nanos(nanos / n),
        };
        if let Some((before_limit, before, left)) = c.cut.take() {
            match cut_helped(before, window) {
                Some(true) => {}
                Some(false) => {
                    // Latency did not follow concurrency down: undo.
                    c.hold = HOLD_WINDOWS;
                    self.set_limit(before_limit);
                    return before_limit;
                }
                None if left > 1 => {
                    c.cut = Some((before_limit, before, left - 1));
                    return limit;
                }
                None => {}
            }
        }
        let mut next = next_limit(
            limit,
            window.mean,
            peak,
            target,
            min.max(1),
            self.max_in_service,
        );
        if next < limit {
            if c.hold > 0 {
                next = limit;
            } else {
                c.cut = Some((limit, window, JUDGE_WITHIN));
            }
        }
        c.hold = c.hold.saturating_sub(1);
        if next != limit {
            self.set_limit(next);
        }
        next
    }

    /// Histograms of time in service and time waiting (for /metrics).
    pub fn histograms(&self) -> (Histogram, Histogram) {
        (self.shared.service.clone(), self.shared.wait.clone())
    }

    /// The configured bounds: ceiling of requests in service, waiting
    /// places, longest wait.
    pub fn bounds(&self) -> (usize, usize, Duration) {
        (self.max_in_service, self.max_waiting, self.max_wait)
    }

    /// The current limit of requests in service.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Acquire)
    }

    pub fn in_service(&self) -> usize {
        let s = &self.shared;
        (self.limit() + s.debt.load(Ordering::Acquire))
            .saturating_sub(s.permits.available_permits())
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn limits_in_service_waiting_and_wait_time() {
        let a = Arc::new(Admission::new(Mode::Fixed, 2, 1, Duration::from_millis(50)));
        let t1 = a.admit(Duration::ZERO, || ()).await.unwrap();
        let _t2 = a.admit(Duration::ZERO, || ()).await.unwrap();
        assert!(!t1.waited);
        assert_eq!(a.in_service(), 2);
        // Third waits (line of 1), fourth finds the line full.
        let a2 = a.clone();
        let waiter =
            tokio::spawn(async move { a2.admit(Duration::ZERO, || ()).await.map(|t| t.waited) });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(a.waiting(), 1);
        assert_eq!(
            a.admit(Duration::ZERO, || ()).await.err(),
            Some(Refused::QueueFull)
        );
        drop(t1);
        assert_eq!(waiter.await.unwrap(), Ok(true));
        // Nobody leaves now: a waiter times out.
        let t = a.admit(Duration::ZERO, || ()).await; // the freed permit went to the waiter, which dropped it
        assert!(t.is_ok());
        assert_eq!(
            a.admit(Duration::ZERO, || ()).await.err(),
            Some(Refused::WaitedTooLong)
        );
        assert_eq!(a.admitted_at_once.load(Ordering::Relaxed), 3);
        assert_eq!(a.admitted_after_wait.load(Ordering::Relaxed), 1);
        assert_eq!(a.refused_full.load(Ordering::Relaxed), 1);
        assert_eq!(a.refused_timeout.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn time_waited_before_the_read_counts_against_the_wait() {
        let a = Admission::new(Mode::Fixed, 1, 8, Duration::from_millis(100));
        // Room in service, but the request already waited its bound in
        // the socket: refused without taking a place.
        let r = a.admit(Duration::from_millis(100), || ()).await;
        assert_eq!(r.err(), Some(Refused::WaitedTooLong));
        assert_eq!(a.in_service(), 0);
        let _t = a.admit(Duration::from_millis(99), || ()).await.unwrap();
        // Waiting for the one place: only what is left of the bound.
        let start = std::time::Instant::now();
        let r = a.admit(Duration::from_millis(70), || ()).await;
        assert_eq!(r.err(), Some(Refused::WaitedTooLong));
        assert!(
            start.elapsed() < Duration::from_millis(90),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn aimd_rule() {
        let t = Duration::from_millis(10);
        let ms = Duration::from_millis;
        // Too slow: shrink 10%, never below min.
        assert_eq!(next_limit(100, ms(20), 100, t, 4, 256), 90);
        assert_eq!(next_limit(4, ms(20), 4, t, 4, 256), 4);
        // Fast and the limit is what holds us back: grow 5%, at least 1.
        assert_eq!(next_limit(100, ms(2), 90, t, 4, 256), 105);
        assert_eq!(next_limit(4, ms(2), 4, t, 4, 256), 5);
        assert_eq!(next_limit(256, ms(2), 256, t, 4, 256), 256);
        // Fast but mostly idle: stay.
        assert_eq!(next_limit(100, ms(2), 10, t, 4, 256), 100);
    }

    #[test]
    fn a_cut_is_judged_by_whether_latency_followed_concurrency() {
        let w = |concurrency: f64, ms: u64| Window {
            concurrency,
            mean: Duration::from_millis(ms),
        };
        // Queueing in service: 10% less concurrency, 10% less latency.
        assert_eq!(cut_helped(w(100.0, 50), w(90.0, 45)), Some(true));
        // Half as much is still worth it.
        assert_eq!(cut_helped(w(100.0, 50), w(90.0, 47)), Some(true));
        // Latency stayed (the core is taken by something else): undo.
        assert_eq!(cut_helped(w(100.0, 50), w(90.0, 50)), Some(false));
        assert_eq!(cut_helped(w(100.0, 50), w(80.0, 60)), Some(false));
        // The cut has not taken effect yet.
        assert_eq!(cut_helped(w(100.0, 50), w(99.0, 30)), None);
        assert_eq!(cut_helped(w(0.0, 50), w(0.0, 30)), None);
    }

    /// A node whose service time does not depend on concurrency (every
    /// request takes 20 ms whatever the limit, as when refusals take the
    /// core): the AIMD rule alone would cut to the floor; the check undoes
    /// the cut and holds.
    #[tokio::test]
    async fn cuts_that_do_not_lower_latency_are_undone() {
        let a = adaptive_10ms();
        let seen = drive(&a, 25, |_| Duration::from_millis(20)).await;
        let lowest = *seen.iter().min().unwrap();
        assert!(lowest >= 80, "limit fell to {lowest}: {seen:?}");
        assert!(
            seen.contains(&90),
            "the limit was never tried lower: {seen:?}"
        );
    }

    /// And a node where requests queue behind each other in service (time
    /// in service grows with the number in service) is still brought down
    /// to its target: 0.4 ms per request in service, 10 ms target, so about
    /// 25 in service.
    #[tokio::test]
    async fn cuts_that_lower_latency_go_on() {
        let a = adaptive_10ms();
        let seen = drive(&a, 25, |n| Duration::from_micros(400 * n as u64)).await;
        let last = *seen.last().unwrap();
        assert!(last <= 40, "limit stayed at {last}: {seen:?}");
    }

    /// Adaptive, 10 ms target, limit 1 to 100, room for every waiter.
    fn adaptive_10ms() -> Arc<Admission> {
        Arc::new(Admission::new(
            Mode::Adaptive {
                target: Duration::from_millis(10),
                min: 1,
            },
            100,
            1000,
            Duration::from_secs(10),
        ))
    }

    /// Run `windows` adjustment windows, each five waves of `limit`
    /// requests holding their ticket for `hold(in service)`; return the
    /// limit after each.
    async fn drive(a: &Arc<Admission>, windows: usize, hold: fn(usize) -> Duration) -> Vec<usize> {
        let mut seen = vec![];
        for _ in 0..windows {
            let mut tasks = vec![];
            for _ in 0..a.limit() * 5 {
                let a = a.clone();
                tasks.push(tokio::spawn(async move {
                    let t = a.admit(Duration::ZERO, || ()).await.unwrap();
                    tokio::time::sleep(hold(a.in_service())).await;
                    drop(t);
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            seen.push(a.adjust());
        }
        seen
    }

    #[tokio::test]
    async fn limit_shrinks_while_permits_are_out_and_grows_back() {
        let a = Admission::new(
            Mode::Adaptive {
                target: Duration::from_micros(100),
                min: 1,
            },
            8,
            0,
            Duration::from_millis(10),
        );
        assert_eq!(a.limit(), 8);
        a.set_limit(4);
        let held: Vec<_> = futures_take(&a, 4).await;
        assert_eq!(a.in_service(), 4);
        assert!(
            a.admit(Duration::ZERO, || ()).await.is_err(),
            "limit 4 reached"
        );
        // Shrink to 2 while all 4 are out: two returns are forgotten.
        a.set_limit(2);
        assert_eq!(a.limit(), 2);
        assert_eq!(a.in_service(), 4);
        drop(held);
        assert_eq!(a.in_service(), 0);
        let two = futures_take(&a, 2).await;
        assert!(
            a.admit(Duration::ZERO, || ()).await.is_err(),
            "limit 2 holds"
        );
        drop(two);
        // Slow requests shrink it; the window's mean is what counts.
        let t = a.admit(Duration::ZERO, || ()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(t);
        assert_eq!(a.adjust(), 1);
    }

    async fn futures_take(a: &Admission, n: usize) -> Vec<Ticket> {
        let mut v = vec![];
        for _ in 0..n {
            v.push(a.admit(Duration::ZERO, || ()).await.unwrap());
        }
        v
    }
}
