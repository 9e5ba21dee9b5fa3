//! One key's operations made ready for the search: values numbered, failed
//! operations and unanswered reads dropped, and the operations of unknown
//! outcome given the bounds the reads imply. Each rule keeps the answer
//! (linearizable or not) exactly as it was:
//!
//! - A write of unknown outcome whose value no read returned may be taken
//!   never to have happened: dropped. One whose value a read returned did
//!   happen, before that read's end (it precedes the read in any order):
//!   its end becomes the earliest end of the reads that returned it.
//! - A delete of unknown outcome placed after every not-found read that
//!   could follow it changes nothing any read saw (a read of a value has
//!   that value's write after the delete): it is optional, and bounded by
//!   the latest end of the not-found reads that end after it began; with
//!   none, dropped.
//!
//! Owns the numbering and those rules; must not search.

use std::collections::HashMap;

use crate::history::{Kind, Op, Outcome};

/// What an operation does to the register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A write of value number `v`.
    Write(u32),
    Delete,
    /// A read that returned value `v`, or absent (`None`).
    Read(Option<u32>),
}

/// An operation as the search sees it.
#[derive(Clone, Copy, Debug)]
pub struct LOp {
    /// Invocation and end, in nanoseconds since the run's start.
    pub call: u64,
    pub ret: u64,
    pub action: Action,
    /// May be left out (a delete of unknown outcome).
    pub optional: bool,
    /// Its index in the operations given to `prepare`.
    pub orig: usize,
}

/// One key, ready for the search.
#[derive(Clone, Debug, Default)]
pub struct Prepared {
    pub ops: Vec<LOp>,
    /// A read of a value no write of this key wrote (index into the
    /// operations given): not linearizable, whatever the order.
    pub impossible: Option<usize>,
}

/// The end of an operation that may take effect any time after its call.
pub const END: u64 = u64::MAX - 1;

fn nanos(d: std::time::Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128 - 1) as u64
}

/// Prepare one key's operations (any order; all of the same key).
pub fn prepare(ops: &[&Op]) -> Prepared {
    let mut ids: HashMap<&[u8], u32> = HashMap::new();
    // Writes of each value: Strata's are unique; an imported history's
    // may not be.
    let mut writers: Vec<u32> = Vec::new();
    for op in ops {
        if op.kind == Kind::Write && op.outcome != Outcome::Failed {
            if let Some(v) = &op.value {
                let n = ids.len() as u32;
                let id = *ids.entry(v.as_slice()).or_insert(n);
                if id as usize == writers.len() {
                    writers.push(0);
                }
                writers[id as usize] += 1;
            }
        }
    }
    // The earliest end of the answered reads of each value, and the ends
    // of the answered not-found reads.
    let mut first_read_end: HashMap<u32, u64> = HashMap::new();
    let mut not_found_ends: Vec<u64> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if op.kind != Kind::Read || op.outcome != Outcome::Ok {
            continue;
        }
        match &op.value {
            Some(v) => match ids.get(v.as_slice()) {
                Some(&id) => {
                    let e = first_read_end.entry(id).or_insert(u64::MAX);
                    *e = (*e).min(nanos(op.completed));
                }
                None => {
                    return Prepared {
                        ops: Vec::new(),
                        impossible: Some(i),
                    }
                }
            },
            None => not_found_ends.push(nanos(op.completed)),
        }
    }
    not_found_ends.sort_unstable();
    let mut out = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let call = nanos(op.invoked);
        let ret = nanos(op.completed).max(call);
        let lop = |action, ret, optional| LOp {
            call,
            ret,
            action,
            optional,
            orig: i,
        };
        match (op.kind, op.outcome) {
            (_, Outcome::Failed) => {}
            (Kind::Read, Outcome::Unknown) => {}
            (Kind::Read, Outcome::Ok) => {
                let v = op.value.as_ref().map(|v| ids[v.as_slice()]);
                out.push(lop(Action::Read(v), ret, false));
            }
            (Kind::Write, o) => {
                let Some(id) = op.value.as_ref().map(|v| ids[v.as_slice()]) else {
                    continue;
                };
                match (o, first_read_end.get(&id)) {
                    (Outcome::Ok, _) => out.push(lop(Action::Write(id), ret, false)),
                    // Another write of the same value may be the one read:
                    // this one may have happened at any time, or never.
                    (_, Some(_)) if writers[id as usize] > 1 => {
                        out.push(lop(Action::Write(id), END, true))
                    }
                    // Seen: it happened, before its first reader ended.
                    (_, Some(&end)) => out.push(lop(Action::Write(id), end.max(call), false)),
                    // Unseen and uncertain: it may never have happened.
                    (_, None) => {}
                }
            }
            (Kind::Delete, Outcome::Ok) => out.push(lop(Action::Delete, ret, false)),
            (Kind::Delete, _) => {
                // The latest end of a not-found read that does not end
                // before the delete began (one ending at its very call
                // overlaps it).
                if let Some(&last) = not_found_ends.last().filter(|&&e| e >= call) {
                    out.push(lop(Action::Delete, last, true));
                }
            }
        }
    }
    Prepared {
        ops: out,
        impossible: None,
    }
}
