//! A generator's part of a run as JSON, for a worker to hand back to the
//! controller that merges it (`merge`): its totals, its slowest requests
//! (their `Server-Timing` as the header said it) and each counted second
//! with its histograms (HdrHistogram's V2 encoding, base64), so that
//! nothing is summarised before the merge. Owns that format, defined once
//! for both sides; must not send it (`experiment::worker` does).

use std::time::{Instant, SystemTime};

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2Serializer};
use serde::{Deserialize, Serialize};

use super::*;

/// What one generator measured: its outcome and its counted seconds
/// (histograms and all, encoded), as `run`'s `on_second` saw them.
pub struct Part {
    pub outcome: Outcome,
    pub seconds: Vec<SecondWire>,
}

/// A histogram, V2-encoded, in base64.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HistWire(String);

impl HistWire {
    pub fn of(h: &Histogram<u64>) -> HistWire {
        let mut buf = Vec::new();
        V2Serializer::new()
            .serialize(h, &mut buf)
            .expect("a histogram serializes into memory");
        HistWire(base64::engine::general_purpose::STANDARD.encode(buf))
    }

    pub fn decode(&self) -> Result<Histogram<u64>, String> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&self.0)
            .map_err(|e| format!("a histogram's base64: {e}"))?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &raw[..])
            .map_err(|e| format!("a histogram: {e:?}"))?;
        // Into the driver's bounds, so that it adds to the others.
        let mut out = new_histogram();
        out.add(&h)
            .map_err(|e| format!("a histogram out of bounds: {e:?}"))?;
        Ok(out)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SecondWire {
    pub index: u64,
    pub requests: u64,
    pub errors: u64,
    pub per_op: Vec<(String, HistWire)>,
    /// Per node: requests, errors, the answered latencies.
    pub per_node: Vec<(u64, u64, Option<HistWire>)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpWire {
    pub op: String,
    pub requests: u64,
    pub errors: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SlowWire {
    pub latency_us: u64,
    pub node: usize,
    pub before: Option<(usize, u64)>,
    pub conn_wait_us: u64,
    pub timer_late_us: u64,
    /// The answer's `Server-Timing` header.
    pub timing: Option<String>,
    pub unanswered: bool,
}

/// One generator's part of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartWire {
    /// When its first send was due, milliseconds since the epoch.
    pub started_ms: u64,
    pub counted: u64,
    pub errors: u64,
    pub statuses: BTreeMap<u16, u64>,
    pub conn_errors: u64,
    pub first_conn_error: Option<String>,
    pub first_failure: Option<(usize, String)>,
    pub late: u64,
    pub max_lag_us: u64,
    pub dropped: u64,
    pub unfinished: u64,
    pub connections: u64,
    pub capped: u64,
    pub retired: u64,
    pub elapsed_us: u64,
    pub per_op: Vec<OpWire>,
    pub distinct_keys: u64,
    pub distinct_exact: bool,
    pub per_node: Vec<NodeTotals>,
    pub slowest: Vec<SlowWire>,
    pub generator_late: u64,
    pub on_cpu_us: u64,
    pub run_queue_us: u64,
    pub threads: Vec<strata_api::threads::ThreadRate>,
    pub seconds: Vec<SecondWire>,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

impl SecondWire {
    pub fn of(s: &Second) -> SecondWire {
        SecondWire {
            index: s.index,
            requests: s.requests,
            errors: s.errors,
            per_op: s
                .per_op
                .iter()
                .map(|(n, h)| (n.to_string(), HistWire::of(h)))
                .collect(),
            per_node: s
                .per_node
                .iter()
                .map(|n| (n.requests, n.errors, n.hist.as_ref().map(HistWire::of)))
                .collect(),
        }
    }

    /// The second, histograms decoded (a second's worth at a time: an
    /// hour's histograms decoded at once would not fit).
    pub fn decode(&self) -> Result<Second, String> {
        let mut per_op = Vec::with_capacity(self.per_op.len());
        for (name, h) in &self.per_op {
            per_op.push((op_name(name)?, h.decode()?));
        }
        let mut per_node = Vec::with_capacity(self.per_node.len());
        for (requests, errors, h) in &self.per_node {
            per_node.push(NodeInterval {
                requests: *requests,
                errors: *errors,
                hist: h.as_ref().map(|h| h.decode()).transpose()?,
            });
        }
        Ok(Second {
            index: self.index,
            per_op,
            requests: self.requests,
            errors: self.errors,
            per_node,
        })
    }
}

fn op_name(name: &str) -> Result<&'static str, String> {
    OPS.iter()
        .copied()
        .find(|n| *n == name)
        .ok_or_else(|| format!("unknown operation {name:?}"))
}

impl PartWire {
    /// A run's outcome and its counted seconds, as `SecondWire::of` made
    /// them while it ran.
    pub fn of(o: &Outcome, seconds: Vec<SecondWire>) -> PartWire {
        PartWire {
            started_ms: o
                .started_wall
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            counted: o.counted,
            errors: o.errors,
            statuses: o.statuses.clone(),
            conn_errors: o.conn_errors,
            first_conn_error: o.first_conn_error.clone(),
            first_failure: o.first_failure.clone(),
            late: o.late,
            max_lag_us: us(o.max_lag),
            dropped: o.dropped,
            unfinished: o.unfinished,
            connections: o.connections,
            capped: o.capped,
            retired: o.retired,
            elapsed_us: us(o.elapsed),
            per_op: o
                .per_op
                .iter()
                .map(|p| OpWire {
                    op: p.op.to_string(),
                    requests: p.requests,
                    errors: p.errors,
                })
                .collect(),
            distinct_keys: o.distinct_keys,
            distinct_exact: o.distinct_exact,
            per_node: o.per_node.clone(),
            slowest: o
                .slowest
                .iter()
                .map(|s| SlowWire {
                    latency_us: us(s.latency),
                    node: s.node,
                    before: s.before.map(|(n, d)| (n, us(d))),
                    conn_wait_us: us(s.conn_wait),
                    timer_late_us: us(s.timer_late),
                    timing: s.timing.as_ref().map(|t| t.encode()),
                    unanswered: s.unanswered,
                })
                .collect(),
            generator_late: o.generator_late,
            on_cpu_us: us(o.generator_on_cpu),
            run_queue_us: us(o.generator_run_queue),
            threads: o.generator_threads.clone(),
            seconds,
        }
    }

    /// The part, its times on this process's clocks (`start`: when the
    /// run's first send was due here); its seconds still encoded (`merge`
    /// decodes one second at a time), its histograms empty until then.
    pub fn into_part(self, start: Instant) -> Result<Part, String> {
        let d = Duration::from_micros;
        let mut per_op = Vec::with_capacity(self.per_op.len());
        for p in self.per_op {
            per_op.push(OpTotals {
                op: op_name(&p.op)?,
                requests: p.requests,
                errors: p.errors,
                hist: new_histogram(),
            });
        }
        let outcome = Outcome {
            start,
            started_wall: SystemTime::UNIX_EPOCH + Duration::from_millis(self.started_ms),
            counted: self.counted,
            errors: self.errors,
            statuses: self.statuses,
            conn_errors: self.conn_errors,
            first_conn_error: self.first_conn_error,
            first_failure: self.first_failure,
            late: self.late,
            max_lag: d(self.max_lag_us),
            dropped: self.dropped,
            unfinished: self.unfinished,
            connections: self.connections,
            capped: self.capped,
            retired: self.retired,
            elapsed: d(self.elapsed_us),
            all: new_histogram(),
            per_op,
            timeline: Vec::new(),
            distinct_keys: self.distinct_keys,
            distinct_exact: self.distinct_exact,
            per_node: self.per_node,
            slowest: self
                .slowest
                .into_iter()
                .map(|s| SlowRequest {
                    latency: d(s.latency_us),
                    node: s.node,
                    before: s.before.map(|(n, u)| (n, d(u))),
                    conn_wait: d(s.conn_wait_us),
                    timer_late: d(s.timer_late_us),
                    timing: s
                        .timing
                        .as_deref()
                        .map(strata_api::timing::ServerTiming::parse),
                    unanswered: s.unanswered,
                })
                .collect(),
            generator_late: self.generator_late,
            generator_on_cpu: d(self.on_cpu_us),
            generator_run_queue: d(self.run_queue_us),
            generator_threads: self.threads,
        };
        Ok(Part {
            outcome,
            seconds: self.seconds,
        })
    }
}
