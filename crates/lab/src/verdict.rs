//! The sweep's verdict in plain words: which resource saturated first at
//! the breaking point, read from the server's own metrics sampled during
//! the first trial that failed (CPU, admission waiting and refusals,
//! in-service at its limit, engine stalls, the WAL's fsync, replica calls
//! failing, hints piling up), from the whole machine's CPU when the target
//! runs on it (how the cores were split between the nodes, the generator
//! and everything else) and from the generator's own schedule, and what to
//! try next. With several nodes it names the node and the resource that
//! showed first in the samples. Owns the reading of the evidence; must not
//! run load or format tables.

use crate::report::model::{ServerSample, Trial};
use crate::slo::fmt_num;

/// What the sweep learned, for the verdict.
pub struct Evidence<'a> {
    /// Highest offered rate that met the SLO, if any did.
    pub breaking_point: Option<f64>,
    /// The lowest offered rate that failed, with why.
    pub first_failure: Option<(&'a Trial, &'a [String])>,
    /// Cores of the machine the node runs on, when known (a local target).
    pub cores: Option<f64>,
    /// CPU cores the generator itself used in that trial.
    pub generator_cores: Option<f64>,
    /// The whole machine's busy cores in that trial, when the nodes run on
    /// it (what neither the nodes nor the generator used is someone
    /// else's).
    pub machine_cores: Option<f64>,
}

/// A node's resource that saturated during a trial: which, from when,
/// and what to try.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// Index of the node (as given).
    pub node: usize,
    /// Offset of the first sample that showed it, seconds.
    pub at: f64,
    /// Order among hits at the same time: the cause before its effects.
    pub rank: u8,
    pub what: String,
    pub next: String,
}

/// A node's name in a verdict: its place in the list and its URL.
fn node_name(i: usize, url: &str) -> String {
    format!("node-{} ({url})", i + 1)
}

/// What saturated on each node of a trial, the earliest first. A resource
/// counts when it shows in at least a third of the node's samples (events
/// such as stalls or replica failures: in any), from the first sample that
/// shows it. CPU of a node counts only when the nodes run on machines of
/// their own (`shared_machine` false): on a shared one the machine's CPU
/// is judged as a whole.
pub fn cluster_hits(t: &Trial, shared_machine: bool) -> Vec<Hit> {
    let mut hits = Vec::new();
    for (i, n) in t.per_node.iter().enumerate() {
        let name = node_name(i, &n.url);
        let xs = &n.server;
        if xs.is_empty() {
            continue;
        }
        let mut hint = None;
        let pend = |k: usize| xs[k].hints_pending.unwrap_or(0.0);
        if pend(xs.len() - 1) > pend(0).max(100.0) {
            let k = (1..xs.len()).find(|&k| pend(k) > pend(k - 1)).unwrap_or(0);
            hint = Some(Hit {
                node: i,
                at: xs[k].t_s,
                rank: 4,
                what: format!("hints piling up on {name} ({} pending at the end): a peer did not keep up with its replica writes", fmt_num(pend(xs.len() - 1))),
                next: "find the slow or absent peer with `strata cluster status`; hints drain at 5,000/s per peer once it answers".into(),
            });
        }
        let mut first =
            |rank: u8, min_share: f64, test: &dyn Fn(usize) -> bool, what: String, next: String| {
                let held: Vec<usize> = (0..xs.len()).filter(|&k| test(k)).collect();
                if let Some(&k) = held.first() {
                    if held.len() as f64 >= min_share * xs.len() as f64 {
                        hits.push(Hit {
                            node: i,
                            at: xs[k].t_s,
                            rank,
                            what,
                            next,
                        });
                    }
                }
            };
        let stalls: f64 = xs.iter().filter_map(|x| x.stalls).sum();
        first(
            0,
            0.0,
            &|k| xs[k].stalls.unwrap_or(0.0) > 0.0,
            format!("the storage engine of {name} stalled writes ({} stalls): flush and compaction fell behind", fmt_num(stalls)),
            format!("give {name} more memtable room, use interval durability, or a faster disk"),
        );
        let busy = xs.iter().filter_map(|x| x.fsync_busy).fold(0.0, f64::max);
        first(
            1,
            1.0 / 3.0,
            &|k| xs[k].fsync_busy.unwrap_or(0.0) >= 0.8,
            format!("the WAL fsync of {name} (busy up to {:.0}% of the time: one commit group at a time, so the disk's fsync sets the pace of writes)", busy * 100.0),
            "use interval durability, a disk with faster fsync, or more nodes to spread the writes".into(),
        );
        let limit = xs.iter().filter_map(|x| x.limit).fold(0.0, f64::max);
        first(
            2,
            1.0 / 3.0,
            &|k| at_limit(&xs[k]) || waited(&xs[k]),
            format!("admission on {name} as coordinator: all {} places in service taken, requests waiting or refused", fmt_num(limit)),
            format!("raise --max-in-service on {name}, try --admission adaptive, or spread the clients over more nodes"),
        );
        let failed: f64 = xs
            .iter()
            .map(|x| x.replica_errors.unwrap_or(0.0) + x.not_enough.unwrap_or(0.0))
            .sum();
        let slowest = xs
            .iter()
            .filter_map(|x| x.replica_mean_ms)
            .fold(0.0, f64::max);
        first(
            3,
            0.0,
            &|k| xs[k].replica_errors.unwrap_or(0.0) + xs[k].not_enough.unwrap_or(0.0) > 0.0,
            format!("a replica timing out: {} calls from {name} to its peers failed or were answered 504 (replica calls took up to {:.1} ms on average)", fmt_num(failed), slowest),
            "see which peer in `strata cluster status` and its own verdict; a slower replica is waited for only when ack needs it, so lower ack or raise --replica-timeout-ms".into(),
        );
        if !shared_machine {
            first(
                5,
                1.0 / 3.0,
                &|k| matches!((xs[k].cpu_cores, xs[k].cpus), (Some(c), Some(n)) if n > 0.0 && c >= 0.85 * n),
                format!("the CPU of {name}"),
                format!(
                    "more cores for {name}, or more nodes; profile it with /debug/pprof/profile"
                ),
            );
        }
        hits.extend(hint);
    }
    hits.sort_by(|a, b| a.at.total_cmp(&b.at).then(a.rank.cmp(&b.rank)));
    hits
}

