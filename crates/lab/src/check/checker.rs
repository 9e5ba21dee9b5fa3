//! The consistency checker: pure, deterministic functions from a history
//! (and the run's `ack`/`from`) to a report of lost acknowledged writes,
//! stale reads and impossible reads, with examples and a text summary.
//! Owns what counts as an anomaly; must not send requests, read the clock
//! or know how the history was made.
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

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::history::{History, KeyRole, Kind, Op, Outcome, Shown};
use crate::report::markdown::group;

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
            Some(f) => {
                let (w, r) = self.acks(f);
                Some(w + r > f)
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
                let op = if w + r > from { ">" } else { "<=" };
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

/// One key's operations, split.
struct KeyOps<'a> {
    /// Writes and deletes, and the same by the value they leave (`None`:
    /// a delete).
    mutations: Vec<&'a Op>,
    by_value: HashMap<Option<&'a [u8]>, Vec<&'a Op>>,
    reads: Vec<&'a Op>,
    /// Acknowledged mutations by completion time, and for each position the
    /// one invoked last among those up to it.
    acked: Vec<&'a Op>,
    latest_invoked: Vec<usize>,
}

/// A state a read may have seen: a mutation, or the key's initial absence
/// (acknowledged before everything).
struct Source {
    acknowledged: bool,
    /// `None`: the initial absence.
    completed: Option<Duration>,
}

