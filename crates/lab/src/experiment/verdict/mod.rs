//! The sweep's verdict: why the target broke, from evidence. Each trial's
//! resources are read against stated thresholds (`readings`); a cause is
//! named only if its resource crossed its threshold, the one that crossed
//! first as the offered rate rose, confirmed by where the slowest 1 % of
//! the deciding trial's requests spent their time (`slowest`, from each
//! answer's `Server-Timing`). The generator is blamed only on its own
//! evidence (its timer late with a connection free, its threads waiting
//! for a CPU), never because sends were late while the target held every
//! connection. When nothing crossed, the verdict says it cannot tell and
//! shows what it saw. A trial that collapsed (most requests failing or
//! queued for seconds) is told apart from one that saturated, with what
//! set the collapse off. Owns the weighing of evidence and its words; must
//! not run load, scrape or format tables.

pub mod readings;

use std::collections::BTreeMap;

use crate::experiment::slo::fmt_num;
use crate::report::model::{ResourceReading, Slowest, Trial};
pub use readings::Machine;

/// What the sweep learned, for the verdict.
pub struct Evidence<'a> {
    /// Every trial, in the order run.
    pub trials: &'a [Trial],
    /// The trial that decided the breaking point (at the lowest failing
    /// rate), with why it failed.
    pub deciding: Option<(&'a Trial, &'a [String])>,
    /// Highest offered rate that met the SLO, if any did, and its range
    /// over repeats (lowest, highest, repeats).
    pub breaking_point: Option<f64>,
    pub range: Option<(f64, f64, u32)>,
    pub machine: Machine,
    /// Nodes whose metrics the lab could not read, and why (`node-N:
    /// GET /metrics answered 403 (…)`): none of their resources was seen.
    pub unseen: &'a [String],
}

/// The verdict: the cause, machine-readable, and in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// `fsync`, `stalls`, `pause`, `cpu`, `io`, `memory`, `admission`,
    /// `network`, `generator`; `unknown` when it cannot tell; `none` when
    /// every trial met the SLO.
    pub cause: String,
    /// The node it happened on, `node-N`.
    pub node: Option<String>,
    pub text: String,
}

/// Causes before their effects, when the evidence weighs the same.
const PRIORITY: [&str; 10] = [
    "pause",
    "memory",
    "stalls",
    "fsync",
    "io",
    "generator",
    "cpu",
    "machine",
    "network",
    "admission",
];

fn priority(r: &str) -> usize {
    PRIORITY
        .iter()
        .position(|p| *p == r)
        .unwrap_or(PRIORITY.len())
}

/// The cause as the report names it (the machine's CPU is `cpu`).
fn cause_name(resource: &str) -> &str {
    if resource == "machine" {
        "cpu"
    } else {
        resource
    }
}

/// A share of the slowest requests' time is this much before it confirms
/// a cause.
pub const CONFIRMS: f64 = 0.25;
/// With nothing over its threshold, a reading this near it (a share of
/// the threshold) that the slowest requests confirm is named.
pub const NEAR: f64 = 0.8;
/// Time in flight with no server stage (the network) must be this share
/// of the slowest requests' time to be named when no resource crossed.
pub const NETWORK: f64 = 0.4;

type Key = (String, Option<String>);

/// Which resources a part of the slowest requests' time speaks for, on
/// which node: the first is the one it goes to when none of them crossed.
/// `local`: the nodes run on the generator's machine, where time in
/// flight is the kernel's loopback and the generator's reading of the
/// answer (the machine's CPU), not a network.
fn speaks_for(what: &str, node: Option<&str>, local: bool) -> Vec<Key> {
    let on = |r: &str| (r.to_string(), node.map(str::to_string));
    let machine = ("machine".to_string(), None);
    match what {
        "fsync" | "applier" | "peer-fsync" | "peer-applier" => vec![on("fsync"), on("io")],
        "stall" | "peer-stall" => vec![on("stalls")],
        "admit" => vec![on("admission")],
        "queue" => vec![
            on("cpu"),
            on("pause"),
            on("admission"),
            on("memory"),
            machine,
        ],
        "read" => vec![on("cpu"), on("io"), on("memory"), machine],
        "apply" | "other" | "body" | "peer-apply" => vec![on("cpu"), on("memory"), machine],
        "replica" => vec![on("network"), on("pause"), on("cpu"), machine],
        "network" if local => vec![machine, ("generator".into(), None)],
        "network" => vec![on("network")],
        "generator" => vec![("generator".into(), None)],
        "unanswered" => vec![on("pause"), on("cpu"), machine],
        // Waiting for a connection: the target's slowness, whatever it is.
        _ => vec![],
    }
}