/// How a shared machine's cores were split in a trial: the nodes (each,
/// when several), the generator, and everything else.
pub fn cpu_split(t: &Trial, e: &Evidence) -> Option<String> {
    let n = e.cores?;
    let nodes = t.server_cpu_cores?;
    let mut parts = Vec::new();
    if t.per_node.len() > 1 {
        let each: Vec<String> = t
            .per_node
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!(
                    "node-{} {}",
                    i + 1,
                    p.server_cpu_cores
                        .map(fmt_num)
                        .unwrap_or_else(|| "?".into())
                )
            })
            .collect();
        parts.push(format!("nodes {} ({})", fmt_num(nodes), each.join(", ")));
    } else {
        parts.push(format!("node {}", fmt_num(nodes)));
    }
    if let Some(g) = e.generator_cores {
        parts.push(format!("generator {}", fmt_num(g)));
    }
    if let Some(m) = e.machine_cores {
        let other = (m - nodes - e.generator_cores.unwrap_or(0.0)).max(0.0);
        parts.push(format!(
            "the kernel's network work and other processes {}",
            fmt_num(other)
        ));
        parts.push(format!("idle {}", fmt_num((n - m).max(0.0))));
    }
    Some(format!(
        "the {} cores went to: {}",
        fmt_num(n),
        parts.join(", ")
    ))
}

/// Figures read from a trial's server samples.
#[derive(Debug, Default, PartialEq)]
pub struct Saturation {
    pub samples: usize,
    pub cpu_cores: Option<f64>,
    /// Share of samples in which requests waited or were refused.
    pub queueing_share: f64,
    /// Share of samples with every place in service taken.
    pub at_limit_share: f64,
    pub refused: f64,
    pub stalls: f64,
    pub flushes: f64,
    pub compactions: f64,
    pub limit: Option<f64>,
    /// With several nodes: how many, and the URL of the busiest (the most
    /// samples at its limit or queueing) with its share of the requests.
    pub nodes: usize,
    pub busiest: Option<(String, f64)>,
}

