//! Consistency checking of a store's histories, apart from whatever
//! records them (Jepsen ships knossos and elle apart from its runner): what
//! every operation did, client by client (`history`), a checker that
//! judges a history for lost acknowledged writes, stale reads and
//! impossible reads (`checker`), another that decides whether each shared
//! key is linearizable, with the smallest witness when not (`linear`), and
//! histories to and from Porcupine's and Jepsen's formats (`formats`).
//! The lab's runner records histories against real nodes and the
//! cluster's simulation tests against simulated ones; both judge them
//! here. Owns histories and their judgement; must not do I/O, know HTTP
//! or any Strata crate, or inject faults.

pub mod checker;
pub mod formats;
pub mod history;
pub mod linear;

pub use checker::{check, Impossible, Lost, Quorum, Report, Stale, Why};
pub use history::{ClientLog, History, KeyRole, Kind, Op, OpQuorum, Outcome, Recorder};

/// `n` with its thousands grouped by commas (12,345), as the checker's
/// reports and the lab's tables write counts.
pub fn group(n: u64) -> String {
    let digits = n.to_string().into_bytes();
    let groups: Vec<&str> = digits
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).expect("ASCII digits"))
        .collect();
    groups.join(",")
}