/// Each resource's share of the slowest requests' time: a part speaking
/// for several goes to those that crossed, equally (to the first of them
/// when none did).
/// Waiting for a free connection is the other requests' slowness,
/// whatever it was: the shares are of the rest of the time.
fn support(
    s: &Slowest,
    crossed: &BTreeMap<Key, (f64, ResourceReading)>,
    local: bool,
) -> BTreeMap<Key, f64> {
    let mut out: BTreeMap<Key, f64> = BTreeMap::new();
    let waiting: f64 = s
        .parts
        .iter()
        .filter(|p| p.what == "connection-wait")
        .map(|p| p.share)
        .sum();
    let rest = (1.0 - waiting).max(1e-9);
    for p in &s.parts {
        let share = p.share / rest;
        let keys = speaks_for(&p.what, p.node.as_deref(), local);
        let hit: Vec<&Key> = keys.iter().filter(|k| crossed.contains_key(*k)).collect();
        if hit.is_empty() {
            if let Some(k) = keys.first() {
                *out.entry(k.clone()).or_default() += share;
            }
        } else {
            for k in &hit {
                *out.entry((*k).clone()).or_default() += share / hit.len() as f64;
            }
        }
    }
    out
}

fn rate(r: f64) -> String {
    let r = r.round() as u64;
    let s = r.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The readings of a trial: as the sweep kept them, or read now.
fn of(t: &Trial, m: Machine) -> Vec<ResourceReading> {
    if t.resources.is_empty() {
        readings::readings(t, m)
    } else {
        t.resources.clone()
    }
}

/// What a cause is, in words, and what would raise the limit.
fn words(resource: &str, node: Option<&str>, quote: &str) -> (String, String) {
    let n = node.unwrap_or("the node");
    match resource {
        "fsync" => (
            format!("the WAL fsync of {n}: {quote}"),
            format!("the disk's fsync tail sets the pace of writes on {n}: a disk with faster fsync (the p99 fsync above), `--durability interval(10)` to take the fsync off the request's path, or more writers per commit group (group commit amortizes one fsync over them); more nodes spread the writes"),
        ),
        "stalls" => (
            format!("write stalls on {n}, flush and compaction falling behind: {quote}"),
            format!("give {n}'s memtable more room (`--memtable-bytes`), fewer or smaller writes per second, or a faster disk for flush and compaction"),
        ),
        "pause" => (
            format!("{n} stopping: {quote}"),
            format!("find what stops {n} (a stopped or throttled process, a VM's steal, swapping); clients that fail over to another replica or hedge reads ride through it; until then the limit is set by the pauses, not by load"),
        ),
        "cpu" => (
            format!("the CPU of {n}: {quote}"),
            format!("more cores for {n}, or other processes off its cores; profile it with /debug/pprof/profile; more nodes on machines of their own"),
        ),
        "machine" => (
            format!("the machine's CPU: {quote}"),
            "more cores, or the nodes and the generator on machines of their own; profile with /debug/pprof/profile".into(),
        ),
        "io" => (
            format!("the disk under {n}: {quote}"),
            format!("a faster disk for {n}, or less else on it; reads that miss the cache (`--block-cache-bytes`) and compactions share it with the WAL"),
        ),
        "memory" => (
            format!("memory on {n}'s machine: {quote}"),
            format!("more memory for {n}'s machine, a smaller block cache and memtables, or fewer processes beside it"),
        ),
        "admission" => (
            format!("admission on {n}: {quote}, while its CPU and disk had room"),
            format!("raise `--max-in-service` on {n}, or try `--admission adaptive`"),
        ),
        "generator" => (
            format!("the load generator, not the target: {quote}"),
            "run the generator with more --threads, on a quieter machine, or on another one; the figure is a floor, not the target's limit".into(),
        ),
        "network" => (
            format!("the network path to {n}: {quote}"),
            format!("{n} itself had room; shorten the path (the same rack or zone), or offer the load over more connections (each one holds its request for the whole round trip)"),
        ),
        _ => (quote.to_string(), String::new()),
    }
}

/// Whether the deciding trial collapsed rather than saturated: 5 % of its
/// requests failed, or the median waited for a tenth of a second, or a
/// tenth of the sends found every connection the generator may open held.
fn collapse(t: &Trial) -> Option<String> {
    let capped = t.capped_sends as f64 / t.requests.max(1) as f64;
    (t.error_pct >= 5.0 || t.latency.p50_ms >= 100.0 || capped >= 0.1).then(|| {
        format!(
            "collapsed rather than slowed down (p50 {} ms, {}% errors{}): a queue that did not drain",
            fmt_num(t.latency.p50_ms),
            fmt_num(t.error_pct),
            if t.capped_sends > 0 {
                format!(
                    ", every one of the generator's {} connections held by an unanswered request",
                    t.connections_opened
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "?".into())
                )
            } else {
                String::new()
            }
        )
    })
}

