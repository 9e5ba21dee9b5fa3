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

use super::worker::Worker;
use super::{wait_until, Late, ThreadCtx, LATE};
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
        }
    }

    /// The index of the next connection to open, if the cap allows one.
    fn next_index(&self) -> Option<usize> {
        (self.open.get() < self.max).then(|| self.thread + self.opened.get() * self.threads)
    }
}

/// Open one more connection of the pool (its worker waits for the pacer
/// like the others), if the cap allows.
pub(super) fn grow(
    pool: &Rc<Pool>,
    pacer: &Rc<tokio::sync::Mutex<Pacer>>,
    ctx: &Rc<ThreadCtx>,
    make: &Rc<dyn Fn(usize) -> Worker>,
) -> bool {
    let Some(index) = pool.next_index() else {
        return false;
    };
    pool.open.set(pool.open.get() + 1);
    pool.opened.set(pool.opened.get() + 1);
    let w = make(index);
    ctx.rec.borrow_mut().opened(w.node);
    let current = w.current.clone();
    let task = tokio::task::spawn_local(open_loop(
        w,
        pool.clone(),
        pacer.clone(),
        ctx.clone(),
        make.clone(),
    ));
    let mut tasks = ctx.tasks.borrow_mut();
    // Connections closed after a burst leave finished tasks behind: drop
    // them now and then, so a long run's bursts do not grow the list.
    if tasks.len() >= 2 * pool.max {
        tasks.retain(|(t, _)| !t.is_finished());
    }
    tasks.push((task, current));
    true
}

async fn open_loop(
    mut w: Worker,
    pool: Rc<Pool>,
    pacer: Rc<tokio::sync::Mutex<Pacer>>,
    ctx: Rc<ThreadCtx>,
    make: Rc<dyn Fn(usize) -> Worker>,
) {
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
        if pool.idle.get() == 0 && !grow(&pool, &pacer, &ctx, &make) && counted {
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
