//! The consistency checker: pure, deterministic functions from a history
//! (and the run's `ack`/`from`) to a report of lost acknowledged writes,
//! stale reads and impossible reads, with examples and a text summary.
//! Owns what counts as an anomaly; must not send requests, read the clock
//! or know how the history was made. The rules by key live in `rules`,
//! the text summary in `display`.
//!
//! The rules, by key (see `history::KeyRole`):
//!
//! - A read (answered 200) is *impossible* if no write that was not
//!   `Failed` wrote its value to that key before the read completed.
//! - `set/…` keys are written once each. A write acknowledged `Ok` is *lost*
//!   if the last answered final read of its key found it absent or another
//!   value (and no other write or delete of the key explains that). A key
//!   whose final read got no answer is *not verified*. `Unknown` writes are
//!   counted as present or absent, never as lost.
//! - `reg/…` keys are overwritten by one client, sequentially. A read is
//!   *stale* if a write acknowledged before the read was invoked, say W,
//!   makes what it returned out of date: every write that could have
//!   produced the value read (or, for a 404, the key's initial absence)
//!   was acknowledged before W was invoked. A write with an `Unknown`
//!   outcome may take effect at any time after its invocation, so reading
//!   it is never stale (such reads are counted apart). Reads during the
//!   run are checked only when every read quorum meets every write quorum
//!   (`ack_read + ack_write > from`). A final read (after the faults, at
//!   `ack=from`) that is stale has lost an acknowledged write: it counts
//!   as lost.
//! - `lin/…` keys are written by every client. Their operations are judged
//!   by the linearizability check (`linear`), unless they carry their own
//!   quorums (`Op::quorum`: a run whose operations pick `ack`/`from` one by
//!   one, as the cluster's simulation does). Then a read is *stale* if a
//!   write W acknowledged before it was invoked, with a quorum that meets
//!   the read's, makes what it returned out of date: every write of that
//!   value was acknowledged before W was invoked with a quorum that meets
//!   W's (or the read found the key's initial absence). A final read that
//!   is stale counts as lost.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::history::{History, KeyRole, Kind, Op, OpQuorum, Outcome};

mod display;
mod rules;
#[cfg(test)]
mod tests;

use rules::{check_quorums, check_register, check_set, KeyOps};

/// Examples kept of each kind of anomaly.
pub const EXAMPLES: usize = 20;

/// The replication parameters of a run: `None` is the server's default
/// (`from` = the replication factor, `ack` = a majority of `from`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quorum {
    pub from: Option<u32>,
    pub ack_write: Option<u32>,
    pub ack_read: Option<u32>,
}

impl Quorum {
    /// Every parameter explicit.
    pub fn explicit(ack_write: u32, ack_read: u32, from: u32) -> Quorum {
        Quorum {
            from: Some(from),
            ack_write: Some(ack_write),
            ack_read: Some(ack_read),
        }
    }

    /// Whether every read's replicas meet every acknowledged write's:
    /// `ack_read + ack_write > from`. Two default majorities always meet;
    /// an explicit `ack` without `from` cannot be judged (`None`).
    pub fn intersects(&self) -> Option<bool> {
        match self.from {
            Some(from) => {
                let (w, r) = self.acks(from);
                Some(OpQuorum { ack: w, from }.meets(OpQuorum { ack: r, from }))
            }
            None if self.ack_write.is_none() && self.ack_read.is_none() => Some(true),
            None => None,
        }
    }

    fn acks(&self, from: u32) -> (u32, u32) {
        let majority = from / 2 + 1;
        (
            self.ack_write.unwrap_or(majority),
            self.ack_read.unwrap_or(majority),
        )
    }
}

