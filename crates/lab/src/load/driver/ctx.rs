//! What the tasks of one generator thread share: the run's clock, the
//! thread's recorder and key counter, its tasks and their requests in
//! flight, its slowest requests; a request sent and recorded; a send's
//! lateness; the fine wait for a send time. Owns that shared state; must
//! not pace or start tasks (that is `thread` and `pool`).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::load::slowest::{SlowHeap, SlowRequest};
use crate::load::workload::KeyCounter;

use super::record::Recorder;
use super::worker::{Current, Worker};
use super::{op_index, record};

/// Timing shared by every thread of a run.
pub(super) struct Clock {
    pub(super) start: Instant,
    pub(super) counted_start: Instant,
    pub(super) end: Instant,
    /// Index of the last counted second; later answers are folded into it.
    pub(super) last_index: u64,
}

/// Wait for `t` more precisely than tokio's timer (1 ms granularity, which
/// alone would make most sends late): tokio's timer for the bulk of a long
/// wait, then the fine timer thread. Only the connection holding the pacer
/// waits here.
pub(super) async fn wait_until(t: Instant) {
    if let Some(c) = t.checked_sub(Duration::from_millis(2)) {
        if c > Instant::now() {
            tokio::time::sleep_until(c.into()).await;
        }
    }
    crate::load::timer::sleep_until(t).await;
}

pub(super) struct ThreadCtx {
    pub(super) clock: Arc<Clock>,
    pub(super) rec: Rc<RefCell<Recorder>>,
    pub(super) keys: Arc<KeyCounter>,
    pub(super) sent: Arc<AtomicU64>,
    pub(super) drop_after: Duration,
    /// Every worker task of the thread, those opened later too, with
    /// its request in flight.
    pub(super) tasks: RefCell<Vec<(tokio::task::JoinHandle<()>, Current)>>,
    /// The thread's slowest counted requests.
    pub(super) slow: RefCell<SlowHeap>,
}

impl ThreadCtx {
    /// Send `op` on `w` and record it if `counted` (a request still
    /// unanswered `drop_after` past the end is abandoned by the thread,
    /// which aborts its task: no timer per request).
    /// `late`: how late the send started, split into the wait for a free
    /// connection and the timer's own lateness.
    pub(super) async fn send_and_record(
        &self,
        w: &mut Worker,
        next: &crate::load::workload::Next,
        intended: Instant,
        counted: bool,
        late: Late,
    ) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        let op = op_index(&next.op);
        if counted {
            w.current.set(Some((w.node, op, intended)));
        }
        let result = w.send(&next.op).await;
        w.current.set(None);
        if counted {
            let mut r = self.rec.borrow_mut();
            let status = match result {
                Ok(s) => Some(s),
                Err(e) => {
                    // The first, to say why (a refused connection, a
                    // certificate that does not verify, ...).
                    r.totals
                        .first_conn_error
                        .get_or_insert_with(|| e.to_string());
                    if r.totals.first_failure.is_none() {
                        r.totals.first_failure = Some((w.served, format!("no answer: {e}")));
                    }
                    None
                }
            };
            let served = w.served;
            if let Some(code) = status.filter(|c| record::failed_status(*c)) {
                if r.totals.first_failure.is_none() {
                    let body = String::from_utf8_lossy(w.error_body());
                    r.totals.first_failure = Some((served, format!("{code}: {}", body.trim())));
                }
            }
            let latency = r.record(served, op, status, intended);
            if let Some(k) = next.key_index {
                self.keys.touch(k);
            }
            drop(r);
            let mut slow = self.slow.borrow_mut();
            if status.is_some() && slow.wants(latency) {
                let raw = w.server_timing();
                let timing = (!raw.is_empty())
                    .then(|| std::str::from_utf8(raw).ok())
                    .flatten()
                    .map(strata_api::timing::ServerTiming::parse);
                slow.offer(SlowRequest {
                    latency,
                    node: served,
                    before: w.before,
                    conn_wait: late.conn_wait,
                    timer_late: late.timer,
                    timing,
                    unanswered: false,
                });
            }
        }
    }
}

/// How late a send started: waiting for a free connection (the target
/// held every one), then the timer's own lateness.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Late {
    pub(super) conn_wait: Duration,
    pub(super) timer: Duration,
}
