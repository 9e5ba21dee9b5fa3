//! The load driver: generator threads, each a single-threaded runtime with
//! its own connections (as wrk's threads are), sending a workload's
//! operations open loop (every request has an intended send time from a
//! schedule, and its latency runs from that time, so a stalled server
//! cannot hide its stall) or closed loop (clients that send, wait, think).
//! Every second each thread hands its interval histograms to the caller's
//! thread, which merges them into the run's timeline. With several nodes,
//! each connection (or client) talks to the one `nodes` chose for it and
//! its requests are counted per node. Here: the plan and `run`, the
//! caller's side; `thread` one generator thread's life, `ctx` what its tasks share, `worker` builds and sends each
//! operation's requests, `record` counts what came back per thread and
//! merges the threads' seconds, `outcome` is what a run hands back (live
//! figures, each second, the totals), `pool` the open-loop connections
//! (grown for a burst, shrunk after it), `merge` one outcome from several
//! generators' (a run's shares, from workers), `wire` a generator's part as
//! JSON for that merge. Owns pacing, timing and recording; must not format
//! reports or know the node's internals.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;

use crate::load::nodes::Nodes;
use crate::load::schedule::Arrivals;
use crate::load::slowest::SlowRequest;
use crate::load::workload::{KeyCounter, Op, Workload};

mod ctx;
pub mod merge;
mod outcome;
mod pool;
mod record;
mod thread;
pub mod wire;
mod worker;
use ctx::Clock;
pub use outcome::{NodeTotals, OpTotals, Outcome, Second, SecondStats, Snapshot};
pub use record::{failed_status, failure_line};
use record::{Collector, Interval, Msg, NodeInterval, ThreadTotals};
pub use strata_api::query::encode_into;
use thread::thread_main;

/// Operation names, in the order histograms are kept. The last three are
/// not operations but failed answers of any operation, each kind timed on
/// its own line (`record::failure_line`), so each operation's latencies
/// are those of the requests it served: `5xx` (500 and above: the node
/// failed, or refused under overload, which comes back fast), `401/403`
/// (the node refused the run's credentials: nothing was measured but the
/// refusal) and `other 4xx` (any other 4xx but 404, which is an answer:
/// a request the node would not take, such as 400 or 413).
pub const OPS: [&str; N] = [
    "get",
    "put",
    "delete",
    "range",
    "rmw",
    "5xx",
    "401/403",
    "other 4xx",
];
const N: usize = 8;
/// The first of the failed answers' lines (`OPS[FAILED..]`).
const FAILED: usize = 5;
const REFUSED: usize = 6;
const OTHER_4XX: usize = 7;

fn op_index(op: &Op) -> usize {
    match op {
        Op::Get { .. } => 0,
        Op::Put { .. } => 1,
        Op::Delete { .. } => 2,
        Op::Range { .. } => 3,
        Op::ReadModifyWrite { .. } => 4,
    }
}

/// Latencies are recorded in microseconds, from 1 µs to an hour.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("histogram bounds")
}

/// A send more than this late counts as late.
pub const LATE: Duration = Duration::from_millis(1);

/// How requests are paced.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Pace {
    /// Open loop: `rate` requests per second. `connections` are opened at
    /// the start; when a send finds none idle, another is opened, up to
    /// `max_connections` (k6's preAllocatedVUs and maxVUs).
    Open {
        rate: f64,
        arrivals: Arrivals,
        connections: usize,
        max_connections: usize,
    },
    /// Closed loop: `clients`, each sending, waiting, then thinking.
    Closed { clients: usize, think: Duration },
}

/// One run of the driver.
#[derive(Clone)]
pub struct Plan {
    /// The nodes; each connection or client picks one (seeded by `seed`).
    pub nodes: Nodes,
    pub pace: Pace,
    /// Generator threads (each one core at most).
    pub threads: usize,
    pub warmup: Duration,
    pub duration: Duration,
    /// A send that cannot start within this of its intended time is
    /// dropped (and counted as an error); a request still unanswered this
    /// long after the end is abandoned (and counted as an error), so a run
    /// ends at its duration.
    pub drop_after: Duration,
    pub workload: Arc<Workload>,
    pub seed: u64,
    /// Appended to every single-key request's query (`&ack=3&from=3`;
    /// empty: the nodes' defaults).
    pub query: String,
    /// When the run starts (the warm-up's first send), on the wall clock
    /// every generator of a run cut in segments shares; `None`: at once.
    /// The run's share is the workload's (`Workload::segment`): the rate,
    /// the connections and the clients are the whole run's, and this
    /// generator takes its share of each.
    pub start_at: Option<SystemTime>,
}

