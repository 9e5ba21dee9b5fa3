//! A timer finer than tokio's: tokio's wheel has 1 ms granularity, so a
//! request due in 400 µs would leave late. Waiting for it by spinning on
//! the runtime would burn a core even at a few thousand requests per
//! second, which on a machine the generator shares with the server is a
//! lie about the server. Instead one thread, with its timer slack set to
//! 1 µs, sleeps until the earliest deadline and wakes that task. Owns
//! sub-millisecond waits; must not know what the tasks send.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// A deadline closer than this is not worth a trip through the timer
/// thread: the caller yields until it passes.
pub const SPIN: Duration = Duration::from_micros(20);

struct Entry {
    at: Instant,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed: the heap's top is the earliest deadline.
    fn cmp(&self, o: &Self) -> CmpOrdering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

struct Timer {
    heap: Mutex<(BinaryHeap<Entry>, u64)>,
    cv: Condvar,
}

fn timer() -> &'static Timer {
    static T: OnceLock<&'static Timer> = OnceLock::new();
    T.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            heap: Mutex::new((BinaryHeap::new(), 0)),
            cv: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name(strata_api::threads::names::TIMER.into())
            .spawn(move || run(t))
            .expect("timer thread");
        t
    })
}

fn run(t: &'static Timer) {
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
    let mut g = t.heap.lock().unwrap();
    loop {
        let now = Instant::now();
        match g.0.peek() {
            None => g = t.cv.wait(g).unwrap(),
            Some(e) if e.at <= now + SPIN => {
                let e = g.0.pop().expect("peeked");
                e.waker.wake();
            }
            Some(e) => {
                let d = e.at - now - SPIN / 2;
                g = t.cv.wait_timeout(g, d).unwrap().0;
            }
        }
    }
}

/// Sleep until `at` to within tens of microseconds, without spinning
/// through most of the wait.
pub fn sleep_until(at: Instant) -> Sleep {
    Sleep {
        at,
        registered: false,
    }
}

pub struct Sleep {
    at: Instant,
    registered: bool,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = Instant::now();
        if now >= self.at {
            return Poll::Ready(());
        }
        if self.at - now <= SPIN {
            // Too close to hand off: come back on the next turn.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if !self.registered {
            self.registered = true;
            let t = timer();
            let mut g = t.heap.lock().unwrap();
            g.1 += 1;
            let seq = g.1;
            let earliest = g.0.peek().is_none_or(|e| self.at < e.at);
            g.0.push(Entry {
                at: self.at,
                seq,
                waker: cx.waker().clone(),
            });
            drop(g);
            if earliest {
                t.cv.notify_one();
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn wakes_on_time_and_in_order() {
        let t0 = Instant::now();
        let mut handles = Vec::new();
        for ms in [5u64, 1, 3] {
            handles.push(tokio::spawn(async move {
                let at = t0 + Duration::from_millis(ms);
                sleep_until(at).await;
                (ms, Instant::now().duration_since(at))
            }));
        }
        for h in handles {
            let (ms, late) = h.await.unwrap();
            // Never early; "on time" is not asserted (a busy machine may be
            // slow), only that it did not sleep on a millisecond wheel far
            // past the deadline.
            assert!(Instant::now() >= t0 + Duration::from_millis(ms));
            assert!(late < Duration::from_millis(500), "{late:?}");
        }
    }
}
