//! A quick way to a violation, from Gibbons and Korach's register
//! algorithm: with unique values, a value's write and the reads that
//! returned it form a cluster that must sit together in any order. A
//! cluster whose earliest end comes before its latest call is a *forward
//! zone*: its value must be the register's from that end to that call. Two
//! forward zones that overlap, or a cluster that lies wholly inside a
//! forward zone of another value, cannot both be ordered. Deletes and
//! not-found reads are left out (leaving them out keeps a linearizable
//! history linearizable, so a conflict among the rest is a real one).
//!
//! The zones only propose pairs of clusters; the search decides on the
//! pair's operations alone (`witness`), and a pair holds every write of its
//! values and every read of them (what is left out could be removed one by
//! one, each removal keeping a linearizable history linearizable), so an
//! edge case of the zones can cost time but never a wrong answer. Where a
//! value is written twice nothing is proposed. Owns the proposal; must not
//! decide.

use std::collections::HashMap;

use super::prepare::{Action, Prepared};

/// Pairs proposed at most.
const MAX_PAIRS: usize = 32;

/// Pairs of value clusters (as lists of indices into `p.ops`) that look
/// impossible to order, most likely first; a single cluster whose read
/// ended before its write began comes alone.
pub fn suspects(p: &Prepared) -> Vec<Vec<usize>> {
    let mut clusters: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut writes: HashMap<u32, usize> = HashMap::new();
    for (i, o) in p.ops.iter().enumerate() {
        match o.action {
            Action::Write(v) => {
                if o.optional || writes.insert(v, i).is_some() {
                    // A value written twice (an imported history's may
                    // be): a read does not name its write, and a set
                    // holding one of the two would not be the history's
                    // own (its verdict could differ). No proposals.
                    return Vec::new();
                }
                clusters.entry(v).or_default().push(i);
            }
            Action::Read(Some(v)) => clusters.entry(v).or_default().push(i),
            _ => {}
        }
    }
    let mut out = Vec::new();
    // (low, high, value, forward)
    let mut zones: Vec<(u64, u64, u32, bool)> = Vec::new();
    for (&v, ops) in &clusters {
        let Some(&w) = writes.get(&v) else { continue };
        let call_w = p.ops[w].call;
        if ops.iter().any(|&r| p.ops[r].ret < call_w) {
            let r = *ops.iter().find(|&&r| p.ops[r].ret < call_w).unwrap();
            out.push(vec![w, r]);
        }
        let f = ops.iter().map(|&i| p.ops[i].ret).min().unwrap();
        let s = ops.iter().map(|&i| p.ops[i].call).max().unwrap();
        if f < s {
            zones.push((f, s, v, true));
        } else {
            zones.push((s, f, v, false));
        }
    }
    let mut forward: Vec<(u64, u64, u32)> = zones
        .iter()
        .filter(|z| z.3)
        .map(|z| (z.0, z.1, z.2))
        .collect();
    forward.sort_unstable();
    // Forward zones that overlap: each against the one reaching furthest
    // before it.
    let mut reach: Option<(u64, u32)> = None;
    for &(lo, hi, v) in &forward {
        if let Some((h, u)) = reach {
            if lo <= h && out.len() < MAX_PAIRS {
                out.push(pair(&clusters, u, v));
            }
        }
        if reach.is_none_or(|(h, _)| hi > h) {
            reach = Some((hi, v));
        }
    }
    // A cluster inside another's forward zone.
    for &(lo, hi, v, fwd) in &zones {
        if out.len() >= MAX_PAIRS {
            break;
        }
        if fwd {
            continue;
        }
        let at = forward.partition_point(|z| z.0 <= lo);
        for z in forward[..at].iter().rev().take(4) {
            if z.2 != v && lo >= z.0 && hi <= z.1 {
                out.push(pair(&clusters, z.2, v));
                break;
            }
        }
    }
    out
}

fn pair(clusters: &HashMap<u32, Vec<usize>>, a: u32, b: u32) -> Vec<usize> {
    let mut v = clusters[&a].clone();
    v.extend(&clusters[&b]);
    v
}
