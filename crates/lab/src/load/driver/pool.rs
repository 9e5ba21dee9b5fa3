//! The open-loop connection pool of one generator thread: its share of
//! the schedule (`Pacer`), its connections (`Pool`), and each connection's
//! loop (take the next slot, send, record). A connection is opened when a
//! slot finds none waiting, up to the cap (the run's `max_connections`,
//! bounded by what the process may open: `descriptor_cap`); once a burst is
//! over the surplus closes again. Owns the pool's size; must not record
//! latencies itself (`ThreadCtx` does) or format anything.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::ctx::{wait_until, Late, ThreadCtx};
use super::worker::Worker;
use super::LATE;
use crate::load::schedule::Schedule;

/// Descriptors the generator leaves for everything else of the process
/// (the checker's clients, scrapes of `/metrics`, files).
const RESERVE_FDS: u64 = 512;

/// The most connections a run may hold: each needs a descriptor per node
/// it may talk to (`per_connection`: all of them with a cluster's client,
/// whose sessions fail over), and the process may hold its descriptor
/// limit, raised to its hard limit first (as Go's runtime does). Past it,
/// every send that had to open a connection failed with "Too many open
/// files", for as long as the pool stayed that large.
pub fn descriptor_cap(per_connection: usize) -> usize {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
            return usize::MAX;
        }
        if l.rlim_cur < l.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: l.rlim_max,
                rlim_max: l.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                l.rlim_cur = l.rlim_max;
            }
        }
    }
    if l.rlim_cur == libc::RLIM_INFINITY {
        return usize::MAX;
    }
    (l.rlim_cur.saturating_sub(RESERVE_FDS) / per_connection.max(1) as u64).max(1) as usize
}

/// A thread's share of the open-loop schedule.
pub(super) struct Pacer {
    pub(super) schedule: Schedule,
    /// Offset of the end of the run.
    pub(super) end: Duration,
}

/// A thread's open-loop connections: how many are open, how many wait
/// for the pacer (idle), how many it may open, and how many it keeps.
pub(super) struct Pool {
    open: Cell<usize>,
    /// Opened since the start (those retired too): the next one's index.
    opened: Cell<usize>,
    idle: Cell<usize>,
    /// Connection indexes of this thread: `thread + k * threads`.
    thread: usize,
    threads: usize,
    /// Most open at once: this thread's share of the run's cap.
    max: usize,
    /// This thread's share of the connections opened at the start: more
    /// than these waiting for the pacer, and the one taking it retires.
    keep: usize,
    /// Connections opened during the run still connecting: at most one
    /// at a time (see `grow`).
    opening: Cell<usize>,
}

impl Pool {
    /// This thread's pool, its share of `connections` opened at the start
    /// and of `max` (the run's cap) at most.
    pub(super) fn new(thread: usize, threads: usize, connections: usize, max: usize) -> Pool {
        let share = |n: usize| (thread..n).step_by(threads).count();
        Pool {
            open: Cell::new(0),
            opened: Cell::new(0),
            idle: Cell::new(0),
            thread,
            threads,
            max: share(max).max(1),
            keep: share(connections.min(max)).max(1),
            opening: Cell::new(0),
        }
    }

    /// A place for one more connection, and its index: any number before
    /// the run `started`, one at a time during it (until `connected`), up
    /// to the cap.
    fn claim(&self, started: bool) -> Result<usize, Grew> {
        if started && self.opening.get() > 0 {
            return Err(Grew::Opening);
        }
        if self.open.get() >= self.max {
            return Err(Grew::Capped);
        }
        let index = self.thread + self.opened.get() * self.threads;
        self.open.set(self.open.get() + 1);
        self.opened.set(self.opened.get() + 1);
        if started {
            self.opening.set(self.opening.get() + 1);
        }
        Ok(index)
    }

    /// A connection claimed during the run has connected (or given up).
    fn connected(&self) {
        self.opening.set(self.opening.get().saturating_sub(1));
    }
}

/// What `grow` did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Grew {
    Opened,
    /// At the cap.
    Capped,
    /// Another connection is still being opened: one at a time.
    Opening,
}

/// Open one more connection of the pool (its worker waits for the pacer
/// like the others), if the cap allows. Those opened before the clock
/// starts connect at once; during the run, one at a time: a connection
/// is opened on the generator's own thread (the handshake with a local
/// target is done inside `connect`), so opening one for every send that
/// found none free, at the send rate, takes the thread from reading the
/// answers that would free the others, and the burst feeds itself: one
/// stall of a few ms at 16,000 req/s grew the pool to its cap of 256
/// in about half the trials, each request then 30-60 ms late (and to
/// 3,000 connections, a second late each, with a cap of 2,000). Sends
/// that find no connection wait for one, their wait counted in their
/// latency from their intended time, as before.
pub(super) fn grow(
    pool: &Rc<Pool>,
    pacer: &Rc<tokio::sync::Mutex<Pacer>>,
    ctx: &Rc<ThreadCtx>,
    make: &Rc<dyn Fn(usize) -> Worker>,
) -> Grew {
    let started = Instant::now() >= ctx.clock.start;
    let index = match pool.claim(started) {
        Ok(i) => i,
        Err(why) => return why,
    };
    let w = make(index);
    ctx.rec.borrow_mut().opened(w.node);
    let current = w.current.clone();
    let task = tokio::task::spawn_local(open_loop(
        w,
        pool.clone(),
        pacer.clone(),
        ctx.clone(),
        make.clone(),
        started,
    ));
    let mut tasks = ctx.tasks.borrow_mut();
    // Connections closed after a burst leave finished tasks behind: drop
    // them now and then, so a long run's bursts do not grow the list.
    if tasks.len() >= 2 * pool.max {
        tasks.retain(|(t, _)| !t.is_finished());
    }
    tasks.push((task, current));
    Grew::Opened
}

