//! One generator thread: a single-threaded runtime with its own
//! connections (or clients), its share of the schedule paced open loop
//! (the connection holding the pacer waits for each send time, late sends
//! counted from it) or its clients closed loop, its requests recorded
//! into per-second intervals handed to the caller's thread, and, at the
//! end, its requests still in flight abandoned past `drop_after` and its
//! totals sent. Owns a thread's life; must not merge threads (that is
//! `run` and `merge`).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::load::schedule::Schedule;
use crate::load::slowest::{SlowHeap, SlowRequest};
use crate::load::workload::KeyCounter;
use strata_client::conn::Conn;
use strata_client::session::Session;

use super::ctx::{wait_until, Clock, Late, ThreadCtx};
use super::pool::{grow, Pacer, Pool};
use super::record::{Interval, Msg, Recorder, ThreadTotals};
use super::worker::{Values, Worker};
use super::{Pace, Plan};

async fn closed_loop(mut w: Worker, think: Duration, ctx: Rc<ThreadCtx>) {
    wait_until(ctx.clock.start).await;
    loop {
        let sent = Instant::now();
        if sent >= ctx.clock.end {
            break;
        }
        let next = w.gen.next(sent - ctx.clock.start);
        ctx.send_and_record(
            &mut w,
            &next,
            sent,
            sent >= ctx.clock.counted_start,
            Late::default(),
        )
        .await;
        if !think.is_zero() {
            tokio::time::sleep(think).await;
        }
    }
}

/// Hand the recorder's interval to the collector at every counted second.
async fn ticker(ctx: Rc<ThreadCtx>, thread: usize, tx: mpsc::Sender<Msg>) {
    let mut k = 1u32;
    loop {
        tokio::time::sleep_until((ctx.clock.counted_start + Duration::from_secs(k as u64)).into())
            .await;
        let (index, data) = ctx.rec.borrow_mut().rotate();
        let index = index.min(ctx.clock.last_index);
        if tx
            .send(Msg::Interval {
                thread,
                index,
                data: Box::new(data),
            })
            .is_err()
        {
            return;
        }
        k += 1;
    }
}

/// One generator thread's life, in steps: its runtime and what its
/// workers share (`ThreadCtx`), then (1) how it makes a worker, (2) its
/// workers started, (3) awaited to the end, (4) the schedule's untaken
/// slots counted as dropped, (5) its totals sent to the collector.
pub(super) fn thread_main(
    thread: usize,
    plan: Plan,
    clock: Arc<Clock>,
    keys: Arc<KeyCounter>,
    sent: Arc<AtomicU64>,
    tx: mpsc::Sender<Msg>,
) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    let sched = thread_schedstat();
    let since = Instant::now();
    // Its share of the slowest 1 % of the requests it expects to count.
    let expected = match plan.pace {
        Pace::Open { rate, .. } => rate * plan.duration.as_secs_f64(),
        Pace::Closed { clients, .. } => 10_000.0 * clients as f64,
    };
    let slow_cap = crate::load::slowest::per_thread(expected, plan.threads);
    local.block_on(&rt, async move {
        let ctx = Rc::new(ThreadCtx {
            clock: clock.clone(),
            rec: Rc::new(RefCell::new(Recorder {
                index: 0,
                interval: Interval::new(),
                totals: ThreadTotals::default(),
                several_nodes: plan.nodes.len() > 1,
            })),
            keys,
            sent,
            drop_after: plan.drop_after,
            tasks: RefCell::new(Vec::new()),
            slow: RefCell::new(SlowHeap::new(slow_cap)),
        });
        let make = worker_factory(&plan);
        let tick = tokio::task::spawn_local(ticker(ctx.clone(), thread, tx.clone()));
        let schedule = start_workers(thread, &plan, &ctx, &make);
        await_workers(&ctx, clock.end + plan.drop_after).await?;
        if let Some(p) = schedule {
            drop_untaken_slots(&p, &ctx);
        }
        tick.abort();
        send_totals(thread, &ctx, sched, since, &tx);
        Ok(())
    })
}

/// Step 1: how this thread makes the worker of connection (or client)
/// `index`: its node, its connection, its share of the workload.
fn worker_factory(plan: &Plan) -> Rc<dyn Fn(usize) -> Worker> {
    let values = Rc::new(Values(RefCell::new(Rc::from(vec![b'v'; 4096]))));
    let query: Rc<str> = Rc::from(plan.query.as_str());
    let plan = plan.clone();
    Rc::new(move |index: usize| {
        let node = plan.nodes.choose(plan.seed, index);
        Worker {
            node,
            served: node,
            before: None,
            nodes: plan.nodes.len(),
            current: Rc::default(),
            conn: Conn::new(plan.nodes.targets[node].clone()),
            session: plan
                .nodes
                .client
                .as_ref()
                .map(|c| Session::new(c.clone(), node, index)),
            gen: plan.workload.generator(index, plan.seed),
            path: String::with_capacity(128),
            query: query.clone(),
            values: values.clone(),
        }
    })
}

