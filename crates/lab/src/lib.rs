//! Strata's lab: load generation that measures what a user would see.
//! Today: `load`, the open-loop constant-rate (or Poisson) driver with
//! latency measured from each request's intended send time (coordinated
//! omission corrected, as wrk2 does). Workloads, closed-loop clients,
//! sweeps and reports arrive with issue 4. Must not know the node's
//! internals: it speaks HTTP only.

pub mod load;
pub mod report;
pub mod schedule;
