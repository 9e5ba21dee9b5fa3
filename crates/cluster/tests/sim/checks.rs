//! The checks run on a finished simulation: no acknowledged write lost,
//! no stale quorum read, every replica level.

use super::*;

/// A write that a read's answer can come from: a put of that value, a
/// delete (for no value), or the key's initial absence.
pub(super) fn candidates<'a>(
    writes: &[&'a Event],
    answer: &Option<String>,
) -> (Vec<&'a Event>, bool) {
    match answer {
        Some(v) => (
            writes
                .iter()
                .filter(|w| w.value.as_deref() == Some(v.as_str()))
                .copied()
                .collect(),
            false,
        ),
        None => (
            writes
                .iter()
                .filter(|w| w.op == Op::Delete)
                .copied()
                .collect(),
            true,
        ),
    }
}

pub(super) fn check(sh: &Shared) -> Vec<String> {
    let history = sh.history.borrow();
    let mut out = Vec::new();
    let mut by_key: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in history.iter() {
        by_key.entry(&e.key).or_default().push(e);
    }
    for (key, events) in &by_key {
        let writes: Vec<&Event> = events.iter().filter(|e| e.op != Op::Get).copied().collect();
        let reads = events
            .iter()
            .filter(|e| e.op == Op::Get)
            .filter_map(|e| match &e.outcome {
                Outcome::Ok(v) => Some((*e, v)),
                _ => None,
            });
        // (1) A key written once by an acknowledged put reads back at
        // full quorum after the heal.
        if let [w] = writes[..] {
            if w.op == Op::Put && w.acked() {
                let last = events
                    .iter()
                    .rev()
                    .find(|e| e.op == Op::Get && e.ack == RF && e.start >= WORKLOAD_MS + QUIET_MS);
                match last.map(|e| &e.outcome) {
                    Some(Outcome::Ok(v)) if *v == w.value => {}
                    other => out.push(format!(
                        "lost write: {key}={:?} acknowledged at {} ms, final read {other:?}",
                        w.value, w.end
                    )),
                }
            }
        }
        // (2) No stale quorum read: a read that began after write w' was
        // acknowledged, with quorums that intersect, returns a write that
        // is not known to be older than w' (acknowledged before w' began,
        // with write quorums that intersect, or the initial absence).
        for (r, answer) in reads {
            let (cands, initial) = candidates(&writes, answer);
            for w2 in writes.iter().filter(|w| w.acked() && w.end < r.start) {
                if r.ack + w2.ack <= r.from.max(w2.from) {
                    continue;
                }
                let older = |c: &&Event| {
                    c.acked() && c.end < w2.start && c.ack + w2.ack > c.from.max(w2.from)
                };
                let fresh = cands.iter().any(|c| !older(c));
                if !fresh {
                    out.push(format!(
                        "stale read: {key} read {answer:?} at {}-{} ({}/{}) after {:?} {:?} was acknowledged at {} ms{}",
                        r.start,
                        r.end,
                        r.ack,
                        r.from,
                        w2.op,
                        w2.value,
                        w2.end,
                        if initial && cands.is_empty() { " (no delete could explain it)" } else { "" }
                    ));
                    break;
                }
            }
        }
    }
    // (3) After the heal, the quiet period and the final reads (at full
    // quorum: read repair), every replica of every key holds the newest
    // version. Without crashes, hints alone must have brought the newest
    // version to every replica its write was sent to (`from` of them)
    // before the final reads.
    let ids: Vec<u64> = (0..sh.plan.nodes).map(|i| member_id(&url(i))).collect();
    let placement = Placement::new(ids);
    let level = |stores: &Stores, when: &str, all: bool, out: &mut Vec<String>| {
        for (key, events) in &by_key {
            let held: Vec<Option<Version>> = stores
                .iter()
                .map(|s| s.get(*key).map(|(v, _)| *v))
                .collect();
            let Some((newest, value)) = stores
                .iter()
                .filter_map(|s| s.get(*key))
                .max_by_key(|(v, _)| *v)
                .cloned()
            else {
                continue;
            };
            // The replicas the newest version's write went to (for a
            // tombstone, as few as any delete of the key went to).
            let from = if all {
                RF
            } else {
                events
                    .iter()
                    .filter(|e| e.op != Op::Get && e.value == value)
                    .map(|e| e.from)
                    .min()
                    .unwrap_or(RF)
            };
            for m in placement.replicas(key.as_bytes(), from) {
                if held[m] != Some(newest) {
                    out.push(format!(
                        "{when}: replica n{m} of {key} holds {:?}, the newest is {newest}",
                        held[m].map(|v| v.to_string())
                    ));
                }
            }
        }
    };
    level(&sh.at_end.borrow(), "at the end", true, &mut out);
    if !sh.plan.crashes() {
        level(
            &sh.before_reads.borrow(),
            "after the quiet period",
            false,
            &mut out,
        );
    }
    out
}
