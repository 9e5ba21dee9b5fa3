//! The rules by key: a key's operations split by kind and by the value
//! they leave, which state a read may have seen, and the judgements of a
//! write-once (`set/…`) key, of a single-writer register (`reg/…`) key,
//! and of a key every client writes whose operations carry their own
//! quorums (`lin/…` with `Op::quorum`).
//! Owns the judging; must not format anything.

use std::collections::HashMap;
use std::time::Duration;

use super::{Lost, Report, Stale, Why, EXAMPLES};
use crate::history::{Kind, Op, Outcome};

/// One key's operations, split.
pub(super) struct KeyOps<'a> {
    /// Writes and deletes, and the same by the value they leave (`None`:
    /// a delete).
    mutations: Vec<&'a Op>,
    by_value: HashMap<Option<&'a [u8]>, Vec<&'a Op>>,
    pub(super) reads: Vec<&'a Op>,
    /// Acknowledged mutations by completion time, and for each position the
    /// one invoked last among those up to it.
    acked: Vec<&'a Op>,
    latest_invoked: Vec<usize>,
}

/// A state a read may have seen: a mutation, or the key's initial absence
/// (acknowledged before everything).
pub(super) struct Source {
    acknowledged: bool,
    /// `None`: the initial absence.
    completed: Option<Duration>,
}

impl<'a> KeyOps<'a> {
    pub(super) fn new(ops: &[&'a Op]) -> KeyOps<'a> {
        let (reads, mutations): (Vec<&Op>, Vec<&Op>) =
            ops.iter().partition(|o| o.kind == Kind::Read);
        let mut acked: Vec<&Op> = mutations
            .iter()
            .copied()
            .filter(|o| o.outcome == Outcome::Ok)
            .collect();
        acked.sort_by_key(|o| (o.completed, o.invoked));
        let mut latest_invoked: Vec<usize> = Vec::with_capacity(acked.len());
        for (i, o) in acked.iter().enumerate() {
            let best = match latest_invoked.last() {
                Some(&j) if acked[j].invoked >= o.invoked => j,
                _ => i,
            };
            latest_invoked.push(best);
        }
        let mut by_value: HashMap<Option<&[u8]>, Vec<&Op>> = HashMap::new();
        for m in &mutations {
            let v = match m.kind {
                Kind::Delete => None,
                _ => Some(m.value.as_deref().unwrap_or_default()),
            };
            by_value.entry(v).or_default().push(m);
        }
        KeyOps {
            mutations,
            by_value,
            reads,
            acked,
            latest_invoked,
        }
    }

    /// Why a read of `v` that completed at `done` is impossible, if it is.
    pub(super) fn impossible(&self, v: &[u8], done: Duration) -> Option<Why> {
        let mut why = Why::NeverWritten;
        for m in self.by_value.get(&Some(v)).into_iter().flatten() {
            if m.outcome == Outcome::Failed {
                why = why.min_reason(Why::WriteFailed);
            } else if m.invoked > done {
                why = why.min_reason(Why::WrittenLater);
            } else {
                return None;
            }
        }
        Some(why)
    }

    /// The states that could have produced a read of `value` completing at
    /// `done` (refused writes and writes from its future excluded).
    fn sources(&self, value: Option<&[u8]>, done: Duration) -> Vec<Source> {
        let mut s = Vec::new();
        if value.is_none() {
            s.push(Source {
                acknowledged: true,
                completed: None,
            });
        }
        for m in self.by_value.get(&value).into_iter().flatten() {
            if m.outcome != Outcome::Failed && m.invoked <= done {
                s.push(Source {
                    acknowledged: m.outcome == Outcome::Ok,
                    completed: Some(m.completed),
                });
            }
        }
        s
    }

    /// The acknowledged mutation invoked last among those completed before
    /// `t`: the newest state a read invoked at `t` must not be older than.
    fn newest_acked_before(&self, t: Duration) -> Option<&'a Op> {
        let n = self.acked.partition_point(|o| o.completed < t);
        (n > 0).then(|| self.acked[self.latest_invoked[n - 1]])
    }

    /// Judge a read of a register (or a final read): `Fresh`, `Stale`
    /// (with the newest acknowledged write it missed) or `LateUnknown`.
    fn judge(&self, read: &Op) -> Judgement<'a> {
        let Some(newest) = self.newest_acked_before(read.invoked) else {
            return Judgement::Fresh;
        };
        if newest.value == read.value {
            return Judgement::Fresh;
        }
        let sources = self.sources(read.value.as_deref(), read.completed);
        if sources.is_empty() {
            // Impossible, reported as such.
            return Judgement::Fresh;
        }
        let before = |s: &Source| s.completed.is_none_or(|c| c < newest.invoked);
        if !sources.iter().all(before) {
            Judgement::Fresh
        } else if sources.iter().all(|s| s.acknowledged) {
            Judgement::Stale(newest)
        } else {
            Judgement::LateUnknown
        }
    }
}

pub(super) enum Judgement<'a> {
    Fresh,
    Stale(&'a Op),
    LateUnknown,
}

