//! Consistency checking of a store's histories, apart from whatever
//! records them (Jepsen ships knossos and elle apart from its runner): what
//! every operation did, client by client (`history`), a checker that
//! judges a history for lost acknowledged writes, stale reads and
//! impossible reads (`checker`), another that decides whether each shared
//! key is linearizable, with the smallest witness when not (`linear`),
//! histories to and from Porcupine's and Jepsen's formats (`formats`),
//! and counts written for people (`numbers`).
//! The lab's runner records histories against real nodes and the
//! cluster's simulation tests against simulated ones; both judge them
//! here. Owns histories and their judgement; must not do I/O, know HTTP
//! or any Strata crate, or inject faults.

pub mod checker;
pub mod formats;
pub mod history;
pub mod linear;
mod numbers;

pub use checker::{check, Impossible, Lost, Quorum, Report, Stale, Why};
pub use history::{ClientLog, History, KeyRole, Kind, Op, OpQuorum, Outcome, Recorder};
pub use numbers::group;