/// The trial's saturation: of its one node, or of several (CPU and the
/// engine's counters summed over the nodes, the admission shares and
/// limit of the busiest node).
pub fn saturation(t: &Trial) -> Saturation {
    if t.per_node.len() <= 1 {
        return Saturation {
            nodes: 1,
            ..of_samples(&t.server, t.server_cpu_cores)
        };
    }
    let per: Vec<Saturation> = t
        .per_node
        .iter()
        .map(|n| of_samples(&n.server, n.server_cpu_cores))
        .collect();
    // The busiest: the most samples at its limit or queueing, then the
    // most requests.
    let busy = |s: &Saturation| s.at_limit_share.max(s.queueing_share);
    let (bi, b) = per
        .iter()
        .enumerate()
        .max_by(|(i, x), (j, y)| {
            busy(x)
                .total_cmp(&busy(y))
                .then(t.per_node[*i].requests.cmp(&t.per_node[*j].requests))
        })
        .expect("several nodes");
    let total = t.per_node.iter().map(|n| n.requests).sum::<u64>().max(1);
    let busiest = &t.per_node[bi];
    Saturation {
        samples: per.iter().map(|s| s.samples).max().unwrap_or(0),
        cpu_cores: t.server_cpu_cores,
        queueing_share: b.queueing_share,
        at_limit_share: b.at_limit_share,
        refused: per.iter().map(|s| s.refused).sum(),
        stalls: per.iter().map(|s| s.stalls).sum(),
        flushes: per.iter().map(|s| s.flushes).sum(),
        compactions: per.iter().map(|s| s.compactions).sum(),
        limit: b.limit,
        nodes: t.per_node.len(),
        busiest: Some((busiest.url.clone(), busiest.requests as f64 / total as f64)),
    }
}

/// Whether requests waited for admission, or were refused, in a sample.
fn waited(x: &ServerSample) -> bool {
    x.waiting.unwrap_or(0.0) > 0.0
        || x.admitted_after_wait.unwrap_or(0.0) > 0.0
        || x.refused.unwrap_or(0.0) > 0.0
}

/// Whether every place in service was taken in a sample.
fn at_limit(x: &ServerSample) -> bool {
    matches!((x.in_service, x.limit), (Some(i), Some(l)) if l > 0.0 && i >= l)
}