/// The default of `Plan::drop_after`.
pub const DROP_AFTER: Duration = Duration::from_secs(1);

/// Run the plan. `on_second` sees each counted second (all threads merged),
/// in order; `on_tick` gets live figures about four times a second.
pub fn run(
    plan: &Plan,
    on_second: &mut dyn FnMut(&Second),
    on_tick: &mut dyn FnMut(&Snapshot),
) -> Result<Outcome, String> {
    let threads = plan.threads.max(1);
    let workers = match plan.pace {
        Pace::Open {
            rate, connections, ..
        } => {
            if !crate::units::positive(rate) || connections == 0 {
                return Err("open loop needs a positive rate and at least one connection".into());
            }
            connections
        }
        Pace::Closed { clients, .. } => {
            if clients == 0 {
                return Err("closed loop needs at least one client".into());
            }
            clients
        }
    };
    if plan.duration.is_zero() {
        return Err("the duration must be positive".into());
    }
    if plan.nodes.is_empty() {
        return Err("no node to send to".into());
    }
    // A segment of a run opens its share of the connections (or clients)
    // and draws its own streams.
    let segment = plan.workload.segment();
    let workers = segment.share_of(workers, 1);
    let threads = threads.min(workers);
    let mut plan = Plan {
        threads,
        seed: segment.seed(plan.seed),
        ..plan.clone()
    };
    match &mut plan.pace {
        Pace::Open {
            connections,
            max_connections,
            ..
        } => {
            *connections = segment.share_of(*connections, 1);
            *max_connections = segment.share_of(*max_connections, 1);
        }
        Pace::Closed { clients, .. } => *clients = segment.share_of(*clients, 1),
    }
    if let Pace::Open {
        connections,
        max_connections,
        ..
    } = &mut plan.pace
    {
        // A cluster client's session may hold a connection to every node.
        let per_connection = if plan.nodes.client.is_some() {
            plan.nodes.len()
        } else {
            1
        };
        *max_connections = (*max_connections)
            .max(*connections)
            .min(pool::descriptor_cap(per_connection));
    }
    let (start, started_wall) = start_instant(plan.start_at);
    let counted_start = start + plan.warmup;
    let clock = Arc::new(Clock {
        start,
        counted_start,
        end: counted_start + plan.duration,
        last_index: plan.duration.as_secs_f64().ceil() as u64 - 1,
    });
    let keys = Arc::new(KeyCounter::new(plan.workload.key_space()));
    let sent = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::new();
    for t in 0..threads {
        let (plan, clock, keys, sent, tx) = (
            plan.clone(),
            clock.clone(),
            keys.clone(),
            sent.clone(),
            tx.clone(),
        );
        handles.push(
            std::thread::Builder::new()
                .name(strata_api::threads::names::numbered(
                    strata_api::threads::names::LOAD,
                    t,
                ))
                .spawn(move || thread_main(t, plan, clock, keys, sent, tx))
                .map_err(|e| e.to_string())?,
        );
    }
    drop(tx);
    let mut col = Collector {
        threads,
        reported: vec![None; threads],
        done: vec![false; threads],
        pending: BTreeMap::new(),
        next_final: 0,
        last_index: clock.last_index,
        cumulative: new_histogram(),
        per_op: Default::default(),
        finished: Vec::new(),
        done_requests: 0,
        errors: 0,
    };
    let mut totals = ThreadTotals::default();
    let mut last_tick = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_millis(250)) {
            Ok(Msg::Interval {
                thread,
                index,
                data,
            }) => col.add(thread, index, *data),
            Ok(Msg::Done { thread, totals: t }) => {
                col.done[thread] = true;
                for (k, v) in t.statuses {
                    *totals.statuses.entry(k).or_default() += v;
                }
                totals.conn_errors += t.conn_errors;
                if totals.first_failure.is_none() {
                    totals.first_failure = t.first_failure;
                }
                if totals.first_conn_error.is_none() {
                    totals.first_conn_error = t.first_conn_error;
                }
                for i in 0..OPS.len() {
                    totals.op_requests[i] += t.op_requests[i];
                    totals.op_errors[i] += t.op_errors[i];
                }
                totals.late += t.late;
                totals.dropped += t.dropped;
                totals.unfinished += t.unfinished;
                totals.capped += t.capped;
                totals.retired += t.retired;
                totals.generator_late += t.generator_late;
                totals.on_cpu += t.on_cpu;
                totals.run_queue += t.run_queue;
                totals.threads.extend(t.threads);
                totals.slow.extend(t.slow);
                add_into(&mut totals.node_connections, &t.node_connections);
                totals.max_lag = totals.max_lag.max(t.max_lag);
                totals.last_answer = totals.last_answer.max(t.last_answer);
                add_into(&mut totals.node_requests, &t.node_requests);
                add_into(&mut totals.node_errors, &t.node_errors);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        for s in col.ready() {
            on_second(&s);
        }
        if last_tick.elapsed() >= Duration::from_millis(250) {
            last_tick = Instant::now();
            let now = Instant::now();
            on_tick(&Snapshot {
                elapsed: now.saturating_duration_since(counted_start),
                warming: now < counted_start,
                sent: sent.load(Ordering::Relaxed),
                done: col.done_requests,
                errors: col.errors,
                p50_us: col.cumulative.value_at_quantile(0.5),
                p99_us: col.cumulative.value_at_quantile(0.99),
            });
        }
    }
    for h in handles {
        h.join().map_err(|_| "a generator thread panicked")??;
    }
    for s in col.ready() {
        on_second(&s);
    }
    let mut per_op: Vec<OpTotals> = Vec::new();
    for (i, name) in OPS.iter().enumerate() {
        if i >= FAILED {
            if let Some(h) = col.per_op[i].take() {
                per_op.push(OpTotals {
                    op: name,
                    requests: h.len(),
                    errors: h.len(),
                    hist: h,
                });
            }
        } else if totals.op_requests[i] > 0 {
            per_op.push(OpTotals {
                op: name,
                requests: totals.op_requests[i],
                errors: totals.op_errors[i],
                hist: col.per_op[i].take().unwrap_or_else(new_histogram),
            });
        }
    }
    let counted: u64 = totals.op_requests[..FAILED].iter().sum();
    let elapsed = totals
        .last_answer
        .map(|t| t.saturating_duration_since(counted_start))
        .unwrap_or_default()
        .max(plan.duration);
    let per_node = (0..plan.nodes.len())
        .map(|i| NodeTotals {
            connections: totals.node_connections.get(i).copied().unwrap_or(0),
            requests: totals.node_requests.get(i).copied().unwrap_or(0),
            errors: totals.node_errors.get(i).copied().unwrap_or(0),
        })
        .collect();
    Ok(Outcome {
        counted,
        errors: totals.op_errors[..FAILED].iter().sum(),
        statuses: totals.statuses,
        conn_errors: totals.conn_errors,
        first_conn_error: totals.first_conn_error,
        first_failure: totals.first_failure,
        late: totals.late,
        max_lag: totals.max_lag,
        dropped: totals.dropped,
        unfinished: totals.unfinished,
        connections: totals.node_connections.iter().sum(),
        capped: totals.capped,
        retired: totals.retired,
        elapsed,
        all: col.cumulative,
        per_op,
        timeline: col.finished,
        distinct_keys: keys.count(),
        distinct_exact: keys.exact(),
        per_node,
        slowest: crate::load::slowest::slowest(totals.slow, counted),
        generator_late: totals.generator_late,
        generator_on_cpu: totals.on_cpu,
        generator_run_queue: totals.run_queue,
        generator_threads: totals.threads,
        start,
        started_wall,
    })
}

/// When a run given `at` will start, on the wall clock: at `at` (every
/// share of a run waits for the same instant), or 50 ms from now when none
/// is given or `at` has passed; with how long after `at` that is. A plan
/// whose `start_at` is the instant this returns starts then.
pub fn resolve_start(at: Option<SystemTime>) -> (SystemTime, Option<Duration>) {
    let soon = SystemTime::now() + Duration::from_millis(50);
    match at {
        None => (soon, None),
        Some(at) if at >= soon => (at, Some(Duration::ZERO)),
        Some(at) => (soon, Some(soon.duration_since(at).unwrap_or_default())),
    }
}

/// [`resolve_start`] on the monotonic clock the run is timed by.
fn start_instant(at: Option<SystemTime>) -> (Instant, SystemTime) {
    let (wall, _) = resolve_start(at);
    let now = (Instant::now(), SystemTime::now());
    (now.0 + wall.duration_since(now.1).unwrap_or_default(), wall)
}

/// Add `from` into `into` element by element, growing `into` as needed.
fn add_into(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a += b;
    }
}

#[cfg(test)]
mod tests;