impl<'a> KeyOps<'a> {
    fn new(ops: &[&'a Op]) -> KeyOps<'a> {
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
    fn impossible(&self, v: &[u8], done: Duration) -> Option<Why> {
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

enum Judgement<'a> {
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
fn final_read<'a>(k: &KeyOps<'a>) -> Option<&'a Op> {
    k.reads
        .iter()
        .copied()
        .filter(|o| o.final_read && o.outcome == Outcome::Ok)
        .max_by_key(|o| o.completed)
}

fn lost(w: &Op, value: Option<Vec<u8>>, f: &Op) -> Lost {
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

fn unverified(r: &mut Report, key: &[u8]) {
    r.unverified += 1;
    if r.unverified_keys.len() < EXAMPLES {
        r.unverified_keys.push(key.to_vec());
    }
}

fn check_set(r: &mut Report, key: &[u8], k: &KeyOps) {
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

fn check_register(r: &mut Report, key: &[u8], k: &KeyOps) {
    r.registers += 1;
    for read in &k.reads {
        if read.outcome != Outcome::Ok || !(read.final_read || r.stale_checked) {
            continue;
        }
        r.register_reads_checked += 1;
        match k.judge(read) {
            Judgement::Fresh => {}
            Judgement::LateUnknown => r.late_unknown += 1,
            Judgement::Stale(newest) if read.final_read => {
                r.lost += 1;
                r.lost_examples
                    .push(lost(newest, newest.value.clone(), read));
            }
            Judgement::Stale(newest) => {
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
        }
    }
    if !k.acked.is_empty() && final_read(k).is_none() {
        unverified(r, key);
    }
}

/// Seconds with milliseconds: `1.234s`.
fn secs(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

fn via(node: &str) -> String {
    if node.is_empty() {
        String::new()
    } else {
        format!(" via {node}")
    }
}

fn value(v: &Option<Vec<u8>>) -> String {
    match v {
        Some(v) => Shown(v).to_string(),
        None => "absent".into(),
    }
}

fn heading(f: &mut fmt::Formatter<'_>, what: &str, n: u64, shown: usize) -> fmt::Result {
    if n as usize > shown {
        writeln!(f, "{what} ({}, the first {shown}):", group(n))
    } else {
        writeln!(f, "{what} ({}):", group(n))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "checked {} writes ({} acknowledged, ",
            group(self.writes),
            group(self.writes_ok)
        )?;
        if self.writes_failed > 0 {
            write!(f, "{} failed, ", group(self.writes_failed))?;
        }
        write!(f, "{} unknown), ", group(self.writes_unknown))?;
        if self.deletes > 0 {
            write!(f, "{} deletes, ", group(self.deletes))?;
        }
        write!(
            f,
            "{} reads: {} lost, ",
            group(self.reads),
            group(self.lost)
        )?;
        if self.stale_checked {
            write!(f, "{} stale, ", group(self.stale))?;
        } else {
            f.write_str("stale not checked, ")?;
        }
        write!(f, "{} impossible", group(self.impossible))?;
        if self.unverified > 0 {
            write!(f, ", {} not verified", group(self.unverified))?;
        }
        writeln!(f)?;

        write!(
            f,
            "  set keys: {} acknowledged writes checked by the final reads",
            group(self.set_acknowledged)
        )?;
        if self.unknown_present + self.unknown_absent > 0 {
            write!(
                f,
                "; unknown writes: {} present, {} absent",
                group(self.unknown_present),
                group(self.unknown_absent)
            )?;
        }
        writeln!(f)?;
        write!(
            f,
            "  register keys: {}, reads checked: {}; ",
            group(self.registers),
            group(self.register_reads_checked)
        )?;
        match self.quorum.intersects() {
            Some(true) => writeln!(f, "reads during the run checked ({})", self.quorum)?,
            Some(false) => writeln!(
                f,
                "reads during the run not checked ({}: a read need not meet an acknowledged write)",
                self.quorum
            )?,
            None => writeln!(f, "reads during the run not checked ({})", self.quorum)?,
        }
        if self.late_unknown > 0 {
            writeln!(
                f,
                "  {} reads returned an unknown write after a newer acknowledged one (allowed: an unfinished write may take effect late)",
                group(self.late_unknown)
            )?;
        }
        if self.unchecked_ops > 0 {
            writeln!(
                f,
                "  {} operations on other keys, not checked",
                group(self.unchecked_ops)
            )?;
        }

        if self.lost > 0 {
            heading(f, "lost writes", self.lost, self.lost_examples.len())?;
            for l in &self.lost_examples {
                writeln!(
                    f,
                    "  {} = {}: acknowledged to client {}{} at {}..{}; the final read at {}{} found {}",
                    Shown(&l.key),
                    value(&l.value),
                    l.client,
                    via(&l.node),
                    secs(l.invoked),
                    secs(l.completed),
                    secs(l.found_at),
                    via(&l.found_node),
                    value(&l.found),
                )?;
            }
        }
        if self.stale > 0 {
            heading(f, "stale reads", self.stale, self.stale_examples.len())?;
            for s in &self.stale_examples {
                writeln!(
                    f,
                    "  {}: client {} read {}{} at {}..{}, but {} had been acknowledged at {}",
                    Shown(&s.key),
                    s.client,
                    value(&s.read),
                    via(&s.node),
                    secs(s.invoked),
                    secs(s.completed),
                    value(&s.newest),
                    secs(s.newest_completed),
                )?;
            }
        }
        if self.impossible > 0 {
            heading(
                f,
                "impossible reads",
                self.impossible,
                self.impossible_examples.len(),
            )?;
            for i in &self.impossible_examples {
                writeln!(
                    f,
                    "  {}: client {} read {}{} at {}..{}: {}",
                    Shown(&i.key),
                    i.client,
                    Shown(&i.read),
                    via(&i.node),
                    secs(i.invoked),
                    secs(i.completed),
                    i.why,
                )?;
            }
        }
        if self.unverified > 0 {
            heading(
                f,
                "not verified (the final read got no answer)",
                self.unverified,
                self.unverified_keys.len(),
            )?;
            for k in &self.unverified_keys {
                writeln!(f, "  {}", Shown(k))?;
            }
        }
        if self.anomalies() > 0 {
            writeln!(f, "FAILED")
        } else if self.unverified > 0 {
            writeln!(
                f,
                "NOT PROVEN: some acknowledged writes could not be verified"
            )
        } else {
            writeln!(f, "passed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn w(client: u32, key: &str, value: &str, a: u64, b: u64, o: Outcome) -> Op {
        Op::write(client, key, value, ms(a), ms(b), o)
    }

    fn rd(client: u32, key: &str, value: Option<&str>, a: u64, b: u64) -> Op {
        Op::read(
            client,
            key,
            value.map(str::as_bytes),
            ms(a),
            ms(b),
            Outcome::Ok,
        )
    }

    fn fin(key: &str, value: Option<&str>, at: u64) -> Op {
        rd(99, key, value, at, at + 1).final_pass()
    }

    fn majority() -> Quorum {
        Quorum::explicit(2, 2, 3)
    }

    fn run(ops: Vec<Op>, q: Quorum) -> Report {
        check(&History::merge([ops]), q)
    }

    #[test]
    fn quorum_intersection() {
        assert_eq!(majority().intersects(), Some(true));
        assert_eq!(Quorum::explicit(1, 1, 3).intersects(), Some(false));
        assert_eq!(Quorum::explicit(1, 3, 3).intersects(), Some(true));
        assert_eq!(Quorum::default().intersects(), Some(true));
        let q = Quorum {
            from: Some(3),
            ack_write: Some(1),
            ack_read: None,
        };
        assert_eq!(q.intersects(), Some(false), "2 + 1 = 3");
        assert_eq!(q.to_string(), "ack 2 + 1 <= from 3");
        let q = Quorum {
            from: Some(5),
            ack_write: Some(3),
            ack_read: None,
        };
        assert_eq!(q.intersects(), Some(true));
        assert_eq!(q.to_string(), "ack 3 + 3 > from 5");
        let q = Quorum {
            from: Some(4),
            ack_write: Some(1),
            ack_read: None,
        };
        assert_eq!(q.intersects(), Some(false), "1 + 3 = 4");
        assert_eq!(q.to_string(), "ack 3 + 1 <= from 4");
        let q = Quorum {
            from: None,
            ack_write: Some(1),
            ack_read: None,
        };
        assert_eq!(q.intersects(), None);
    }

    #[test]
    fn a_clean_history_passes() {
        let r = run(
            vec![
                w(0, "set/0/0", "0:0", 0, 5, Outcome::Ok),
                w(0, "reg/0/0", "0:1", 6, 8, Outcome::Ok),
                rd(1, "reg/0/0", Some("0:1"), 9, 10),
                fin("set/0/0", Some("0:0"), 100),
                fin("reg/0/0", Some("0:1"), 100),
            ],
            majority(),
        );
        assert!(r.passed(), "{r}");
        assert_eq!(
            (
                r.writes,
                r.writes_ok,
                r.reads,
                r.set_acknowledged,
                r.registers
            ),
            (2, 2, 3, 1, 1)
        );
        assert_eq!(r.register_reads_checked, 2);
    }

    #[test]
    fn an_acknowledged_write_missing_at_the_end_is_lost() {
        let r = run(
            vec![
                w(0, "set/0/0", "a", 0, 5, Outcome::Ok),
                w(0, "set/0/1", "b", 6, 9, Outcome::Ok),
                w(0, "set/0/2", "c", 10, 12, Outcome::Ok),
                fin("set/0/0", Some("a"), 100),
                fin("set/0/1", None, 100),
                fin("set/0/2", Some("zzz"), 100),
            ],
            majority(),
        );
        assert!(!r.passed());
        assert_eq!(r.lost, 2);
        // "zzz" was never written: also an impossible read.
        assert_eq!(r.impossible, 1);
        assert_eq!(r.lost_examples[0].key, b"set/0/1");
        assert_eq!(r.lost_examples[0].found, None);
        assert_eq!(r.lost_examples[1].found.as_deref(), Some(&b"zzz"[..]));
    }

    #[test]
    fn the_last_answered_final_read_counts_and_no_answer_is_not_verified() {
        let failed_read = |key: &str, at: u64| {
            Op::read(99, key, None, ms(at), ms(at + 1), Outcome::Unknown)
                .with_status(504)
                .final_pass()
        };
        let r = run(
            vec![
                w(0, "set/0/0", "a", 0, 5, Outcome::Ok),
                w(0, "set/0/1", "b", 0, 5, Outcome::Ok),
                w(0, "reg/0/0", "0:1", 0, 5, Outcome::Ok),
                failed_read("set/0/0", 100),
                fin("set/0/0", Some("a"), 200),
                failed_read("set/0/1", 100),
                failed_read("set/0/1", 200),
                failed_read("reg/0/0", 200),
            ],
            majority(),
        );
        assert_eq!((r.lost, r.unverified), (0, 2));
        assert_eq!(
            r.unverified_keys,
            vec![b"reg/0/0".to_vec(), b"set/0/1".to_vec()]
        );
        assert!(!r.passed(), "not verified is not a pass");
    }

    #[test]
    fn unknown_writes_are_counted_present_or_absent_never_lost() {
        let r = run(
            vec![
                w(0, "set/0/0", "a", 0, 5, Outcome::Unknown),
                w(0, "set/0/1", "b", 6, 9, Outcome::Unknown),
                w(0, "set/0/2", "c", 6, 9, Outcome::Unknown),
                w(0, "set/0/3", "d", 6, 9, Outcome::Failed),
                fin("set/0/0", Some("a"), 100),
                fin("set/0/1", None, 100),
                fin("set/0/3", None, 100),
            ],
            majority(),
        );
        assert!(r.passed(), "{r}");
        assert_eq!((r.unknown_present, r.unknown_absent), (1, 1));
        assert_eq!((r.writes_unknown, r.writes_failed), (3, 1));
    }

    #[test]
    fn a_refused_write_found_at_the_end_is_impossible() {
        let r = run(
            vec![
                w(0, "set/0/0", "a", 0, 5, Outcome::Failed).with_status(503),
                fin("set/0/0", Some("a"), 100),
            ],
            majority(),
        );
        assert_eq!(r.impossible, 1);
        assert_eq!(r.impossible_examples[0].why, Why::WriteFailed);
    }

    #[test]
    fn a_delete_or_another_write_explains_a_set_key_at_the_end() {
        let r = run(
            vec![
                w(0, "set/0/0", "a", 0, 5, Outcome::Ok),
                Op::delete(0, "set/0/0", ms(6), ms(7), Outcome::Unknown),
                w(0, "set/0/1", "b", 0, 5, Outcome::Ok),
                w(1, "set/0/1", "c", 0, 5, Outcome::Ok),
                fin("set/0/0", None, 100),
                fin("set/0/1", Some("c"), 100),
            ],
            majority(),
        );
        assert!(r.passed(), "{r}");
        assert_eq!(r.deletes, 1);
    }

    /// One client writes reg/0/0 with 0:1 (0..10), 0:2 (20..30), 0:3
    /// (40..50).
    fn register_writes() -> Vec<Op> {
        vec![
            w(0, "reg/0/0", "0:1", 0, 10, Outcome::Ok),
            w(0, "reg/0/0", "0:2", 20, 30, Outcome::Ok),
            w(0, "reg/0/0", "0:3", 40, 50, Outcome::Ok),
            fin("reg/0/0", Some("0:3"), 100),
        ]
    }

    #[test]
    fn a_read_older_than_a_write_acknowledged_before_it_is_stale() {
        let mut ops = register_writes();
        ops.push(rd(1, "reg/0/0", Some("0:1"), 31, 32));
        let r = run(ops, majority());
        assert_eq!(r.stale, 1, "{r}");
        let s = &r.stale_examples[0];
        assert_eq!(s.read.as_deref(), Some(&b"0:1"[..]));
        assert_eq!(s.newest.as_deref(), Some(&b"0:2"[..]));
        assert_eq!(s.newest_completed, ms(30));
    }

    #[test]
    fn absent_after_an_acknowledged_write_is_stale() {
        let mut ops = register_writes();
        ops.push(rd(1, "reg/0/0", None, 11, 12));
        let r = run(ops, majority());
        assert_eq!(r.stale, 1);
        assert_eq!(r.stale_examples[0].read, None);
    }

    #[test]
    fn reads_concurrent_with_a_write_may_return_either_value() {
        let mut ops = register_writes();
        // 0:2 is being written (20..30): old and new are both fine.
        ops.push(rd(1, "reg/0/0", Some("0:1"), 21, 29));
        ops.push(rd(2, "reg/0/0", Some("0:2"), 21, 29));
        // Invoked exactly when 0:2 was acknowledged: not after it.
        ops.push(rd(3, "reg/0/0", Some("0:1"), 30, 31));
        // Absent before any write completed.
        ops.push(rd(4, "reg/0/0", None, 5, 6));
        let r = run(ops, majority());
        assert!(r.passed(), "{r}");
        assert_eq!(r.register_reads_checked, 5);
    }

    #[test]
    fn an_unknown_write_read_late_is_allowed_but_counted() {
        let ops = vec![
            w(0, "reg/0/0", "0:1", 0, 10, Outcome::Ok),
            w(0, "reg/0/0", "0:2", 20, 30, Outcome::Unknown),
            w(0, "reg/0/0", "0:3", 40, 50, Outcome::Ok),
            // 0:2 may take effect after 0:3.
            rd(1, "reg/0/0", Some("0:2"), 60, 61),
            // 0:1 was acknowledged before 0:3 was invoked: stale.
            rd(1, "reg/0/0", Some("0:1"), 62, 63),
            fin("reg/0/0", Some("0:2"), 100),
        ];
        let r = run(ops, majority());
        assert_eq!((r.stale, r.late_unknown, r.lost), (1, 2, 0), "{r}");
    }

    #[test]
    fn a_stale_final_read_loses_the_acknowledged_write() {
        let mut ops = register_writes();
        ops.pop();
        ops.push(fin("reg/0/0", Some("0:2"), 100));
        let r = run(ops, Quorum::explicit(1, 1, 3));
        assert_eq!((r.lost, r.stale), (1, 0));
        let l = &r.lost_examples[0];
        assert_eq!(l.value.as_deref(), Some(&b"0:3"[..]));
        assert_eq!(l.found.as_deref(), Some(&b"0:2"[..]));
    }

    #[test]
    fn stale_reads_are_not_checked_when_quorums_need_not_meet() {
        let mut ops = register_writes();
        ops.push(rd(1, "reg/0/0", Some("0:1"), 31, 32));
        let r = run(ops, Quorum::explicit(1, 1, 3));
        assert!(!r.stale_checked);
        assert_eq!(r.stale, 0);
        assert!(r.passed());
        // ... but an impossible read still is.
        let mut ops = register_writes();
        ops.push(rd(1, "reg/0/0", Some("7:7"), 31, 32));
        assert_eq!(run(ops, Quorum::explicit(1, 1, 3)).impossible, 1);
    }

    #[test]
    fn impossible_reads_say_why() {
        let mut ops = register_writes();
        ops.push(w(0, "reg/0/0", "0:9", 60, 70, Outcome::Failed));
        ops.push(w(0, "reg/0/0", "0:4", 80, 90, Outcome::Ok));
        ops.push(rd(1, "reg/0/0", Some("5:5"), 51, 52));
        ops.push(rd(1, "reg/0/0", Some("0:9"), 71, 72));
        ops.push(rd(1, "reg/0/0", Some("0:4"), 73, 74));
        let r = run(ops, majority());
        let why: Vec<Why> = r.impossible_examples.iter().map(|i| i.why).collect();
        assert_eq!(
            why,
            vec![Why::NeverWritten, Why::WriteFailed, Why::WrittenLater]
        );
        assert_eq!(r.stale, 0, "an impossible read is not also stale");
    }

    #[test]
    fn examples_are_capped_and_ordered_by_time() {
        let mut ops = Vec::new();
        for i in 0..30u64 {
            let key = format!("set/0/{i}");
            ops.push(w(0, &key, "v", 100 - i, 101 - i, Outcome::Ok));
            ops.push(fin(&key, None, 200));
        }
        let r = run(ops, majority());
        assert_eq!(r.lost, 30);
        assert_eq!(r.lost_examples.len(), EXAMPLES);
        assert!(r
            .lost_examples
            .windows(2)
            .all(|p| p[0].invoked <= p[1].invoked));
        assert_eq!(r.lost_examples[0].key, b"set/0/29");
    }

    #[test]
    fn checking_is_deterministic() {
        let mut ops = register_writes();
        ops.push(rd(1, "reg/0/0", Some("0:1"), 31, 32));
        ops.push(w(0, "set/0/0", "a", 0, 5, Outcome::Ok));
        ops.push(fin("set/0/0", None, 100));
        let a = run(ops.clone(), majority());
        ops.reverse();
        let b = run(ops, majority());
        assert_eq!(a, b);
        assert_eq!(a.to_string(), b.to_string());
    }

    #[test]
    fn golden_summary_passed() {
        let mut ops = Vec::new();
        for i in 0..1500u64 {
            let o = if i % 100 == 7 {
                Outcome::Unknown
            } else {
                Outcome::Ok
            };
            let key = format!("set/{}/{i}", i % 4);
            ops.push(w((i % 4) as u32, &key, &format!("v{i}"), i, i + 1, o));
            let found = (i % 200 != 7).then(|| format!("v{i}"));
            ops.push(fin(&key, found.as_deref(), 10_000));
        }
        ops.extend(register_writes());
        ops.push(rd(1, "reg/0/0", Some("0:2"), 31, 32));
        let r = run(ops, majority());
        assert_eq!(
            r.to_string(),
            "checked 1,503 writes (1,488 acknowledged, 15 unknown), 1,502 reads: 0 lost, 0 stale, 0 impossible\n\
             \x20 set keys: 1,485 acknowledged writes checked by the final reads; unknown writes: 7 present, 8 absent\n\
             \x20 register keys: 1, reads checked: 2; reads during the run checked (ack 2 + 2 > from 3)\n\
             passed\n"
        );
        assert!(r.passed());
    }

    #[test]
    fn golden_summary_failed() {
        let mut ops = register_writes();
        ops.pop();
        ops.push(fin("reg/0/0", Some("0:3"), 100).on("http://c:3"));
        ops.push(rd(1, "reg/0/0", Some("0:1"), 31, 32).on("http://b:2"));
        ops.push(rd(2, "reg/0/0", Some("9:9"), 33, 34).on("http://a:1"));
        ops.push(w(3, "set/3/0", "3:0", 1, 4, Outcome::Ok).on("http://a:1"));
        ops.push(fin("set/3/0", None, 100).on("http://b:2"));
        ops.push(w(3, "set/3/1", "3:1", 5, 6, Outcome::Failed));
        ops.push(w(3, "set/3/2", "3:2", 7, 8, Outcome::Ok));
        ops.push(Op::read(9, "set/3/2", None, ms(90), ms(91), Outcome::Unknown).final_pass());
        ops.push(Op::write(4, "other", "x", ms(1), ms(2), Outcome::Ok));
        let r = run(ops, majority());
        assert_eq!(
            r.to_string(),
            "checked 7 writes (6 acknowledged, 1 failed, 0 unknown), 5 reads: 1 lost, 1 stale, 1 impossible, 1 not verified\n\
             \x20 set keys: 2 acknowledged writes checked by the final reads\n\
             \x20 register keys: 1, reads checked: 3; reads during the run checked (ack 2 + 2 > from 3)\n\
             \x20 1 operations on other keys, not checked\n\
             lost writes (1):\n\
             \x20 \"set/3/0\" = \"3:0\": acknowledged to client 3 via http://a:1 at 0.001s..0.004s; the final read at 0.101s via http://b:2 found absent\n\
             stale reads (1):\n\
             \x20 \"reg/0/0\": client 1 read \"0:1\" via http://b:2 at 0.031s..0.032s, but \"0:2\" had been acknowledged at 0.030s\n\
             impossible reads (1):\n\
             \x20 \"reg/0/0\": client 2 read \"9:9\" via http://a:1 at 0.033s..0.034s: never written\n\
             not verified (the final read got no answer) (1):\n\
             \x20 \"set/3/2\"\n\
             FAILED\n"
        );
    }

    #[test]
    fn golden_first_line_when_stale_reads_are_not_checked() {
        let r = run(register_writes(), Quorum::explicit(1, 1, 3));
        let text = r.to_string();
        assert_eq!(
            text.lines().next().unwrap(),
            "checked 3 writes (3 acknowledged, 0 unknown), 1 reads: 0 lost, stale not checked, 0 impossible"
        );
        assert!(text.contains(
            "reads during the run not checked (ack 1 + 1 <= from 3: a read need not meet an acknowledged write)"
        ));
    }
}
