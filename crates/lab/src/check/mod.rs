//! Jepsen-style checking of a cluster under faults: a closed-loop client
//! pool records what every operation did (`history`), a pure checker judges
//! that history for lost acknowledged writes, stale reads and impossible
//! reads (`checker`), another decides whether each shared key is
//! linearizable, with the smallest witness when not (`linear`), histories
//! go to and come from Porcupine's and Jepsen's formats (`formats`), and
//! the runner drives the pool against one or more nodes and ends with a
//! full-`ack` read of every key (`run`); a saved history is checked or
//! exported by `strata cluster history` (`saved`)
//! (`strata cluster check`'s arguments are `experiment::check`'s). Tests,
//! campaigns and `strata load --check` call it as a library. Owns the check; must not
//! know the node's internals (HTTP only) nor inject faults itself: the
//! caller does those while a run goes on.

pub mod checker;
pub mod formats;
pub mod history;
pub mod linear;
pub mod run;
pub mod saved;

pub use checker::{check, Impossible, Lost, Quorum, Report, Stale, Why};
pub use history::{ClientLog, History, KeyRole, Kind, Op, Outcome, Recorder};
pub use run::{spawn, BetweenPhases, Checked, Config, Mix, Progress, Running, Smart};
