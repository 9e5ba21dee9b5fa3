//! Overload protection at the connection level: the queue that forms when
//! a node is offered more than it can serve is not in admission control's
//! waiting line but before it: connections whose request has arrived,
//! waiting for a runtime worker to read it. This module watches that queue
//! (each request's time from arriving in its socket to being read, from
//! `arrival`) and keeps it short where refusing is nearly free: past its
//! limit of client connections the node parks newly accepted connections
//! unread (the server's accept loop; an accept is all they cost), serves
//! the newest parked one when there is room (its request is the freshest:
//! LIFO under overload, as in Facebook's "Fail at Scale"), and closes
//! connections at their next answer (`Connection: close` on an answer the
//! node gives anyway) until the wait is back under its target.
//!
//! The controller takes the mean wait of each window (not CoDel's least
//! wait: the runtime does not read connections first come, first served,
//! and some requests are read at once in the worst overload). The rule,
//! every `WINDOW`: when the mean wait has exceeded the target for
//! `SUSTAIN` windows in a row (a standing queue, not a burst near
//! capacity) while the node is refusing work (a 503, or a connection
//! parked, within
//! `HOT_FOR`; a closed-loop client's queue, however long, is bounded by its
//! own connections and is left alone), the limit of open client
//! connections falls to those open times target / wait (a cut of 10% to
//! 50%, not below `floor`), and the excess is closed at their next
//! answers; when the wait is under half the target and the connections are
//! nearly all in use, the limit rises by a quarter (at least 16). It
//! starts at `INITIAL_LIMIT`, so a burst of connections is let in as the
//! wait allows. A connection whose request has already waited longer than
//! `stale` (TCP_INFO's last data received) when it is served is answered
//! 503 and closed. The server serves a connection whose first request is a
//! peer's or an operator's (peeked, not read) at once, whatever the limit.
//!
//! Owns the limit, the count of open client connections and the window's
//! wait; must not know about HTTP (the server asks it whether there is
//! room and whether to close a connection after an answer).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How often the connection limit is adjusted.
pub const WINDOW: Duration = Duration::from_millis(50);
/// The limit a node starts with (or `max`, if lower): it grows from there
/// by a quarter a window while requests are read promptly, so that a burst
/// of thousands of connections at once is let in over a few windows, not
/// all before the wait can be measured.
pub const INITIAL_LIMIT: usize = 256;
/// Windows in a row whose mean wait must exceed the target before the
/// limit is cut: a queue that stands for this long is overload, not a burst
/// near capacity.
pub const SUSTAIN: u32 = 3;
/// The limit is cut only while the node is refusing work it has read (an
/// admission refusal, a request that waited past the longest wait) or has
/// done so within this long: a closed-loop client that keeps its own
/// number of requests waiting is not overload, however long its queue.
pub const HOT_FOR: Duration = Duration::from_secs(10);
/// The longest wait is cut to the target while the node has refused work
/// within this long: under a standing overload it refuses every window; once
/// the overload ends, the long bound is back within a few windows.
pub const SHORT_WAIT_FOR: Duration = Duration::from_millis(200);
/// How often the server looks for room for a parked connection when no
/// connection has closed.
pub const RECHECK: Duration = Duration::from_millis(2);

/// The connection limit's rule, as a function: the next limit from the
/// current one, the window's mean wait and the connections open.
pub fn next_limit(
    limit: usize,
    lag: Duration,
    open: usize,
    target: Duration,
    floor: usize,
    max: usize,
) -> usize {
    if lag > target {
        // Cut in proportion to the excess wait (a queue twice the target
        // needs about half the connections), by 10% to 50% at a time.
        let share = (target.as_secs_f64() / lag.as_secs_f64()).clamp(0.5, 0.9);
        ((open.min(limit) as f64 * share).floor() as usize).max(floor)
    } else if lag * 2 <= target && open * 10 >= limit * 9 {
        (limit + (limit / 4).max(16)).min(max)
    } else {
        limit
    }
}