async fn open_loop(
    mut w: Worker,
    pool: Rc<Pool>,
    pacer: Rc<tokio::sync::Mutex<Pacer>>,
    ctx: Rc<ThreadCtx>,
    make: Rc<dyn Fn(usize) -> Worker>,
    opening: bool,
) {
    // Each connection connects before it takes a slot: those opened
    // before the clock starts, by the start (then the first sends do not
    // all wait for a handshake at once, each finding no other free);
    // those opened during the run, within the time a send may wait for
    // a connection, and the next may open only then (`grow`). A failure
    // or a handshake still going is left to the first request.
    let by = if opening {
        Instant::now() + ctx.drop_after
    } else {
        ctx.clock.start
    };
    let _ = match w.session.as_mut() {
        Some(s) => tokio::time::timeout_at(by.into(), s.connect_all()).await,
        None => tokio::time::timeout_at(by.into(), w.conn.connect()).await,
    };
    if opening {
        pool.connected();
    }
    loop {
        // The connection holding the pacer waits for the next slot; the
        // other idle ones queue on the lock in order, without spinning.
        // From here this connection is free: it queues for the pacer
        // (first come, first served), then waits for its slot. A slot it
        // takes after its time was late by the wait for a free connection
        // until then (the target held them all), and by the generator's
        // own delay after (the pacer's hand-over, the timer).
        pool.idle.set(pool.idle.get() + 1);
        let free_at = Instant::now();
        let slot = {
            let mut p = pacer.lock().await;
            pool.idle.set(pool.idle.get() - 1);
            // More connections waiting behind this one than the run opened
            // at the start: a burst (the target stalled) opened them and
            // is over. This one closes, so that the pool shrinks back
            // (the others queue in order, so every one would otherwise
            // keep being used: thousands of connections for the rest of
            // the run).
            if pool.idle.get() > pool.keep {
                pool.open.set(pool.open.get() - 1);
                ctx.rec.borrow_mut().totals.retired += 1;
                return;
            }
            loop {
                let off = p.schedule.next_offset();
                if off >= p.end {
                    break None;
                }
                let t = ctx.clock.start + off;
                wait_until(t).await;
                // A slot that found every connection busy for longer than
                // the bound is dropped: sending it now would only measure
                // the generator's backlog, and it still counts against the
                // run as an error.
                if Instant::now().saturating_duration_since(t) > ctx.drop_after {
                    if t >= ctx.clock.counted_start {
                        ctx.rec.borrow_mut().dropped();
                    }
                    continue;
                }
                break Some((t, free_at));
            }
        };
        let Some((intended, free_at)) = slot else {
            break;
        };
        let now = Instant::now();
        let late = Late {
            conn_wait: free_at.saturating_duration_since(intended),
            timer: now.saturating_duration_since(free_at.max(intended)),
        };
        let counted = intended >= ctx.clock.counted_start;
        // No connection left waiting for the next slot: open another.
        if pool.idle.get() == 0 && grow(&pool, &pacer, &ctx, &make) == Grew::Capped && counted {
            ctx.rec.borrow_mut().totals.capped += 1;
        }
        let next = w.gen.next(now - ctx.clock.start);
        if counted {
            let mut r = ctx.rec.borrow_mut();
            r.late(now.saturating_duration_since(intended));
            if late.timer > LATE {
                r.totals.generator_late += 1;
            }
        }
        ctx.send_and_record(&mut w, &next, intended, counted, late)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_the_start_any_number_opens_during_the_run_one_at_a_time() {
        // Thread 1 of 2: its share of 8 at the start and of a cap of 12.
        let p = Pool::new(1, 2, 8, 12);
        assert_eq!((p.keep, p.max), (4, 6));
        let first: Vec<usize> = (0..4).map(|_| p.claim(false).unwrap()).collect();
        assert_eq!(first, [1, 3, 5, 7], "every other index, all at once");
        assert_eq!(p.claim(true), Ok(9));
        assert_eq!(p.claim(true), Err(Grew::Opening), "the next waits");
        p.connected();
        assert_eq!(p.claim(true), Ok(11));
        p.connected();
        assert_eq!(p.claim(true), Err(Grew::Capped), "6 open: the cap");
        p.open.set(p.open.get() - 1);
        assert_eq!(p.claim(true), Ok(13), "a place freed");
    }
}