impl fmt::Display for Quorum {
    /// The intersection condition as it stands: `ack 2 + 2 > from 3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.from {
            Some(from) => {
                let (w, r) = self.acks(from);
                let op = if self.intersects() == Some(true) {
                    ">"
                } else {
                    "<="
                };
                write!(f, "ack {r} + {w} {op} from {from}")
            }
            None if self.ack_write.is_none() && self.ack_read.is_none() => {
                f.write_str("default majorities")
            }
            None => f.write_str("ack given without from"),
        }
    }
}

/// An acknowledged write the final reads did not find.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lost {
    pub key: Vec<u8>,
    /// The value acknowledged (`None`: an acknowledged delete).
    pub value: Option<Vec<u8>>,
    pub client: u32,
    pub node: Arc<str>,
    pub invoked: Duration,
    pub completed: Duration,
    /// What the final read found instead (`None`: absent).
    pub found: Option<Vec<u8>>,
    pub found_at: Duration,
    pub found_node: Arc<str>,
}

/// A read that returned an out-of-date value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stale {
    pub key: Vec<u8>,
    /// What it returned (`None`: absent).
    pub read: Option<Vec<u8>>,
    pub client: u32,
    pub node: Arc<str>,
    pub invoked: Duration,
    pub completed: Duration,
    /// The newest write acknowledged before the read was invoked (`None`:
    /// a delete) and when it was acknowledged.
    pub newest: Option<Vec<u8>>,
    pub newest_completed: Duration,
}

/// Why a read's value could not have been there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// No write of that value to that key at all.
    NeverWritten,
    /// Only writes that were refused (4xx, 503) wrote it.
    WriteFailed,
    /// Only writes invoked after the read completed wrote it.
    WrittenLater,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Why::NeverWritten => "never written",
            Why::WriteFailed => "its write was refused",
            Why::WrittenLater => "written only after the read completed",
        })
    }
}

/// A read of a value that no write can explain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Impossible {
    pub key: Vec<u8>,
    pub read: Vec<u8>,
    pub client: u32,
    pub node: Arc<str>,
    pub invoked: Duration,
    pub completed: Duration,
    pub why: Why,
}

/// What the checker found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub quorum: Quorum,
    pub ops: u64,
    /// Writes (PUTs) by outcome.
    pub writes: u64,
    pub writes_ok: u64,
    pub writes_failed: u64,
    pub writes_unknown: u64,
    pub deletes: u64,
    /// Reads, final reads included, and how many were answered (200/404).
    pub reads: u64,
    pub reads_answered: u64,
    /// Acknowledged writes to `set/…` keys, each checked at the end.
    pub set_acknowledged: u64,
    /// `Unknown` writes to `set/…` keys the final reads found, or not.
    pub unknown_present: u64,
    pub unknown_absent: u64,
    /// `reg/…` keys, and the reads of them checked for staleness.
    pub registers: u64,
    pub register_reads_checked: u64,
    /// `lin/…` keys whose operations carry their own quorums, and their
    /// reads checked for staleness.
    pub quorum_keys: u64,
    pub quorum_reads_checked: u64,
    /// Whether reads during the run were checked for staleness (see
    /// `Quorum::intersects`).
    pub stale_checked: bool,
    pub lost: u64,
    pub stale: u64,
    pub impossible: u64,
    /// Acknowledged writes whose key the final pass could not read.
    pub unverified: u64,
    /// Reads of an `Unknown` write after a newer acknowledged one: allowed
    /// (an unfinished write may take effect late), counted to be seen.
    pub late_unknown: u64,
    /// Operations on keys that are neither `set/…` nor `reg/…`.
    pub unchecked_ops: u64,
    /// The first few of each, by invocation time.
    pub lost_examples: Vec<Lost>,
    pub stale_examples: Vec<Stale>,
    pub impossible_examples: Vec<Impossible>,
    pub unverified_keys: Vec<Vec<u8>>,
}