pub struct Guard {
    /// `None`: no limit below `max` (the guard only counts).
    target: Option<Duration>,
    floor: usize,
    max: usize,
    /// A connection whose first request waited longer than this before
    /// it was served is answered 503 and closed.
    stale: Duration,
    limit: AtomicUsize,
    open: AtomicUsize,
    /// Connections to close at their next answer.
    to_shed: AtomicUsize,
    /// Total wait (arrival to read) of the current window's requests, ns,
    /// and their number.
    window_wait: AtomicU64,
    window_count: AtomicU64,
    /// Mean wait of the last window that had requests, ns.
    last_wait: AtomicU64,
    /// Windows in a row whose wait exceeded the target.
    over: AtomicU64,
    /// Requests refused since the last window, and until when the node
    /// counts as refusing (ns since `born`).
    refusals: AtomicU64,
    hot_until: AtomicU64,
    /// When the node last refused work (ns since `born`; 0: never).
    last_refusal: AtomicU64,
    born: Instant,
    room: Notify,
    pub shed: AtomicU64,
    pub stale_closed: AtomicU64,
    pub accepted: AtomicU64,
    /// Connections accepted past the limit and parked unread.
    pub parked: AtomicU64,
    /// Parked connections closed unread to make room for a new one.
    pub evicted: AtomicU64,
}

/// An open client connection's place; dropping it frees the place. A
/// connection idle before its first whole request head gives the place up
/// (`release`) and takes it back when the head arrives (`retake`): it
/// puts nothing in the runtime's queue meanwhile (`heads`).
pub struct Open {
    guard: Arc<Guard>,
    held: std::sync::atomic::AtomicBool,
}

impl Open {
    /// Stop counting this connection (once, until `retake`).
    pub fn release(&self) {
        if self.held.swap(false, Ordering::AcqRel) {
            self.guard.open.fetch_sub(1, Ordering::AcqRel);
            self.guard.room.notify_one();
        }
    }

    /// Count it again (with no regard to the limit: its request is
    /// served, and an answer over the limit sheds the connection).
    pub fn retake(&self) {
        if !self.held.swap(true, Ordering::AcqRel) {
            self.guard.open.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.release();
    }
}

impl Guard {
    /// `target` `None` turns the limit off: connections are limited by
    /// `max` only.
    pub fn new(target: Option<Duration>, floor: usize, max: usize, stale: Duration) -> Guard {
        Guard {
            target,
            floor: floor.clamp(1, max.max(1)),
            max,
            stale,
            limit: AtomicUsize::new(if target.is_some() {
                INITIAL_LIMIT.min(max)
            } else {
                max
            }),
            open: AtomicUsize::new(0),
            to_shed: AtomicUsize::new(0),
            window_wait: AtomicU64::new(0),
            window_count: AtomicU64::new(0),
            last_wait: AtomicU64::new(0),
            over: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
            hot_until: AtomicU64::new(0),
            last_refusal: AtomicU64::new(0),
            born: Instant::now(),
            room: Notify::new(),
            shed: AtomicU64::new(0),
            stale_closed: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            parked: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Acquire)
    }

    /// The wait target, if the limit is on.
    pub fn target(&self) -> Option<Duration> {
        self.target
    }