/// Step 2: this thread's workers, started. Open loop: its lanes of the
/// schedule and its share of the connections (the pacer they share is
/// returned); closed loop: its share of the clients.
fn start_workers(
    thread: usize,
    plan: &Plan,
    ctx: &Rc<ThreadCtx>,
    make: &Rc<dyn Fn(usize) -> Worker>,
) -> Option<Rc<tokio::sync::Mutex<Pacer>>> {
    let threads = plan.threads;
    match plan.pace {
        Pace::Open {
            rate,
            arrivals,
            connections,
            max_connections,
        } => {
            // Of the run's constant schedule, cut into segments × threads
            // lanes, thread t of segment i takes lane i + segments × t
            // (every lanes-th slot from there), or a Poisson stream at
            // its share of the rate.
            let segment = plan.workload.segment();
            let lanes = segment.count as f64 * threads as f64;
            let share = rate / lanes;
            let first = Duration::from_secs_f64(segment.lane(thread) as f64 / rate);
            let seed = plan.seed ^ (thread as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
            let pacer = Rc::new(tokio::sync::Mutex::new(Pacer {
                schedule: Schedule::starting_at(share, arrivals, seed, first),
                end: ctx.clock.end - ctx.clock.start,
            }));
            let pool = Rc::new(Pool::new(thread, threads, connections, max_connections));
            for _ in (thread..connections).step_by(threads) {
                grow(&pool, &pacer, ctx, make);
            }
            Some(pacer)
        }
        Pace::Closed { clients, think } => {
            for c in (thread..clients).step_by(threads) {
                let w = make(c);
                ctx.rec.borrow_mut().opened(w.node);
                let current = w.current.clone();
                let task = tokio::task::spawn_local(closed_loop(w, think, ctx.clone()));
                ctx.tasks.borrow_mut().push((task, current));
            }
            None
        }
    }
}

/// Step 3: workers open others while they run: await until none is
/// left. Past `deadline` (the end and `drop_after`), what is left is
/// abandoned: its request in flight counts as unfinished, an error with
/// no answer.
async fn await_workers(ctx: &Rc<ThreadCtx>, deadline: Instant) -> Result<(), String> {
    loop {
        let next = ctx.tasks.borrow_mut().pop();
        let Some((mut t, current)) = next else {
            return Ok(());
        };
        match tokio::time::timeout_at(deadline.into(), &mut t).await {
            Ok(r) => r.map_err(|e| e.to_string())?,
            Err(_) => {
                t.abort();
                if let Some((node, op, intended)) = current.take() {
                    let mut r = ctx.rec.borrow_mut();
                    r.totals.unfinished += 1;
                    r.record(node, op, None, intended);
                    ctx.slow.borrow_mut().offer(SlowRequest {
                        before: None,
                        latency: Instant::now().saturating_duration_since(intended),
                        node,
                        conn_wait: Duration::ZERO,
                        timer_late: Duration::ZERO,
                        timing: None,
                        unanswered: true,
                    });
                }
            }
        }
    }
}

/// Step 4: slots no connection was left to take (every one abandoned
/// with its request): dropped, as late slots are.
fn drop_untaken_slots(pacer: &Rc<tokio::sync::Mutex<Pacer>>, ctx: &Rc<ThreadCtx>) {
    let Ok(mut p) = pacer.try_lock() else {
        return;
    };
    let clock = &ctx.clock;
    let mut r = ctx.rec.borrow_mut();
    loop {
        let off = p.schedule.next_offset();
        if off >= p.end {
            break;
        }
        if clock.start + off >= clock.counted_start {
            r.dropped();
        }
    }
}

/// Step 5: the last interval and the thread's totals (its slowest
/// requests, its time on a CPU and waiting for one) to the collector.
fn send_totals(
    thread: usize,
    ctx: &Rc<ThreadCtx>,
    sched: Option<(Duration, Duration, u64)>,
    since: Instant,
    tx: &mpsc::Sender<Msg>,
) {
    let mut rec = ctx.rec.borrow_mut();
    let (index, data) = rec.rotate();
    let index = index.min(ctx.clock.last_index);
    let _ = tx.send(Msg::Interval {
        thread,
        index,
        data: Box::new(data),
    });
    let mut totals = Box::new(std::mem::take(&mut rec.totals));
    totals.slow = ctx.slow.replace(SlowHeap::new(1)).into_vec();
    if let (Some(a), Some(b)) = (sched, thread_schedstat()) {
        totals.on_cpu = b.0.saturating_sub(a.0);
        totals.run_queue = b.1.saturating_sub(a.1);
        let wall = since.elapsed().as_secs_f64().max(1e-3);
        totals.threads = vec![strata_api::threads::ThreadRate {
            name: strata_api::threads::names::numbered(strata_api::threads::names::LOAD, thread),
            // SAFETY: gettid takes no arguments and cannot fail.
            tid: unsafe { libc::gettid() } as u32,
            cpu: totals.on_cpu.as_secs_f64() / wall,
            waiting: totals.run_queue.as_secs_f64() / wall,
            slices: b.2.saturating_sub(a.2) as f64 / wall,
        }];
    }
    let _ = tx.send(Msg::Done { thread, totals });
}

/// This thread's time on a CPU and runnable but waiting for one
/// and the times it was put on one (`/proc/thread-self/schedstat`).
fn thread_schedstat() -> Option<(Duration, Duration, u64)> {
    strata_api::threads::parse_schedstat(
        &std::fs::read_to_string("/proc/thread-self/schedstat").ok()?,
    )
}