impl Report {
    fn new(quorum: Quorum) -> Report {
        Report {
            quorum,
            ops: 0,
            writes: 0,
            writes_ok: 0,
            writes_failed: 0,
            writes_unknown: 0,
            deletes: 0,
            reads: 0,
            reads_answered: 0,
            set_acknowledged: 0,
            unknown_present: 0,
            unknown_absent: 0,
            registers: 0,
            register_reads_checked: 0,
            quorum_keys: 0,
            quorum_reads_checked: 0,
            stale_checked: quorum.intersects() == Some(true),
            lost: 0,
            stale: 0,
            impossible: 0,
            unverified: 0,
            late_unknown: 0,
            unchecked_ops: 0,
            lost_examples: Vec::new(),
            stale_examples: Vec::new(),
            impossible_examples: Vec::new(),
            unverified_keys: Vec::new(),
        }
    }

    /// Anomalies found: lost, stale and impossible.
    pub fn anomalies(&self) -> u64 {
        self.lost + self.stale + self.impossible
    }

    /// No anomaly, and every acknowledged write was verified at the end.
    pub fn passed(&self) -> bool {
        self.anomalies() == 0 && self.unverified == 0
    }
}

/// Check `history`, recorded with the replication parameters `quorum`.
pub fn check(history: &History, quorum: Quorum) -> Report {
    let mut r = Report::new(quorum);
    let mut by_key: HashMap<&[u8], Vec<&Op>> = HashMap::new();
    for op in &history.ops {
        r.ops += 1;
        match op.kind {
            Kind::Write => {
                r.writes += 1;
                match op.outcome {
                    Outcome::Ok => r.writes_ok += 1,
                    Outcome::Failed => r.writes_failed += 1,
                    Outcome::Unknown => r.writes_unknown += 1,
                }
            }
            Kind::Delete => r.deletes += 1,
            Kind::Read => {
                r.reads += 1;
                if op.outcome == Outcome::Ok {
                    r.reads_answered += 1;
                }
            }
        }
        by_key.entry(&op.key).or_default().push(op);
    }
    let mut keys: Vec<(&[u8], Vec<&Op>)> = by_key.into_iter().collect();
    keys.sort_unstable_by_key(|(k, _)| *k);
    for (key, ops) in keys {
        let role = KeyRole::of(key);
        if role == KeyRole::Other {
            r.unchecked_ops += ops.len() as u64;
            continue;
        }
        let k = KeyOps::new(&ops);
        for read in &k.reads {
            if let (Outcome::Ok, Some(v)) = (read.outcome, &read.value) {
                if let Some(why) = k.impossible(v, read.completed) {
                    r.impossible += 1;
                    r.impossible_examples.push(Impossible {
                        key: key.to_vec(),
                        read: v.clone(),
                        client: read.client,
                        node: read.node.clone(),
                        invoked: read.invoked,
                        completed: read.completed,
                        why,
                    });
                }
            }
        }
        match role {
            KeyRole::Set => check_set(&mut r, key, &k),
            KeyRole::Register => check_register(&mut r, key, &k),
            // Shared keys: impossible reads above; the rest is the
            // linearizability check's, unless each operation says its
            // own quorum.
            KeyRole::Shared if ops.iter().all(|o| o.quorum.is_some()) => {
                check_quorums(&mut r, key, &k)
            }
            KeyRole::Shared => {}
            KeyRole::Other => unreachable!(),
        }
    }
    r.lost_examples
        .sort_by(|a, b| (a.invoked, &a.key).cmp(&(b.invoked, &b.key)));
    r.lost_examples.truncate(EXAMPLES);
    r.stale_examples
        .sort_by(|a, b| (a.invoked, &a.key).cmp(&(b.invoked, &b.key)));
    r.stale_examples.truncate(EXAMPLES);
    r.impossible_examples
        .sort_by(|a, b| (a.invoked, &a.key).cmp(&(b.invoked, &b.key)));
    r.impossible_examples.truncate(EXAMPLES);
    r.unverified_keys.truncate(EXAMPLES);
    r
}
