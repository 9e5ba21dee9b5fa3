//! The smallest witness of a violation: a few of the key's operations
//! that, with the key absent before them as it was, cannot be ordered.
//! Only removals that keep a linearizable history linearizable are made,
//! so that the witness proves the violation by itself: any read may go; a
//! write may go once no read of its value is left; a delete may go once
//! every not-found read left that could follow it has a write or a sure
//! delete that must come between them. Start from operations
//! that cannot be ordered (two clusters the zones proposed, or the history
//! up to where the search got stuck, with the writes and deletes its reads
//! need), then remove one operation at a time while what is left still
//! cannot be ordered, until none can go. Owns the witness and its
//! explanation; must not decide the key's verdict.

use std::time::Instant;

use super::prepare::{Action, Prepared};
use super::search::{search, Found, Stuck};

/// Operations a starting set may hold before it is not worth shrinking.
const MAX_START: usize = 3_000;

fn sub(p: &Prepared, keep: &[usize]) -> Prepared {
    let mut keep = keep.to_vec();
    keep.sort_unstable();
    Prepared {
        ops: keep.iter().map(|&i| p.ops[i]).collect(),
        impossible: None,
    }
}

/// `keep`'s operations alone cannot be ordered (decided by `deadline`).
pub fn violated(p: &Prepared, keep: &[usize], deadline: Instant) -> bool {
    matches!(
        search(&sub(p, keep), Some(deadline)),
        Found::Violation { .. }
    )
}

/// What removing `keep[at]` leaves, if the removal is sound.
pub(super) fn without(p: &Prepared, keep: &[usize], at: usize) -> Option<Vec<usize>> {
    let o = p.ops[keep[at]];
    let others = || keep.iter().enumerate().filter(move |(j, _)| *j != at);
    let sound = match o.action {
        Action::Read(_) => true,
        Action::Write(v) => !others().any(|(_, &i)| p.ops[i].action == Action::Read(Some(v))),
        Action::Delete => {
            // A not-found read that could follow it still follows
            // something else if a write or sure delete must come between
            // them (it began after this delete ended and ended before the
            // read began): then no read's answer came from this delete.
            let between = others()
                .map(|(_, &i)| p.ops[i])
                .filter(|x| !matches!(x.action, Action::Read(_)) && !x.optional && x.call > o.ret)
                .map(|x| x.ret)
                .min();
            others().all(|(_, &i)| {
                let r = p.ops[i];
                r.action != Action::Read(None)
                    || r.ret < o.call
                    || between.is_some_and(|m| m < r.call)
            })
        }
    };
    sound.then(|| others().map(|(_, &i)| i).collect())
}

/// The operations called by `until`, with every write whose value they
/// read and every delete that a not-found read among them could follow.
fn prefix(p: &Prepared, until: u64) -> Vec<usize> {
    let mut keep: Vec<usize> = (0..p.ops.len())
        .filter(|&i| p.ops[i].call <= until)
        .collect();
    let read: std::collections::HashSet<u32> = keep
        .iter()
        .filter_map(|&i| match p.ops[i].action {
            Action::Read(Some(v)) => Some(v),
            _ => None,
        })
        .collect();
    let nf_end = keep
        .iter()
        .filter(|&&i| p.ops[i].action == Action::Read(None))
        .map(|&i| p.ops[i].ret)
        .max();
    for (i, o) in p.ops.iter().enumerate() {
        if o.call <= until {
            continue;
        }
        let needed = match o.action {
            Action::Write(v) => read.contains(&v),
            Action::Delete => nf_end.is_some_and(|e| o.call <= e),
            Action::Read(_) => false,
        };
        if needed {
            keep.push(i);
        }
    }
    keep
}

/// A start for the witness when the whole key's search found the
/// violation: the history up to where it got stuck, widened until it
/// cannot be ordered by itself.
pub fn start_from(p: &Prepared, stuck: Stuck, deadline: Instant) -> Option<Vec<usize>> {
    let mut until = p.ops[stuck.op].ret;
    let step = until.saturating_sub(stuck.frontier).max(1_000_000);
    for k in 0..16u32 {
        let keep = prefix(p, until);
        if keep.len() > MAX_START || Instant::now() >= deadline {
            return None;
        }
        if violated(p, &keep, deadline) {
            return Some(keep);
        }
        until = until.saturating_add(step.saturating_mul(1 << k));
    }
    None
}

/// `keep` (not linearizable by itself) less every operation that can
/// soundly go while it stays so, pass after pass; by call time.
pub fn shrink(p: &Prepared, mut keep: Vec<usize>, deadline: Instant) -> Vec<usize> {
    // Reads first: they go most often.
    keep.sort_by_key(|&i| (!matches!(p.ops[i].action, Action::Read(_)), p.ops[i].call));
    loop {
        let before = keep.len();
        let mut at = 0;
        while at < keep.len() && Instant::now() < deadline {
            match without(p, &keep, at) {
                Some(fewer) if violated(p, &fewer, deadline) => keep = fewer,
                _ => at += 1,
            }
        }
        if keep.len() == before || Instant::now() >= deadline {
            break;
        }
    }
    keep.sort_by_key(|&i| p.ops[i].call);
    keep
}

/// The operations around where the search got stuck, when no small set
/// could be cut out by the deadline (shown, not a proof).
pub fn near(p: &Prepared, stuck: Stuck) -> Vec<usize> {
    let s = p.ops[stuck.op];
    let mut v: Vec<usize> = (0..p.ops.len())
        .filter(|&i| p.ops[i].call <= s.ret && p.ops[i].ret >= s.call)
        .take(12)
        .collect();
    if !v.contains(&stuck.op) {
        v.push(stuck.op);
    }
    v.sort_by_key(|&i| p.ops[i].call);
    v
}

/// Why the witness's operations cannot be ordered, in words.
pub fn explain(p: &Prepared, w: &[usize], proven: bool) -> String {
    let reads = w
        .iter()
        .filter(|&&i| matches!(p.ops[i].action, Action::Read(_)))
        .count();
    if !proven {
        return format!(
            "no order of the key's operations exists; shown: the {} operations around where the search for one got stuck",
            w.len()
        );
    }
    format!(
        "these {} operations ({} reads), the key absent before them, cannot be put in one order in which each follows every operation that ended before it began and each read returns the last value written (not found after a delete)",
        w.len(),
        reads
    )
}
