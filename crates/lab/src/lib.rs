//! Strata's lab: load generation that measures what a user would see.
//! `load` runs the driver once (open loop at a constant or Poisson rate,
//! latency from each request's intended send time, or closed-loop
//! clients) against one node or several (`nodes`); `sweep` finds the
//! breaking point; `report` writes what they found. Must not know the
//! node's internals: it speaks HTTP and reads `/metrics` only.

pub mod calibrate;
pub mod check;
pub mod client;
pub mod cluster;
pub mod cpu;
pub mod demo;
pub mod driver;
pub mod during;
pub mod load;
pub mod nodes;
pub mod preload;
pub mod report;
pub mod schedule;
pub mod scrape;
pub mod search;
pub mod slo;
pub mod slowest;
pub mod soak;
pub mod stream;
pub mod sweep;
pub mod timer;
pub mod units;
pub mod verdict;
pub mod workload;
