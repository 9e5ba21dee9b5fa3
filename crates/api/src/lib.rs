//! What a Strata node and its clients agree on, written once: the stages
//! an answer's `Server-Timing` header names and how it is written and read
//! (`timing`), and the names of the metrics the lab reads from `/metrics`
//! to judge what saturated (`metrics`). The node writes these, the lab
//! reads them; neither spells a name of its own. Owns names and formats;
//! must not do I/O or depend on another Strata crate.

pub mod metrics;
pub mod timing;
