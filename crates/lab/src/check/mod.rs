//! Jepsen-style checking of a cluster under faults: a closed-loop client
//! pool records what every operation did (`history`), and the checkers of
//! the `strata-check` crate judge it (`checker`: lost acknowledged writes,
//! stale and impossible reads; `linear`: linearizability per shared key;
//! `formats`: Porcupine's and Jepsen's, all re-exported here). Here:
//! the runner drives the pool against one or more nodes and ends with a
//! full-`ack` read of every key (`run`); a saved history is checked or
//! exported by `strata cluster history` (`saved`)
//! (`strata cluster check`'s arguments are `experiment::check`'s). Tests,
//! campaigns and `strata load --check` call it as a library. Owns the check; must not
//! know the node's internals (HTTP only) nor inject faults itself: the
//! caller does those while a run goes on.

pub use strata_check::{checker, formats, history, linear};
pub mod run;
pub mod saved;

pub use checker::{check, Impossible, Lost, Quorum, Report, Stale, Why};
pub use history::{ClientLog, History, KeyRole, Kind, Op, Outcome, Recorder};
pub use run::{spawn, BetweenPhases, Checked, Config, Mix, Progress, Running, Smart};
