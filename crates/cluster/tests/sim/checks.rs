//! The checks run on a finished simulation: the history judged by the
//! project's one checker (`strata-check`: no acknowledged write lost, no
//! stale read among operations whose quorums meet, no impossible read),
//! then every replica level.

use super::*;
use strata_check as checker;

/// The history as the checker reads it: the keys written once (`o…`) as
/// `set/…` keys, the keys every worker overwrites (`k…`) as `lin/…` keys,
/// every operation with its own `ack` of `from`, the full-quorum reads
/// after the heal and the quiet period as the final pass. An error or no
/// answer leaves a write `Unknown` (it may have reached replicas).
fn history(events: &[Event]) -> checker::History {
    let ms = Duration::from_millis;
    let ops = events.iter().map(|e| {
        let prefix = if e.key.starts_with('k') {
            checker::history::SHARED_PREFIX
        } else {
            checker::history::SET_PREFIX
        };
        let key = format!("{prefix}{}", e.key);
        let (a, b) = (ms(e.start), ms(e.end));
        let outcome = match e.outcome {
            Outcome::Ok(_) => checker::Outcome::Ok,
            _ => checker::Outcome::Unknown,
        };
        let op = match (e.op, &e.outcome) {
            (Op::Put, _) => {
                checker::Op::write(0, key, e.value.clone().unwrap_or_default(), a, b, outcome)
            }
            (Op::Delete, _) => checker::Op::delete(0, key, a, b, outcome),
            (Op::Get, Outcome::Ok(v)) => {
                checker::Op::read(0, key, v.as_deref().map(str::as_bytes), a, b, outcome)
            }
            (Op::Get, _) => checker::Op::read(0, key, None, a, b, outcome),
        }
        .with_quorum(e.ack as u32, e.from as u32);
        if e.op == Op::Get && e.ack == RF && e.start >= WORKLOAD_MS + QUIET_MS {
            op.final_pass()
        } else {
            op
        }
    });
    checker::History::merge([ops.collect::<Vec<_>>()])
}

pub(super) fn check(sh: &Shared) -> Vec<String> {
    let history = sh.history.borrow();
    let mut out = Vec::new();
    let report = checker::check(&self::history(&history), checker::Quorum::default());
    if !report.passed() {
        out.push(report.to_string());
    }
    let mut by_key: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for e in history.iter() {
        by_key.entry(&e.key).or_default().push(e);
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
