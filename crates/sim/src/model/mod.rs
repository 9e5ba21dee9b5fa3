//! The model in virtual time, in its two configurations (`Config` in
//! `scenario`): one node's pipeline of stages (`node`) and a cluster of
//! nodes that replicate each request (`cluster`). Both run on the event
//! loop in `des` and record a request's lifetime in the same way
//! (`Latency`). Owns the models' behaviour and the raw counts a run
//! produces; must not interpret them (that is `report`) or build a
//! scenario from metrics (that is `calibrate`).
//!
//! Here: what both record; `node` and `cluster` the two models.

use hdrhistogram::Histogram;

pub mod cluster;
pub mod node;

/// The events both models' clients raise: a closed-loop client wakes
/// from its think time; an open loop's next arrival. Each model numbers
/// its own events after these.
pub(crate) const EV_WAKE: u8 = 0;
pub(crate) const EV_ARRIVAL: u8 = 1;

/// A request's flags in both models: it writes; it failed; it waits in a
/// queue. Each model adds its own flags above these bits.
pub(crate) const F_WRITE: u8 = 1;
pub(crate) const F_FAILED: u8 = 2;
pub(crate) const F_WAITING: u8 = 4;

/// Latencies: an HdrHistogram (percentiles) and exact power-of-two counts
/// (the DTrace `quantize` view), in nanoseconds.
#[derive(Clone, Debug)]
pub struct Latency {
    pub hist: Histogram<u64>,
    /// `pow2[0]` counts zeros; `pow2[k]` counts values in [2^(k-1), 2^k).
    pub pow2: [u64; 65],
    pub sum: f64,
}

impl Latency {
    pub(crate) fn new() -> Latency {
        let mut hist = Histogram::new_with_bounds(1, 1 << 44, 3).expect("histogram bounds");
        hist.auto(true);
        Latency {
            hist,
            pow2: [0; 65],
            sum: 0.0,
        }
    }
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.hist.saturating_record(v);
        self.pow2[(64 - v.leading_zeros()) as usize] += 1;
        self.sum += v as f64;
    }
    pub fn count(&self) -> u64 {
        self.hist.len()
    }
    pub fn mean(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum / self.count() as f64
        }
    }
}
