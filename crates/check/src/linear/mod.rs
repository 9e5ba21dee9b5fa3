//! Linearizability, key by key: is there one order of a key's operations
//! that respects real time (an operation that ended before another began
//! comes first) and the rules of a register (a read returns the last value
//! written before it, or absent after a delete or before any write)?
//!
//! The algorithm is Wing and Gong's search with Lowe's just-in-time
//! linearization and memoization, as Knossos and Porcupine use it, on each
//! key alone (P-compositionality: a history is linearizable iff each key's
//! is, Herlihy and Wing). Three things make it fast on Strata's histories,
//! where every written value is unique (`<client>:<seq>`), so that a read
//! names the one write it saw (as in Gibbons and Korach's register
//! algorithms):
//!
//! - **Outcomes prepared first** (`prepare`): a failed operation is
//!   dropped; a read without an answer is dropped (it changed nothing); a
//!   write of unknown outcome that no read saw is dropped (it may never
//!   have happened), and one that a read saw must have happened before the
//!   first such read ended, which bounds it; a delete of unknown outcome is
//!   optional, bounded by the last not-found read that could have seen it.
//!   So no operation stays open to the end of the history, the case that
//!   makes the search explode.
//! - **Reads cost no branching**: a read can be placed only where the state
//!   is its value, and placing it at once is never worse.
//! - **Memoization by Zobrist hashing**: the set of placed operations is a
//!   128-bit XOR of random keys, updated in O(1) a step, with the state.
//!
//! A key whose search runs past its time limit is reported `Unknown`,
//! never as a pass. A violation comes with its smallest witness
//! (`witness`): the few operations that cannot be ordered. Owns the
//! decision and the witness; must not send requests or know how the
//! history was made.

mod prepare;
mod search;
#[cfg(test)]
mod tests;
mod witness;
mod zones;

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::history::{History, KeyRole, Kind, Op, Shown};

pub use prepare::{prepare, Prepared};
pub use search::{search, Found};

/// Settings of a check.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// How long one key's search may take before it is `Unknown`.
    pub per_key: Duration,
    /// Keys checked side by side.
    pub threads: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_key: Duration::from_secs(60),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// What the check decided for one key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Linearizable,
    /// No order exists; the witness is a smallest set of the key's
    /// operations that cannot be ordered (indices into the history).
    Violation {
        witness: Vec<usize>,
        why: String,
    },
    /// The search did not finish (time limit): neither a pass nor a fail.
    Unknown {
        why: String,
    },
}

/// One key's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KeyResult {
    #[serde(with = "super::history::json::bytes")]
    pub key: Vec<u8>,
    /// Operations of the key in the history, and those the search took
    /// after preparation.
    pub ops: usize,
    pub searched: usize,
    pub verdict: Verdict,
    /// Search steps (operations placed) and the time it took.
    pub steps: u64,
    pub elapsed_ms: f64,
}

/// The check of a whole history.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LinReport {
    pub keys: Vec<KeyResult>,
    /// The witnesses' operations, as recorded (for showing them).
    pub witness_ops: Vec<Op>,
}

/// The algorithm, named in reports.
pub const ALGORITHM: &str = "Wing-Gong search with Lowe's just-in-time linearization and memoization (Zobrist-hashed), per key (P-compositionality), outcomes of unknown operations bounded by the unique values read";

impl LinReport {
    pub fn violations(&self) -> usize {
        self.keys
            .iter()
            .filter(|k| matches!(k.verdict, Verdict::Violation { .. }))
            .count()
    }

    pub fn unknown(&self) -> usize {
        self.keys
            .iter()
            .filter(|k| matches!(k.verdict, Verdict::Unknown { .. }))
            .count()
    }

    /// Every key decided linearizable.
    pub fn linearizable(&self) -> bool {
        self.violations() == 0 && self.unknown() == 0
    }

    /// `linearizable`, `not linearizable` or `unknown` (some key
    /// undecided, none violated).
    pub fn word(&self) -> &'static str {
        if self.violations() > 0 {
            "not linearizable"
        } else if self.unknown() > 0 {
            "unknown"
        } else {
            "linearizable"
        }
    }
}