    pub fn open_now(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// The mean wait from arrival to read of the last window with requests.
    pub fn wait(&self) -> Duration {
        Duration::from_nanos(self.last_wait.load(Ordering::Relaxed))
    }

    /// A connection whose first request has waited longer than this when
    /// it is served is answered 503 and closed: `--max-wait-ms`, or the
    /// wait target while the node is refusing work (see `max_wait`).
    pub fn stale_after(&self) -> Duration {
        self.max_wait(self.stale)
    }

    /// The longest a request may wait before it is served: `normal`, cut
    /// to the wait target while the node has refused work within
    /// `SHORT_WAIT_FOR`. This is the controlled delay of Facebook's "Fail at
    /// Scale": a queue that stands is drained by failing fast what waited
    /// past a short bound, so that what is served is served in time; a
    /// node that turns nothing away absorbs a burst or a stall with the
    /// long bound.
    pub fn max_wait(&self, normal: Duration) -> Duration {
        match self.target {
            Some(t) if self.refused_lately() => normal.min(t),
            _ => normal,
        }
    }

    pub fn has_room(&self) -> bool {
        self.open_now() < self.limit()
    }

    /// Wait until a connection may be served, or `RECHECK` passes.
    /// Returns true if there is room.
    pub async fn wait_room(&self) -> bool {
        let deadline = tokio::time::Instant::now() + RECHECK;
        loop {
            let notified = self.room.notified();
            if self.has_room() {
                return true;
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep_until(deadline) => return self.has_room(),
            }
        }
    }

    /// Count a new client connection.
    pub fn opened(self: &Arc<Self>) -> Open {
        self.open.fetch_add(1, Ordering::AcqRel);
        self.accepted.fetch_add(1, Ordering::Relaxed);
        Open {
            guard: self.clone(),
            held: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// Whether the connection that just answered should close: true for
    /// as many answers as there are connections over the limit.
    pub fn take_shed(&self) -> bool {
        if self.to_shed.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let took = self
            .to_shed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if took {
            self.shed.fetch_add(1, Ordering::Relaxed);
        }
        took
    }

    /// A request read and then refused (503), or a connection parked.
    pub fn note_refusal(&self) {
        self.refusals.fetch_add(1, Ordering::Relaxed);
        let now = self.born.elapsed().as_nanos() as u64;
        self.last_refusal.store(now.max(1), Ordering::Relaxed);
    }

    /// Whether the node has refused work within `SHORT_WAIT_FOR`.
    fn refused_lately(&self) -> bool {
        let at = self.last_refusal.load(Ordering::Relaxed);
        at != 0 && self.born.elapsed().as_nanos() as u64 <= at + SHORT_WAIT_FOR.as_nanos() as u64
    }

    /// Whether the node has refused work within `HOT_FOR`.
    pub fn refusing(&self) -> bool {
        self.born.elapsed().as_nanos() as u64 <= self.hot_until.load(Ordering::Relaxed)
    }

    /// One request's wait from arrival to being read.
    pub fn observe_wait(&self, lag: Duration) {
        self.window_wait
            .fetch_add(lag.as_nanos() as u64, Ordering::Relaxed);
        self.window_count.fetch_add(1, Ordering::Relaxed);
    }

    /// One step of the rule; returns the new limit.
    pub fn adjust(&self) -> usize {
        let n = self.window_count.swap(0, Ordering::AcqRel);
        let total = self.window_wait.swap(0, Ordering::AcqRel);
        if n == 0 {
            return self.limit();
        }
        let lag = total / n;
        self.last_wait.store(lag, Ordering::Relaxed);
        let Some(target) = self.target else {
            return self.limit();
        };
        let open = self.open_now();
        let limit = self.limit();
        if self.refusals.swap(0, Ordering::AcqRel) > 0 {
            let until = (self.born.elapsed() + HOT_FOR).as_nanos() as u64;
            self.hot_until.store(until, Ordering::Relaxed);
        }
        if Duration::from_nanos(lag) > target {
            // Cut only a standing queue, and only while refusing.
            let windows = if self.refusing() {
                self.over.fetch_add(1, Ordering::AcqRel) + 1
            } else {
                self.over.store(0, Ordering::Release);
                0
            };
            if windows < u64::from(SUSTAIN) {
                return limit;
            }
        } else {
            self.over.store(0, Ordering::Release);
        }
        let next = next_limit(
            limit,
            Duration::from_nanos(lag),
            open,
            target,
            self.floor,
            self.max,
        );
        self.limit.store(next, Ordering::Release);
        // Close what is over the limit (counting what is already due).
        self.to_shed
            .store(open.saturating_sub(next), Ordering::Release);
        if next > limit {
            self.room.notify_waiters();
        }
        next
    }

    /// Adjust the limit every `WINDOW` until the runtime ends.
    pub async fn run(self: Arc<Self>) {
        let mut tick = tokio::time::interval(WINDOW);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.adjust();
        }
    }
}

/// How long the oldest unread data of `socket` has waited in the kernel
/// (TCP_INFO's time since the last data was received; ms resolution).
/// `None` when the socket has received nothing yet or the call fails.
pub fn unread_age(socket: &impl std::os::fd::AsRawFd) -> Option<Duration> {
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: info is a valid, writable tcp_info and len its size.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return None;
    }
    if unread(socket.as_raw_fd()).unwrap_or(0) == 0 {
        return None;
    }
    Some(Duration::from_millis(info.tcpi_last_data_recv as u64))
}

/// Bytes received on `fd` and not yet read (`FIONREAD`); `None` if the
/// call fails.
pub fn unread(fd: std::os::fd::RawFd) -> Option<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int; on a closed or reused descriptor it
    // fails or answers for another socket, which only misjudges idleness
    // (nothing is done to the descriptor).
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    (r == 0).then_some(n.max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_millis(3);

    #[test]
    fn the_limit_follows_the_lag() {
        let ms = Duration::from_millis;
        // A standing queue: in proportion, by at most half at a time.
        assert_eq!(next_limit(10_000, ms(40), 2_000, T, 16, 10_000), 1_000);
        assert_eq!(next_limit(10_000, ms(4), 2_000, T, 16, 10_000), 1_500);
        assert_eq!(
            next_limit(10_000, ms(3) + ms(1) / 10, 2_000, T, 16, 10_000),
            1_800
        );
        // Never below the floor.
        assert_eq!(next_limit(20, ms(40), 10, T, 16, 10_000), 16);
        // Short lag, connections nearly all used: grow by a quarter (at
        // least 16).
        assert_eq!(next_limit(100, ms(1), 95, T, 16, 10_000), 125);
        assert_eq!(next_limit(20, ms(1), 20, T, 16, 10_000), 36);
        assert_eq!(next_limit(9_990, ms(1), 9_990, T, 16, 10_000), 10_000);
        // Short lag with room to spare, or lag between half and the
        // target: hold.
        assert_eq!(next_limit(100, ms(1), 50, T, 16, 10_000), 100);
        assert_eq!(next_limit(100, ms(2), 100, T, 16, 10_000), 100);
    }

    #[test]
    fn connections_over_the_limit_are_shed_once_each() {
        let g = Arc::new(Guard::new(Some(T), 2, 100, Duration::from_secs(1)));
        assert_eq!(g.limit(), 100, "starts at INITIAL_LIMIT or max, the lower");
        let conns: Vec<_> = (0..10).map(|_| g.opened()).collect();
        assert!(g.has_room());
        // A long wait without refusals: a closed loop, left alone.
        for _ in 0..2 * SUSTAIN {
            g.observe_wait(Duration::from_millis(50));
            assert_eq!(g.adjust(), 100);
        }
        g.note_refusal();
        g.observe_wait(Duration::from_millis(1));
        g.observe_wait(Duration::from_millis(3));
        // The window's mean wait is 2 ms: no cut.
        assert_eq!(g.adjust(), 100);
        // A standing queue: cut on its SUSTAIN-th window in a row.
        for _ in 1..SUSTAIN {
            g.observe_wait(Duration::from_millis(6));
            assert_eq!(g.adjust(), 100, "one window over the target is a burst");
        }
        g.observe_wait(Duration::from_millis(2));
        g.observe_wait(Duration::from_millis(6));
        assert_eq!(g.adjust(), 7, "a mean of 4 ms against 3: 75% of 10");
        assert_eq!(g.wait(), Duration::from_millis(4));
        assert!(!g.has_room());
        assert!(g.take_shed() && g.take_shed() && g.take_shed());
        assert!(
            !g.take_shed(),
            "three connections over the limit, three shed"
        );
        assert_eq!(g.shed.load(Ordering::Relaxed), 3);
        drop(conns);
        assert_eq!(g.open_now(), 0);
        assert!(g.has_room());
    }

    #[test]
    fn a_released_place_is_room_until_it_is_taken_back() {
        let g = Arc::new(Guard::new(Some(T), 1, 2, Duration::from_secs(1)));
        let (a, b) = (g.opened(), g.opened());
        assert!(!g.has_room());
        a.release();
        a.release();
        assert_eq!(g.open_now(), 1);
        assert!(g.has_room());
        a.retake();
        a.retake();
        assert_eq!(g.open_now(), 2);
        b.release();
        drop(b);
        drop(a);
        assert_eq!(g.open_now(), 0, "a released place is not freed twice");
    }

    #[test]
    fn without_a_target_the_guard_only_counts() {
        let g = Arc::new(Guard::new(None, 16, 50, Duration::from_secs(1)));
        let _c: Vec<_> = (0..50).map(|_| g.opened()).collect();
        g.observe_wait(Duration::from_secs(1));
        assert_eq!(g.adjust(), 50);
        assert!(!g.take_shed());
        assert!(!g.has_room());
    }
}