/// The saturation one node's samples show.
fn of_samples(server: &[ServerSample], cpu_cores: Option<f64>) -> Saturation {
    let n = server.len();
    let mut s = Saturation {
        samples: n,
        cpu_cores,
        ..Default::default()
    };
    if n == 0 {
        return s;
    }
    let mut queueing = 0;
    let mut at_limit = 0;
    for x in server {
        if waited(x) {
            queueing += 1;
        }
        if self::at_limit(x) {
            at_limit += 1;
        }
        s.refused += x.refused.unwrap_or(0.0);
        s.stalls += x.stalls.unwrap_or(0.0);
        s.flushes += x.flushes.unwrap_or(0.0);
        s.compactions += x.compactions.unwrap_or(0.0);
        s.limit = x.limit.or(s.limit);
    }
    s.queueing_share = queueing as f64 / n as f64;
    s.at_limit_share = at_limit as f64 / n as f64;
    s
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

/// The verdict: what failed, the evidence, the resource, what next.
pub fn verdict(e: &Evidence) -> String {
    let Some((t, why)) = e.first_failure else {
        return match e.breaking_point {
            Some(bp) => format!(
                "Every trial met the SLO, up to {} req/s: the breaking point is above the highest rate tried. Raise --max-rate or --max-trials.",
                rate(bp)
            ),
            None => "No trial ran.".into(),
        };
    };
    let offered = t.offered_rate.unwrap_or(t.achieved_rate);
    let s = saturation(t);
    let cores = e.cores;
    let cpu_words = match (s.cpu_cores, cores) {
        (Some(c), Some(n)) => format!("CPU {} of {} cores", fmt_num(c), fmt_num(n)),
        (Some(c), None) => format!("CPU {} cores", fmt_num(c)),
        _ => "CPU unknown (no /metrics)".into(),
    };
    let shared = match (e.generator_cores, cores) {
        (Some(g), Some(_)) => format!(
            " (the generator itself used {} cores of the same machine)",
            fmt_num(g)
        ),
        _ => String::new(),
    };
    let mut facts = Vec::new();
    let on = match &s.busiest {
        Some((url, share)) => {
            facts.push(format!(
                "{} nodes, the busiest {url} with {:.0}% of the requests",
                s.nodes,
                share * 100.0
            ));
            " on the busiest node"
        }
        None => "",
    };
    if s.samples > 0 {
        facts.push(format!(
            "requests waited or were refused for admission{on} in {:.0}% of samples",
            s.queueing_share * 100.0
        ));
        facts.push(format!(
            "all places in service taken{on} in {:.0}% of samples",
            s.at_limit_share * 100.0
        ));
        facts.push(format!("engine stalls {}", fmt_num(s.stalls)));
        facts.push(format!(
            "flushes {}, compactions {}",
            fmt_num(s.flushes),
            fmt_num(s.compactions)
        ));
        facts.push(cpu_words.clone() + &shared);
    }
    // Sends late because the target held every connection the generator
    // may open are the target's doing, not the generator's.
    let late_share = t.late_sends.saturating_sub(t.capped_sends) as f64 / t.requests.max(1) as f64;
    if t.capped_sends > 0 {
        facts.push(format!(
            "the target held all {} connections the generator may open ({} sends found none free)",
            t.connections_opened
                .map(|c| c.to_string())
                .unwrap_or_else(|| "the".into()),
            t.capped_sends
        ));
    }
    // Is the machine's CPU full? Measured as a whole when known (the nodes,
    // the generator and anything else on it), else the nodes' and the
    // generator's own.
    let cpu_full = match (e.machine_cores, s.cpu_cores, cores) {
        (Some(m), _, Some(n)) => m >= 0.85 * n,
        (None, Some(c), Some(n)) => c + e.generator_cores.unwrap_or(0.0) >= 0.85 * n,
        _ => false,
    };
    let at = match e.breaking_point {
        Some(bp) => format!("at {} req/s", rate(bp)),
        None => "below the lowest rate tried".into(),
    };
    let hits = if s.nodes > 1 {
        cluster_hits(t, cores.is_some())
    } else {
        Vec::new()
    };
    let split = cpu_split(t, e);
    let hit_words = |h: &Hit| (format!("{} saturated first {at}", h.what), h.next.clone());
    // CPU used on the machine by neither the nodes nor the generator.
    let others = match (e.machine_cores, s.cpu_cores, cores) {
        (Some(m), Some(c), Some(n)) => {
            Some(m - c - e.generator_cores.unwrap_or(0.0)).filter(|o| *o >= 0.2 * n)
        }
        _ => None,
    };
    let (resource, next) = if late_share > crate::slo::MAX_LATE && !cpu_full {
        match others {
            Some(o) => (
                format!("the load generator could not keep its schedule ({:.1}% of sends late) while the kernel and other processes on this machine used {} cores: the figure {at} is the machine's share left to the target, not the target's limit", late_share * 100.0, fmt_num(o)),
                "run again on a quiet machine, or the generator on another one".to_string(),
            ),
            None => (
                format!("the load generator could not keep its schedule ({:.1}% of sends late) while the machine had room: the figure {at} is a floor, not the target's limit", late_share * 100.0),
                "run the generator with more --threads or from another machine".to_string(),
            ),
        }
    } else if let Some(h) = hits.iter().find(|h| !cpu_full || h.rank <= 1) {
        // The earliest; on a machine whose CPU is full, only what the CPU
        // does not explain (the disk), since queues and timeouts follow
        // from a CPU that is short.
        hit_words(h)
    } else if s.stalls > 0.0 {
        (
            format!("the storage engine stalled writes ({} stalls): flush and compaction fell behind the write rate {at}", fmt_num(s.stalls)),
            "give the memtable more room, use interval durability, or a faster disk".to_string(),
        )
    } else if cpu_full {
        let busiest = t
            .per_node
            .iter()
            .enumerate()
            .filter(|_| s.nodes > 1)
            .max_by(|a, b| {
                a.1.server_cpu_cores
                    .unwrap_or(0.0)
                    .total_cmp(&b.1.server_cpu_cores.unwrap_or(0.0))
            })
            .map(|(i, n)| format!(", the busiest {}", node_name(i, &n.url)))
            .unwrap_or_default();
        (
            format!(
                "the machine's CPU {at}: {} CPU-bound{}{busiest}{}",
                if s.nodes > 1 { "the nodes are" } else { "the node is" },
                if e.generator_cores.is_some() { ", sharing the machine with the generator" } else { "" },
                split.as_ref().map(|x| format!("; {x}")).unwrap_or_default()
            ),
            "more cores or more nodes on machines of their own; run the generator on another machine to see the target alone; profile with /debug/pprof/profile".to_string(),
        )
    } else if s.at_limit_share >= 0.5 || s.queueing_share >= 0.5 {
        (
            format!(
                "the admission limit{}{} is the bottleneck {at}: requests queue for a place while the CPU has room, so the work each place does (a WAL fsync under sync durability) sets the pace",
                s.limit.map(|l| format!(" ({} in service)", fmt_num(l))).unwrap_or_default(),
                s.busiest.as_ref().map(|(u, _)| format!(" of the busiest node, {u},")).unwrap_or_default()
            ),
            "raise --max-in-service, try --admission adaptive, or interval durability".to_string(),
        )
    } else if s.samples == 0 {
        (
            format!("the target has no /metrics to read, so the saturated resource is unknown; the SLO broke {at}"),
            "point the sweep at a Strata node, or watch the server's CPU, disk and queues".to_string(),
        )
    } else {
        (
            format!("latency broke the SLO {at} with no saturated resource in the node's metrics"),
            "look outside the node: the disk (fsync latency), the network, or the client machine"
                .to_string(),
        )
    };
    let mut v = format!(
        "At {} req/s the SLO failed ({}).",
        rate(offered),
        why.join("; ")
    );
    if !facts.is_empty() {
        v += &format!(" Server: {}.", facts.join(", "));
    }
    v += &format!(" Verdict: {resource}. Next: {next}.");
    if let (Some(o), false) = (others, resource.contains("other processes")) {
        v += &format!(
            " Note: the kernel and other processes on this machine used {} cores during that trial; the figures are not the target's alone.",
            fmt_num(o)
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::{Percentiles, ServerSample};

    fn trial(samples: Vec<ServerSample>, cpu: Option<f64>, late: u64) -> Trial {
        Trial {
            offered_rate: Some(40_000.0),
            clients: None,
            started_s: 0.0,
            duration_s: 10.0,
            requests: 400_000,
            achieved_rate: 39_000.0,
            errors: 0,
            error_pct: 0.0,
            latency: Percentiles::default(),
            per_op: vec![],
            spectrum: vec![],
            timeline: vec![],
            server: samples,
            meets_slo: Some(false),
            late_sends: late,
            max_lag_ms: 0.0,
            dropped_sends: 0,
            unfinished: 0,
            connections_opened: None,
            capped_sends: 0,
            generator_cpu_cores: None,
            machine_cpu_cores: None,
            distinct_keys: None,
            server_cpu_cores: cpu,
            server_rss_bytes: None,
            per_node: vec![],
            slowest: None,
            generator_late_sends: 0,
            generator_run_queue_share: None,
        }
    }

    fn sample(waiting: f64, in_service: f64, stalls: f64) -> ServerSample {
        ServerSample {
            t_s: 1.0,
            cpu_cores: Some(1.0),
            waiting: Some(waiting),
            in_service: Some(in_service),
            limit: Some(64.0),
            refused: Some(0.0),
            admitted_after_wait: Some(0.0),
            stalls: Some(stalls),
            flushes: Some(0.0),
            compactions: Some(0.0),
            ..Default::default()
        }
    }

    fn judge(t: &Trial, gen: Option<f64>) -> String {
        let why = vec!["p99 12 ms > 10 ms".to_string()];
        verdict(&Evidence {
            breaking_point: Some(30_000.0),
            first_failure: Some((t, &why)),
            cores: Some(2.0),
            generator_cores: gen,
            machine_cores: None,
        })
    }

    #[test]
    fn names_cpu_when_the_machine_is_full() {
        let t = trial(vec![sample(3.0, 64.0, 0.0); 5], Some(1.2), 0);
        let v = judge(&t, Some(0.6));
        assert!(
            v.contains("the machine's CPU at 30,000 req/s: the node is CPU-bound"),
            "{v}"
        );
        assert!(
            v.contains("the 2 cores went to: node 1.2, generator 0.6."),
            "{v}"
        );
        assert!(
            v.starts_with("At 40,000 req/s the SLO failed (p99 12 ms > 10 ms)."),
            "{v}"
        );
    }

    #[test]
    fn names_admission_when_places_run_out_with_cpu_to_spare() {
        let t = trial(vec![sample(3.0, 64.0, 0.0); 5], Some(0.5), 0);
        let v = judge(&t, Some(0.3));
        assert!(
            v.contains("admission limit (64 in service) is the bottleneck"),
            "{v}"
        );
        assert!(v.contains("100% of samples"), "{v}");
    }

    #[test]
    fn stalls_come_before_cpu_and_the_generator_before_all() {
        let t = trial(vec![sample(0.0, 10.0, 2.0); 5], Some(1.9), 0);
        assert!(judge(&t, None).contains("stalled writes (10 stalls)"));
        let mut t = trial(vec![sample(0.0, 1.0, 0.0); 5], Some(0.3), 40_000);
        assert!(judge(&t, Some(0.9)).contains("generator could not keep its schedule"));
        // Late because the target held every connection: not the
        // generator's doing.
        t.capped_sends = 39_000;
        t.connections_opened = Some(10_000);
        let v = judge(&t, Some(0.9));
        assert!(!v.contains("generator could not keep"), "{v}");
        assert!(v.contains("the target held all 10000 connections"), "{v}");
    }

    #[test]
    fn several_nodes_sum_cpu_and_name_the_busiest() {
        use crate::report::model::NodeSummary;
        let node = |url: &str, requests: u64| NodeSummary {
            url: url.into(),
            connections: 32,
            requests,
            errors: 0,
            server: vec![sample(0.0, 10.0, 0.0); 5],
            server_cpu_cores: Some(0.3),
            server_rss_bytes: None,
        };
        let mut t = trial(vec![sample(0.0, 10.0, 0.0); 5], Some(0.6), 0);
        t.per_node = vec![node("http://a:1", 100_000), node("http://b:2", 300_000)];
        // Neither queues: the busiest is the one with more requests.
        assert_eq!(saturation(&t).busiest, Some(("http://b:2".into(), 0.75)));
        // The one at its limit is the busiest, even with fewer requests.
        t.per_node[0].server = vec![sample(3.0, 64.0, 1.0); 5];
        let s = saturation(&t);
        assert_eq!(s.nodes, 2);
        assert_eq!(s.at_limit_share, 1.0, "the busiest node's");
        assert_eq!(s.stalls, 5.0, "summed");
        assert_eq!(s.cpu_cores, Some(0.6), "summed over the nodes");
        assert_eq!(s.busiest, Some(("http://a:1".into(), 0.25)));
        let v = judge(&t, Some(0.3));
        assert!(
            v.contains("2 nodes, the busiest http://a:1 with 25% of the requests"),
            "{v}"
        );
        assert!(v.contains("stalled writes (5 stalls)"), "{v}");
        for y in &mut t.per_node[0].server {
            y.stalls = Some(0.0);
        }
        let v = judge(&t, Some(0.3));
        assert!(
            v.contains("Verdict: admission on node-1 (http://a:1) as coordinator: all 64 places in service taken"),
            "{v}"
        );
    }

    /// Two nodes on machines of their own (no cores known), each sample a
    /// second apart; `f` sets node `i`'s sample `k`.
    fn two_nodes(f: impl Fn(usize, usize, &mut ServerSample)) -> Trial {
        use crate::report::model::NodeSummary;
        let mut t = trial(vec![], Some(1.0), 0);
        t.per_node = (0..2)
            .map(|i| NodeSummary {
                url: format!("http://n{}:1", i + 1),
                connections: 32,
                requests: 100_000,
                errors: 0,
                server: (0..6)
                    .map(|k| {
                        let mut x = sample(0.0, 1.0, 0.0);
                        x.t_s = k as f64;
                        x.cpus = Some(4.0);
                        f(i, k, &mut x);
                        x
                    })
                    .collect(),
                server_cpu_cores: Some(0.5),
                server_rss_bytes: None,
            })
            .collect();
        t
    }

    fn judge_apart(t: &Trial) -> String {
        let why = vec!["p99 12 ms > 10 ms".to_string()];
        verdict(&Evidence {
            breaking_point: Some(30_000.0),
            first_failure: Some((t, &why)),
            cores: None,
            generator_cores: None,
            machine_cores: None,
        })
    }

    #[test]
    fn a_cluster_verdict_names_the_node_and_the_resource_that_saturated_first() {
        // Node 2's WAL fsync is busy from second 2; node 1's CPU from 3.
        let t = two_nodes(|i, k, x| {
            if i == 1 && k >= 2 {
                x.fsync_busy = Some(0.95);
            }
            if i == 0 && k >= 3 {
                x.cpu_cores = Some(3.9);
            }
        });
        let v = judge_apart(&t);
        assert!(
            v.contains("Verdict: the WAL fsync of node-2 (http://n2:1) (busy up to 95%"),
            "{v}"
        );
        // The CPU of node 1 first, then node 2's fsync.
        let t = two_nodes(|i, k, x| {
            if i == 1 && k >= 4 {
                x.fsync_busy = Some(0.95);
            }
            if i == 0 && k >= 1 {
                x.cpu_cores = Some(3.9);
            }
        });
        let hits = cluster_hits(&t, false);
        assert_eq!((hits[0].node, hits[0].rank), (0, 5), "{hits:?}");
        assert!(
            judge_apart(&t).contains("Verdict: the CPU of node-1 (http://n1:1) saturated first")
        );
        // On a shared machine a node's CPU is not judged alone.
        assert!(cluster_hits(&t, true).iter().all(|h| h.rank != 5));
        // Replicas timing out on node 1, hints piling up on node 2.
        let t = two_nodes(|i, k, x| {
            if i == 0 && k == 3 {
                x.replica_errors = Some(12.0);
            }
            if i == 1 {
                x.hints_pending = Some(1000.0 * k as f64);
            }
        });
        let hits = cluster_hits(&t, false);
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!(
            (hits[0].node, hits[0].rank),
            (1, 4),
            "hints grew from second 1"
        );
        assert!(hits[0].what.contains("hints piling up on node-2"));
        assert!(hits[1]
            .what
            .contains("a replica timing out: 12 calls from node-1"));
        // Nothing saturated: no hit.
        assert!(cluster_hits(&two_nodes(|_, _, _| {}), false).is_empty());
    }

    #[test]
    fn the_split_of_a_shared_machine_names_other_processes() {
        let mut t = trial(vec![sample(0.0, 1.0, 0.0); 5], Some(1.0), 0);
        t.server_cpu_cores = Some(1.0);
        let why = vec!["p99 12 ms > 10 ms".to_string()];
        let v = verdict(&Evidence {
            breaking_point: Some(30_000.0),
            first_failure: Some((&t, &why)),
            cores: Some(2.0),
            generator_cores: Some(0.3),
            machine_cores: Some(1.9),
        });
        assert!(
            v.contains("the 2 cores went to: node 1, generator 0.3, the kernel's network work and other processes 0.6, idle 0.1"),
            "{v}"
        );
        // Other processes took a share: said once (in the split here).
        assert_eq!(v.matches("other processes").count(), 1, "{v}");
        // Late sends while the machine is full are the machine's, not the
        // generator's.
        t.late_sends = 40_000;
        let v = verdict(&Evidence {
            breaking_point: Some(30_000.0),
            first_failure: Some((&t, &why)),
            cores: Some(2.0),
            generator_cores: Some(0.3),
            machine_cores: Some(1.9),
        });
        assert!(v.contains("the machine's CPU"), "{v}");
        // Late sends while other processes take the room: theirs.
        let v = verdict(&Evidence {
            breaking_point: Some(30_000.0),
            first_failure: Some((&t, &why)),
            cores: Some(2.0),
            generator_cores: Some(0.1),
            machine_cores: Some(1.5),
        });
        assert!(
            v.contains("while the kernel and other processes on this machine used 0.4 cores"),
            "{v}"
        );
    }

    #[test]
    fn without_metrics_it_says_it_cannot_tell() {
        let t = trial(vec![], None, 0);
        assert!(judge(&t, None).contains("no /metrics"));
    }
}