/// Check every key of `h` that `wanted` accepts, each alone.
pub fn check_history(h: &History, wanted: impl Fn(&[u8]) -> bool, limits: Limits) -> LinReport {
    let mut by_key: std::collections::BTreeMap<&[u8], Vec<usize>> = Default::default();
    for (i, op) in h.ops.iter().enumerate() {
        if wanted(&op.key) {
            by_key.entry(&op.key).or_default().push(i);
        }
    }
    let keys: Vec<(&[u8], Vec<usize>)> = by_key.into_iter().collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..limits.threads.max(1).min(keys.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((key, idx)) = keys.get(i) else {
                    return;
                };
                let ops: Vec<&Op> = idx.iter().map(|&j| &h.ops[j]).collect();
                let r = check_key(key, &ops, idx, limits.per_key);
                results.lock().unwrap().push((i, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let keys: Vec<KeyResult> = results.into_iter().map(|(_, r)| r).collect();
    let mut witness_ops = Vec::new();
    for k in &keys {
        if let Verdict::Violation { witness, .. } = &k.verdict {
            witness_ops.extend(witness.iter().map(|&i| h.ops[i].clone()));
        }
    }
    LinReport { keys, witness_ops }
}

/// Check the keys every client shares (`lin/…`), each given `per_key`.
pub fn check_shared(h: &History, per_key: Duration) -> LinReport {
    check_history(
        h,
        |k| KeyRole::of(k) == KeyRole::Shared,
        Limits {
            per_key,
            ..Default::default()
        },
    )
}

/// Check one key's operations (`index[i]` is `ops[i]`'s place in the
/// history, for the witness).
pub fn check_key(key: &[u8], ops: &[&Op], index: &[usize], limit: Duration) -> KeyResult {
    let started = Instant::now();
    let p = prepare(ops);
    let (verdict, steps) = match &p.impossible {
        Some(i) => (
            Verdict::Violation {
                witness: vec![index[*i]],
                why: "a read returned a value no write of this key wrote".into(),
            },
            0,
        ),
        None => {
            let deadline = started + limit;
            // Clusters that cannot be ordered, proposed by the zones and
            // decided by the search on their operations alone.
            let quick = zones::suspects(&p)
                .into_iter()
                .find(|keep| witness::violated(&p, keep, deadline))
                .map(|keep| witness::shrink(&p, keep, deadline));
            match quick {
                Some(w) => {
                    let why = witness::explain(&p, &w, true);
                    let witness = w.iter().map(|&j| index[p.ops[j].orig]).collect();
                    (Verdict::Violation { witness, why }, 0)
                }
                None => match search(&p, Some(deadline)) {
                    Found::Linearizable { steps } => (Verdict::Linearizable, steps),
                    Found::Unknown { steps } => (
                        Verdict::Unknown {
                            why: format!(
                                "the search did not finish in {:.0} s ({steps} steps)",
                                limit.as_secs_f64()
                            ),
                        },
                        steps,
                    ),
                    Found::Violation { steps, stuck } => {
                        let until = started + limit * 2;
                        let (w, proven) = match witness::start_from(&p, stuck, until) {
                            Some(keep) => (witness::shrink(&p, keep, until), true),
                            None => (witness::near(&p, stuck), false),
                        };
                        let why = witness::explain(&p, &w, proven);
                        let witness = w.iter().map(|&j| index[p.ops[j].orig]).collect();
                        (Verdict::Violation { witness, why }, steps)
                    }
                },
            }
        }
    };
    KeyResult {
        key: key.to_vec(),
        ops: ops.len(),
        searched: p.ops.len(),
        verdict,
        steps,
        elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
    }
}

impl fmt::Display for LinReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops: usize = self.keys.iter().map(|k| k.ops).sum();
        let slowest = self
            .keys
            .iter()
            .map(|k| k.elapsed_ms)
            .fold(0.0f64, f64::max);
        writeln!(
            f,
            "Linearizability ({ALGORITHM}): {} — {} keys, {} operations; {} violated, {} undecided; slowest key {:.1} s",
            self.word(),
            self.keys.len(),
            ops,
            self.violations(),
            self.unknown(),
            slowest / 1e3
        )?;
        let mut shown = 0;
        for k in &self.keys {
            match &k.verdict {
                Verdict::Violation { witness, why } => {
                    writeln!(f, "  key {}: NOT linearizable: {why}", Shown(&k.key))?;
                    for op in self.witness_ops[shown..shown + witness.len()].iter() {
                        writeln!(f, "    {}", Line(op))?;
                    }
                    shown += witness.len();
                }
                Verdict::Unknown { why } => writeln!(f, "  key {}: unknown: {why}", Shown(&k.key))?,
                Verdict::Linearizable => {}
            }
        }
        Ok(())
    }
}

/// One operation on a line: client, what it did, when (ms since the
/// run's start), how it ended.
pub struct Line<'a>(pub &'a Op);

/// What an operation did, in words: `PUT "v"`, `GET -> "v"`, `GET -> not
/// found`, `DELETE`.
pub fn what(o: &Op) -> String {
    match (o.kind, &o.value) {
        (Kind::Write, Some(v)) => format!("PUT {}", Shown(v)),
        (Kind::Write, None) => "PUT".into(),
        (Kind::Delete, _) => "DELETE".into(),
        (Kind::Read, Some(v)) => format!("GET -> {}", Shown(v)),
        (Kind::Read, None) => "GET -> not found".into(),
    }
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.0;
        write!(
            f,
            "client {:>3}  {:<28} {:>10.3} .. {:>10.3} ms  {:?}",
            o.client,
            what(o),
            o.invoked.as_secs_f64() * 1e3,
            o.completed.as_secs_f64() * 1e3,
            o.outcome
        )
    }
}