impl Why {
    /// Of two reasons, the one that says most (a refused write explains
    /// more than nothing at all).
    fn min_reason(self, other: Why) -> Why {
        use Why::*;
        match (self, other) {
            (WrittenLater, _) | (_, WrittenLater) => WrittenLater,
            (WriteFailed, _) | (_, WriteFailed) => WriteFailed,
            _ => NeverWritten,
        }
    }
}

/// The last answered final read of a key.
pub(super) fn final_read<'a>(k: &KeyOps<'a>) -> Option<&'a Op> {
    k.reads
        .iter()
        .copied()
        .filter(|o| o.final_read && o.outcome == Outcome::Ok)
        .max_by_key(|o| o.completed)
}

pub(super) fn lost(w: &Op, value: Option<Vec<u8>>, f: &Op) -> Lost {
    Lost {
        key: w.key.clone(),
        value,
        client: w.client,
        node: w.node.clone(),
        invoked: w.invoked,
        completed: w.completed,
        found: f.value.clone(),
        found_at: f.completed,
        found_node: f.node.clone(),
    }
}

pub(super) fn unverified(r: &mut Report, key: &[u8]) {
    r.unverified += 1;
    if r.unverified_keys.len() < EXAMPLES {
        r.unverified_keys.push(key.to_vec());
    }
}

pub(super) fn check_set(r: &mut Report, key: &[u8], k: &KeyOps) {
    let fin = final_read(k);
    for w in k.mutations.iter().filter(|o| o.kind == Kind::Write) {
        let present = fin.map(|f| f.value == w.value);
        match w.outcome {
            Outcome::Failed => {}
            Outcome::Unknown => match present {
                Some(true) => r.unknown_present += 1,
                Some(false) => r.unknown_absent += 1,
                None => {}
            },
            Outcome::Ok => {
                r.set_acknowledged += 1;
                let Some(f) = fin else {
                    unverified(r, key);
                    continue;
                };
                if f.value == w.value {
                    continue;
                }
                // Another write or a delete of the key (not refused) may
                // explain what the final read found.
                let explained = k.mutations.iter().any(|m| {
                    !std::ptr::eq(*m, *w) && m.outcome != Outcome::Failed && m.value == f.value
                });
                if !explained {
                    r.lost += 1;
                    r.lost_examples.push(lost(w, w.value.clone(), f));
                }
            }
        }
    }
}

/// A read that missed the acknowledged write `newest`: stale, or, for a
/// read of the final pass, `newest` lost.
fn out_of_date(r: &mut Report, key: &[u8], read: &Op, newest: &Op) {
    if read.final_read {
        r.lost += 1;
        r.lost_examples
            .push(lost(newest, newest.value.clone(), read));
        return;
    }
    r.stale += 1;
    r.stale_examples.push(Stale {
        key: key.to_vec(),
        read: read.value.clone(),
        client: read.client,
        node: read.node.clone(),
        invoked: read.invoked,
        completed: read.completed,
        newest: newest.value.clone(),
        newest_completed: newest.completed,
    });
}

pub(super) fn check_register(r: &mut Report, key: &[u8], k: &KeyOps) {
    r.registers += 1;
    for read in &k.reads {
        if read.outcome != Outcome::Ok || !(read.final_read || r.stale_checked) {
            continue;
        }
        r.register_reads_checked += 1;
        match k.judge(read) {
            Judgement::Fresh => {}
            Judgement::LateUnknown => r.late_unknown += 1,
            Judgement::Stale(newest) => out_of_date(r, key, read, newest),
        }
    }
    if !k.acked.is_empty() && final_read(k).is_none() {
        unverified(r, key);
    }
}

/// A `lin/…` key whose operations carry their own quorums: a read whose
/// quorum meets the quorum of a write W acknowledged before the read was
/// invoked must return a state that is not known to be older than W. A
/// state is known older when its write was acknowledged before W was
/// invoked and their quorums meet (W's replicas then saw it first), or it
/// is the key's initial absence. A write without an answer may take
/// effect at any time after its invocation: never known older. A final
/// read that is stale has lost W.
pub(super) fn check_quorums(r: &mut Report, key: &[u8], k: &KeyOps) {
    let meet = |a: &Op, b: &Op| matches!((a.quorum, b.quorum), (Some(x), Some(y)) if x.meets(y));
    r.quorum_keys += 1;
    for read in &k.reads {
        if read.outcome != Outcome::Ok {
            continue;
        }
        let value = read.value.as_deref();
        let sources: Vec<&Op> = k
            .by_value
            .get(&value)
            .into_iter()
            .flatten()
            .copied()
            .filter(|m| m.outcome != Outcome::Failed && m.invoked <= read.completed)
            .collect();
        if sources.is_empty() && value.is_some() {
            // Impossible, reported as such.
            continue;
        }
        r.quorum_reads_checked += 1;
        let missed = k
            .acked
            .iter()
            .filter(|w| w.completed < read.invoked && meet(read, w))
            .filter(|w| {
                let older =
                    |s: &&Op| s.outcome == Outcome::Ok && s.completed < w.invoked && meet(s, w);
                sources.iter().all(older)
            })
            .max_by_key(|w| w.invoked);
        if let Some(w) = missed {
            out_of_date(r, key, read, w);
        }
    }
    if !k.acked.is_empty() && final_read(k).is_none() {
        unverified(r, key);
    }
}