/// The top parts of the slowest requests' time, in words.
fn top_parts(s: &Slowest, n: usize) -> String {
    s.parts
        .iter()
        .take(n)
        .map(|p| format!("{:.0}% {}", p.share * 100.0, p.words))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The verdict, saying first when the servers could not be seen: then no
/// resource of theirs was read, and it rests on the answers' own timing.
pub fn verdict(e: &Evidence) -> Verdict {
    let mut v = judge(e);
    if !e.unseen.is_empty() && v.cause != "none" {
        v.text = format!(
            "The servers could not be seen: {}. No resource of theirs was read; what follows rests on the answers' Server-Timing alone. {}",
            e.unseen.join("; "),
            v.text.trim_start()
        );
    }
    v
}

fn judge(e: &Evidence) -> Verdict {
    let Some((t, why)) = e.deciding else {
        let text = match e.breaking_point {
            Some(bp) => format!(
                "Every trial met the SLO, up to {} req/s: the breaking point is above the highest rate tried. Raise --max-rate or --max-trials.",
                rate(bp)
            ),
            None => "No trial ran.".into(),
        };
        return Verdict {
            cause: "none".into(),
            node: None,
            text,
        };
    };
    let offered = t.offered_rate.unwrap_or(t.achieved_rate);
    // Each resource's first crossing as the rate rose, up to the deciding
    // trial: the knee.
    let mut by_rate: Vec<&Trial> = e
        .trials
        .iter()
        .filter(|x| x.offered_rate.unwrap_or(0.0) <= offered)
        .collect();
    by_rate.sort_by(|a, b| {
        a.offered_rate
            .unwrap_or(0.0)
            .total_cmp(&b.offered_rate.unwrap_or(0.0))
    });
    let mut crossed: BTreeMap<Key, (f64, ResourceReading)> = BTreeMap::new();
    for x in &by_rate {
        for r in of(x, e.machine).into_iter().filter(|r| r.crossed) {
            crossed
                .entry((r.resource.clone(), r.node.clone()))
                .or_insert((x.offered_rate.unwrap_or(0.0), r));
        }
    }
    // The deciding trial's own readings are quoted when there are some.
    for r in of(t, e.machine).into_iter().filter(|r| r.crossed) {
        if let Some(c) = crossed.get_mut(&(r.resource.clone(), r.node.clone())) {
            c.1 = r;
        }
    }
    // The slowest requests of a collapsed trial are its queue, whatever
    // set it off: the tail that tells is that of the lowest failing trial
    // that did not collapse, or else of the highest that passed.
    let by = |a: &&Trial, b: &&Trial| {
        a.offered_rate
            .unwrap_or(0.0)
            .total_cmp(&b.offered_rate.unwrap_or(0.0))
    };
    let tail = if collapse(t).is_some() {
        let kept = |x: &&Trial| x.slowest.is_some();
        e.trials
            .iter()
            .filter(kept)
            .filter(|x| x.meets_slo == Some(false) && collapse(x).is_none())
            .min_by(by)
            .or_else(|| {
                e.trials
                    .iter()
                    .filter(kept)
                    .filter(|x| x.meets_slo == Some(true))
                    .max_by(by)
            })
            .unwrap_or(t)
    } else {
        t
    };
    let empty = Slowest::default();
    let slow = tail.slowest.as_ref().unwrap_or(&empty);
    let sup = support(slow, &crossed, e.machine.cores.is_some());
    let share = |k: &Key| sup.get(k).copied().unwrap_or(0.0);
    // The best-supported crossed resource; then the first to cross.
    let mut ranked: Vec<(&Key, &(f64, ResourceReading))> = crossed.iter().collect();
    ranked.sort_by(|a, b| {
        let (sa, sb) = (share(a.0), share(b.0));
        let confirmed = |s: f64| s >= CONFIRMS;
        confirmed(sb)
            .cmp(&confirmed(sa))
            .then_with(|| {
                if confirmed(sa) {
                    sb.total_cmp(&sa)
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .then(a.1 .0.total_cmp(&b.1 .0))
            .then(priority(&a.0 .0).cmp(&priority(&b.0 .0)))
    });
    // Admission is a queue in front of the work: named only when the work
    // behind it (the node's disk, CPU, pauses) did not cross, or when the
    // limit itself kept that work from batching (commit groups as large as
    // the places in service allow: a WAL kept busy one write at a time).
    if let Some(pos) = ranked
        .first()
        .map(|(k, _)| k)
        .filter(|k| k.0 == "admission")
    {
        let node = pos.1.clone();
        let capped = node
            .as_deref()
            .and_then(|n| n.strip_prefix("node-")?.parse::<usize>().ok())
            .map(|i| readings::node_samples(t, i.saturating_sub(1)))
            .is_some_and(|xs| {
                xs.iter().any(|x| {
                    matches!((x.writes_per_fsync, x.limit), (Some(w), Some(l)) if l > 0.0 && w >= 0.8 * l)
                })
            });
        if let Some(i) = ranked.iter().position(|(k, _)| {
            k.1 == node
                && ["fsync", "stalls", "pause", "cpu", "io", "memory"].contains(&k.0.as_str())
                && !(capped && k.0 == "fsync")
        }) {
            let cause = ranked.remove(i);
            ranked.insert(0, cause);
        }
    }
    // On a machine the nodes share with the generator, a generator short
    // of CPU while the machine is full is the machine's doing when the
    // nodes used most of it (they took the generator's cores), and its
    // own when other processes did.
    if ranked.first().is_some_and(|(k, _)| k.0 == "generator") {
        let nodes_took_it = match (t.server_cpu_cores, t.machine_cpu_cores) {
            (Some(n), Some(m)) => n >= 0.5 * m,
            _ => false,
        };
        if let Some(i) = ranked.iter().position(|(k, _)| k.0 == "machine") {
            if nodes_took_it {
                let cause = ranked.remove(i);
                ranked.insert(0, cause);
            }
        }
    }
    // The machine full, and a node pinned to some of its cores that were
    // full too: those cores are the node's limit (a neighbour on them, or
    // the node itself), more precisely than the machine.
    if ranked.first().is_some_and(|(k, _)| k.0 == "machine") {
        if let Some(cores) = e.machine.cores {
            let pinned = |k: &Key| {
                k.1.as_deref()
                    .and_then(|n| n.strip_prefix("node-")?.parse::<usize>().ok())
                    .map(|i| readings::node_samples(t, i.saturating_sub(1)))
                    .and_then(|xs| xs.iter().filter_map(|x| x.cpus).reduce(f64::max))
                    .is_some_and(|c| c < cores)
            };
            if let Some(i) = ranked.iter().position(|(k, _)| k.0 == "cpu" && pinned(k)) {
                let cause = ranked.remove(i);
                ranked.insert(0, cause);
            }
        }
    }
    let network = sup
        .iter()
        .filter(|(k, _)| k.0 == "network")
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(k, s)| (k.clone(), *s));
    let mut text = format!(
        "At {} req/s the SLO failed ({}).",
        rate(offered),
        why.join("; ")
    );
    let collapsed = collapse(t);
    if let Some(c) = &collapsed {
        text += &format!(" It {c}; what set it off is below.");
    }
    let slow_words = if slow.requests > 0 {
        format!(
            "the slowest 1% {}({} requests, from {} ms, {} unanswered)",
            if std::ptr::eq(tail, t) {
                String::new()
            } else {
                format!(
                    "of the trial at {} req/s, before the collapse ",
                    rate(tail.offered_rate.unwrap_or(0.0))
                )
            },
            slow.requests,
            fmt_num(slow.from_ms),
            slow.unanswered
        )
    } else {
        "the slowest 1% (none kept)".into()
    };
    let chosen: Option<(Key, String, f64, Option<f64>)> = match ranked.first() {
        Some((k, (at, r))) => Some(((*k).clone(), r.quote.clone(), share(k), Some(*at))),
        None => match network {
            Some((k, s)) if s >= NETWORK => {
                let mean = slow
                    .parts
                    .iter()
                    .filter(|p| p.what == "network" && p.node == k.1)
                    .map(|p| p.mean_ms)
                    .sum::<f64>();
                let quote = format!(
                    "{:.0}% of {slow_words}'s time was in flight with no server stage to show for it ({} ms per request), while no resource of any node crossed its threshold",
                    s * 100.0,
                    fmt_num(mean)
                );
                Some((k, quote, s, None))
            }
            // Nothing crossed: the reading nearest its threshold, if the
            // slowest requests' time went to it, is named as such.
            _ => {
                let near = of(t, e.machine)
                    .into_iter()
                    .filter(|r| r.value >= NEAR * r.threshold)
                    .map(|r| {
                        let k = (r.resource.clone(), r.node.clone());
                        (share(&k), k, r)
                    })
                    .filter(|(s, _, _)| *s >= CONFIRMS)
                    .max_by(|a, b| a.0.total_cmp(&b.0));
                near.map(|(s, k, r)| {
                    let quote = format!(
                        "{} (no resource crossed its threshold; this one came nearest, at {:.0}% of it, and the slowest requests' time went to it)",
                        r.quote,
                        100.0 * r.value / r.threshold.max(1e-12)
                    );
                    (k, quote, s, None)
                })
            }
        },
    };
    let Some((key, quote, confirmed, at)) = chosen else {
        let mut seen: Vec<ResourceReading> = of(t, e.machine);
        seen.sort_by(|a, b| (b.value / b.threshold).total_cmp(&(a.value / a.threshold)));
        text += &format!(
            " Verdict: cannot tell: no resource crossed its threshold, and no stage dominates the slowest requests. Seen: {}; {slow_words}: {}.",
            seen.iter()
                .take(3)
                .map(|r| format!(
                    "{}{} at {:.0}% of its threshold ({})",
                    r.resource,
                    r.node.as_ref().map(|n| format!(" of {n}")).unwrap_or_default(),
                    100.0 * r.value / r.threshold.max(1e-12),
                    r.quote
                ))
                .collect::<Vec<_>>()
                .join("; "),
            if slow.parts.is_empty() {
                "no stages".to_string()
            } else {
                top_parts(slow, 3)
            }
        );
        text += " Next: look at the node's disk, network and neighbours; run the sweep again with longer trials.";
        return Verdict {
            cause: "unknown".into(),
            node: None,
            text,
        };
    };
    let (what, next) = words(&key.0, key.1.as_deref(), &quote);
    text += &format!(" Verdict: {what}.");
    if let Some(at) = at {
        if at < offered {
            text += &format!(" It crossed its threshold first at {} req/s.", rate(at));
        }
    }
    if confirmed >= CONFIRMS {
        text += &format!(
            " Confirmed by {slow_words}: {:.0}% of their time went to it ({}).",
            confirmed * 100.0,
            top_parts(slow, 2)
        );
    } else if !slow.parts.is_empty() {
        text += &format!(
            " Not confirmed by {slow_words} ({:.0}% of their time went to it): {}.",
            confirmed * 100.0,
            top_parts(slow, 3)
        );
    }
    let others: Vec<String> = ranked
        .iter()
        .skip(1)
        .take(3)
        .map(|(k, (_, r))| {
            format!(
                "{}{}",
                k.0,
                k.1.as_ref().map(|n| format!(" of {n}")).unwrap_or_default()
            ) + &format!(" ({})", r.quote)
        })
        .collect();
    if !others.is_empty() {
        text += &format!(" Also over threshold: {}.", others.join("; "));
    }
    text += &format!(" Next: {next}.");
    Verdict {
        cause: cause_name(&key.0).to_string(),
        node: key.1,
        text,
    }
}

#[cfg(test)]
mod tests;
