//! Where the slowest requests' time went, place by place. A place is a
//! kind of wait on one node (its WAL, its write stalls, admission, its
//! own work, a replica, the time in flight that no stage explains, the
//! generator's own lateness); each is resolved to the resource that made
//! it slow, from that node's readings, busy or not: a WAL seldom busy but
//! slow is still the WAL. A place that one cause owns is resolved in that
//! cause's file (`causes`); the two that several share are here: the
//! node's own work (`work`: a stop, memory, one thread, its cores, a disk
//! under its reads, a queue behind what drains it, the generator's
//! bursts) and time in flight (`flight`: whichever side was starved of
//! CPU, by both sides' own run-queue wait, a stop, or a network only
//! beyond loopback), with the comparisons of the two sides' starvation
//! they and the cause files use. Owns the places and those two
//! resolutions; must not rank causes against each other (`verdict`
//! does).

use std::collections::BTreeMap;

use super::readings::{self, Machine};
use crate::experiment::slo::fmt_num;
use crate::load::slowest::Part;
use crate::report::markdown::other_cores;
use crate::report::model::{resource, ResourceReading, Slowest, Trial};

/// A side whose threads waited for a CPU this share of their runnable
/// time is starved: each piece of its work took a quarter longer than its
/// CPU time from queueing for a core alone.
pub const STARVED: f64 = 0.2;
/// Threads that hand work to each other wait a little for a core at
/// every hand-over, on both sides alike and more as the rate rises; a
/// side is starved beyond that when its share is this many times the
/// other side's.
pub const CLEARLY: f64 = 1.5;
/// On loopback, time in flight is the machine's when its cores were at
/// least this share of the machine's threshold busy (0.8 × 0.85: two
/// cores 68 % busy): below it a core is free most of the time a packet or
/// a wake-up needs one.
pub const LOOPBACK_BUSY: f64 = 0.8;

/// A kind of wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// The write path on the applier: its queue of commit groups, the
    /// write itself, the WAL fsync.
    Wal,
    Stalls,
    Admission,
    /// The node's own work: its socket queue, reading, applying, the rest.
    Work,
    /// Waiting for a replica beyond what it reported of its own work.
    Replica,
    /// In flight with no server stage, or never answered.
    Flight,
    Generator,
}

/// A part's family; `None` for the wait for a free connection (the other
/// requests' slowness, whatever it was).
pub fn family(what: &str) -> Option<Family> {
    use strata_api::timing::Stage as S;
    Some(match Part::from_name(what)? {
        Part::Stage(
            S::Fsync | S::Applier | S::Apply | S::PeerFsync | S::PeerApplier | S::PeerApply,
        ) => Family::Wal,
        Part::Stage(S::Stall | S::PeerStall) => Family::Stalls,
        Part::Stage(S::Admit) => Family::Admission,
        Part::Stage(S::Queue | S::Read | S::Other | S::Body) => Family::Work,
        Part::Stage(S::Replica) => Family::Replica,
        Part::Network | Part::Unanswered | Part::Retried => Family::Flight,
        Part::Generator => Family::Generator,
        Part::ConnectionWait => return None,
    })
}

/// One place's share of the slowest requests' time.
#[derive(Clone, Debug)]
pub struct Place {
    pub family: Family,
    pub node: Option<String>,
    /// Of the time not spent waiting for a free connection.
    pub share: f64,
    /// The parts in it, in words, largest first.
    pub words: Vec<String>,
    /// The same parts: each one's share (of the time not spent waiting
    /// for a free connection, as `share`) and its words without it.
    pub parts: Vec<(f64, String)>,
    /// Whether an engine read is among its parts (a disk may be why).
    pub reads: bool,
    /// Per slow request, ms.
    pub mean_ms: f64,
    /// Of `share`, what the requests spent waiting for a WAL fsync itself
    /// (`fsync`, `peer-fsync`), not queued for the applier.
    pub device: f64,
}

/// The places of `s`, largest first.
pub fn places(s: &Slowest) -> Vec<Place> {
    let waiting: f64 = s
        .parts
        .iter()
        .filter(|p| family(&p.what).is_none())
        .map(|p| p.share)
        .sum();
    let rest = (1.0 - waiting).max(1e-9);
    let mut by: BTreeMap<(Family, Option<String>), Place> = BTreeMap::new();
    for p in &s.parts {
        let Some(f) = family(&p.what) else { continue };
        let node = if f == Family::Generator {
            None
        } else {
            p.node.clone()
        };
        let e = by.entry((f, node.clone())).or_insert(Place {
            family: f,
            node,
            share: 0.0,
            words: Vec::new(),
            parts: Vec::new(),
            reads: false,
            mean_ms: 0.0,
            device: 0.0,
        });
        e.share += p.share / rest;
        let part = Part::from_name(&p.what);
        if matches!(
            part,
            Some(Part::Stage(
                strata_api::timing::Stage::Fsync | strata_api::timing::Stage::PeerFsync
            ))
        ) {
            e.device += p.share / rest;
        }
        e.mean_ms += p.mean_ms;
        e.words
            .push(format!("{:.0}% {}", 100.0 * p.share / rest, p.words));
        e.parts.push((p.share / rest, p.words.clone()));
        e.reads |= part == Some(Part::Stage(strata_api::timing::Stage::Read));
    }
    let mut out: Vec<Place> = by.into_values().collect();
    out.sort_by(|a, b| b.share.total_cmp(&a.share));
    out
}

/// What made a place slow.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// A reading's resource: `fsync`, `cpu`, `thread`, `pause`, ...
    pub resource: String,
    pub node: Option<String>,
    /// Why, in words, with the figures.
    pub why: String,
    /// Whether a reading crossed its threshold (or a side was starved):
    /// evidence beside the slowest requests' own time.
    pub crossed: bool,
}

/// What a place is resolved with.
pub struct Context<'a> {
    pub trial: &'a Trial,
    pub readings: &'a [ResourceReading],
    pub machine: Machine,
}

impl Context<'_> {
    pub fn get(&self, resource: &str, node: Option<&str>) -> Option<&ResourceReading> {
        self.readings
            .iter()
            .find(|r| r.resource == resource && r.node.as_deref() == node)
    }

    pub fn crossed(&self, resource: &str, node: Option<&str>) -> Option<&ResourceReading> {
        self.get(resource, node).filter(|r| r.crossed)
    }

    pub fn local(&self) -> bool {
        self.machine.cores.is_some()
    }

    /// Whether `node` may run on every core of the machine it shares with
    /// the generator (then a full machine is the machine's, not its own).
    fn unpinned(&self, node: &str) -> bool {
        let (Some(cores), Some(i)) = (self.machine.cores, index(node)) else {
            return false;
        };
        readings::node_samples(self.trial, i)
            .iter()
            .filter_map(|x| x.cpus)
            .fold(0.0, f64::max)
            >= cores
    }

    pub fn cause(&self, r: &ResourceReading, why: String) -> Cause {
        Cause {
            resource: r.resource.clone(),
            node: r.node.clone(),
            why,
            crossed: r.crossed,
        }
    }
}

/// `node-N`'s index.
pub fn index(node: &str) -> Option<usize> {
    node.strip_prefix("node-")?
        .parse::<usize>()
        .ok()?
        .checked_sub(1)
}

/// The machine, full, when the nodes took the generator's cores
/// (`starved_by_nodes`: one test of that, not two): then a generator
/// short of CPU was short of what the nodes took.
pub fn shared_machine<'a>(c: &'a Context) -> Option<&'a ResourceReading> {
    c.crossed(resource::MACHINE, None)
        .filter(|_| starved_by_nodes(c))
}

/// Whether the generator may run on every core of the machine.
fn generator_unpinned(c: &Context) -> bool {
    matches!((c.machine.cores, c.machine.generator_cpus), (Some(m), Some(g)) if g >= m)
}

/// Whether a starved generator was starved by the nodes: it shares
/// their cores, and they used more of the machine than anything beside
/// them and the generator did.
pub fn starved_by_nodes(c: &Context) -> bool {
    let t = c.trial;
    let (Some(nodes), Some(others)) = (t.server_cpu_cores, other_cores(t)) else {
        return false;
    };
    generator_unpinned(c) && nodes > 0.0 && nodes >= others
}

/// Whether side `a` was starved of CPU time beside side `b`, enough to
/// hold a slow request `ms`: its threads waited for a core `STARVED` of
/// their runnable time and `CLEARLY` more than the other side's, and
/// together at least `ms` in a second (a side can hold a request only
/// while one of its threads waits: one whose threads waited 4 ms in a
/// second cannot explain 200 ms, whatever its share).
pub fn starved(a: &readings::Starvation, b: &readings::Starvation, ms: f64) -> bool {
    a.share >= STARVED && a.share >= CLEARLY * b.share && a.waiting.is_none_or(|w| 1000.0 * w >= ms)
}

/// Node `n` starved of CPU time beside the generator, enough to hold a
/// slow request `ms`: the comparison in words.
fn node_starved(n: &str, ms: f64, c: &Context) -> Option<String> {
    let ns = index(n).and_then(|i| readings::node_starvation(c.trial, i))?;
    let gs = readings::generator_starvation(c.trial).unwrap_or_default();
    starved(&ns, &gs, ms).then(|| {
        format!(
            "{n}'s threads waited for a CPU {:.0}% of the time they were ready to run, the generator's {:.0}%: short of CPU time on the cores it may use, though they were not all busy (something else took them in turns)",
            ns.share * 100.0,
            gs.share * 100.0
        )
    })
}

pub fn cpu_crossed(n: &str, c: &Context) -> bool {
    c.crossed(resource::CPU, Some(n)).is_some() || c.crossed(resource::THREAD, Some(n)).is_some()
}

/// The node's own work: stopped, short of memory, short of cores (the
/// machine's, when it shares all of them with the generator; its own),
/// one thread, a disk under its reads; else a queue behind what drains
/// it (its WAL, its stalls, its admission limit); else, the generator
/// starved beside it (`bursts`); else its CPU, not full.
pub fn work(n: &str, reads: bool, ms: Option<f64>, c: &Context) -> Option<Cause> {
    for r in [resource::PAUSE, resource::MEMORY] {
        if let Some(r) = c.crossed(r, Some(n)) {
            return Some(c.cause(r, r.quote.clone()));
        }
    }
    let own = c.get(resource::CPU, Some(n));
    // One thread busy on a CPU (running, not waiting for one) while the
    // process had cores to spare: more cores would not have helped.
    if let Some(r) = c.crossed(resource::THREAD, Some(n)) {
        let running = index(n)
            .and_then(|i| c.trial.per_node.get(i))
            .and_then(|x| x.threads.first())
            .is_some_and(|t| t.waiting < STARVED * (t.cpu + t.waiting));
        if running {
            return Some(c.cause(r, r.quote.clone()));
        }
    }
    if let Some(m) = c.crossed(resource::MACHINE, None).filter(|_| c.unpinned(n)) {
        let why = match own {
            Some(r) => format!("{}; {n}: {}", m.quote, r.quote),
            None => m.quote.clone(),
        };
        return Some(c.cause(m, why));
    }
    if let Some(r) = c.crossed(resource::CPU, Some(n)) {
        return Some(c.cause(r, r.quote.clone()));
    }
    if let Some(r) = c.crossed(resource::THREAD, Some(n)) {
        return Some(c.cause(r, r.quote.clone()));
    }
    // Its threads starved of CPU time while its cores were not all busy
    // (a neighbour taking them in turns): its CPU, before a queue behind
    // what drains it, since the queue drained at the pace it got a core.
    if let Some(why) = ms.and_then(|ms| node_starved(n, ms, c)) {
        let r = cpu_of(n, c)?;
        return Some(Cause {
            crossed: true,
            ..c.cause(r, format!("{}; {why}", r.quote))
        });
    }
    if reads {
        if let Some(r) = c.crossed(resource::IO, Some(n)) {
            return Some(c.cause(r, r.quote.clone()));
        }
    }
    for behind in [resource::FSYNC, resource::STALLS, resource::ADMISSION] {
        if let Some(r) = c.crossed(behind, Some(n)) {
            return Some(c.cause(
                r,
                format!(
                    "{} (requests queued in {n} behind it, its CPU with room)",
                    r.quote
                ),
            ));
        }
    }
    if let Some(cause) = ms.and_then(|ms| bursts(n, ms, c)) {
        return Some(cause);
    }
    let r = cpu_of(n, c)?;
    Some(c.cause(r, r.quote.clone()))
}

/// A queue at node `n` that nothing on the node explains (its CPU with
/// room, its threads not starved, nothing it waited behind crossed): a
/// server with room queues only arrivals that come together, and an
/// open-loop generator sends together when it was starved itself (its
/// late sends go out at once when it runs again). The generator's, when
/// it was starved beside the node enough to hold `ms`, and not by the
/// nodes (then their work is why).
fn bursts(n: &str, ms: f64, c: &Context) -> Option<Cause> {
    let ns = index(n)
        .and_then(|i| readings::node_starvation(c.trial, i))
        .unwrap_or_default();
    let gs = readings::generator_starvation(c.trial)?;
    if !starved(&gs, &ns, ms) || starved_by_nodes(c) {
        return None;
    }
    let why = format!(
        "requests queued at {n} with its CPU at room, as arrivals that came together: the generator's threads waited for a CPU {:.0}% of the time they were ready to run, {n}'s {:.0}%, and an open-loop generator that gets a core late sends what it owes at once",
        gs.share * 100.0,
        ns.share * 100.0
    );
    let g = c.get(resource::GENERATOR, None)?;
    Some(Cause {
        crossed: true,
        ..c.cause(g, format!("{why}: {}", g.quote))
    })
}

/// `n`'s CPU: the machine's when it may run on every core of the machine
/// it shares with the generator (one resource, named once, so that the
/// places it holds add up), else its own cores'.
fn cpu_of<'a>(n: &str, c: &'a Context) -> Option<&'a ResourceReading> {
    c.unpinned(n)
        .then(|| c.get(resource::MACHINE, None))
        .flatten()
        .or_else(|| c.get(resource::CPU, Some(n)))
}

/// Time in flight with no server stage: the side starved at the time,
/// a stop, one busy thread, or beyond loopback the path. A side was
/// starved when its threads waited for a core `STARVED` of their runnable
/// time and `CLEARLY` more than the other side's, and waited in all at
/// least as long each second as a slow request spent in flight. (Each wake-up's own
/// wait is quoted, not judged: the scheduler runs a woken thread soon,
/// so a starved thread gets less of a core, not longer waits per wake.)
pub fn flight(n: &str, flight_ms: f64, c: &Context) -> Option<Cause> {
    if let Some(r) = c.crossed(resource::PAUSE, Some(n)) {
        return Some(c.cause(r, r.quote.clone()));
    }
    let t = c.trial;
    let ns = index(n)
        .and_then(|i| readings::node_starvation(t, i))
        .unwrap_or_default();
    let gs = readings::generator_starvation(t).unwrap_or_default();
    let starved = |a: &readings::Starvation, b: &readings::Starvation| starved(a, b, flight_ms);
    let wait = |s: &readings::Starvation| {
        s.wait_ms
            .map(|w| format!(", {} ms a wake-up", fmt_num(w)))
            .unwrap_or_default()
    };
    let compare = format!(
        "{n}'s threads waited for a CPU {:.0}% of the time they were ready to run{}, the generator's {:.0}%{} ({} ms in flight per slow request)",
        ns.share * 100.0,
        wait(&ns),
        gs.share * 100.0,
        wait(&gs),
        fmt_num(flight_ms)
    );
    let (ns_starved, gs_starved) = (starved(&ns, &gs), starved(&gs, &ns));
    if ns_starved || gs_starved {
        if ns_starved {
            let mut cause = work(n, false, None, c)?;
            if cause.resource == resource::CPU
                || cause.resource == resource::MACHINE
                || cause.resource == resource::THREAD
            {
                cause.why = format!("{compare}, so requests sat unread: {}", cause.why);
                cause.crossed = true;
                return Some(cause);
            }
            return Some(cause);
        }
        // Who starved it: the nodes, when it shares their cores and
        // they held more of them than anything else beside it; then the
        // node's work is why (one thread flat out, its cores, the machine).
        if starved_by_nodes(c) {
            if let Some(mut cause) = work(n, false, None, c).filter(|w| {
                [resource::CPU, resource::MACHINE, resource::THREAD].contains(&w.resource.as_str())
            }) {
                cause.why = format!(
                    "{compare}: the generator was starved by the nodes, which share its cores and held more of them than anything else: {}",
                    cause.why
                );
                cause.crossed = true;
                return Some(cause);
            }
        }
        let g = c.get(resource::GENERATOR, None)?;
        if let Some(m) = shared_machine(c) {
            return Some(c.cause(
                m,
                format!(
                    "{compare}, and it shares the machine's cores with the nodes: {}",
                    m.quote
                ),
            ));
        }
        return Some(Cause {
            crossed: true,
            ..c.cause(g, format!("{compare}, so answers sat unread: {}", g.quote))
        });
    }
    // The node's own cores full: it was slow to read what came.
    let full = c.crossed(resource::MACHINE, None).is_some() && c.unpinned(n);
    if full || c.crossed(resource::CPU, Some(n)).is_some() {
        let mut cause = work(n, false, None, c)?;
        cause.why = format!("{}; {compare}", cause.why);
        return Some(cause);
    }
    for who in [None, Some(n)] {
        if let Some(r) = c.crossed(resource::THREAD, who) {
            return Some(c.cause(r, format!("{}; {compare}", r.quote)));
        }
    }
    // Neither side starved beyond the other, nor stopped: on loopback the
    // time in flight is CPU work (the kernel's network stack, both sides'
    // reading), a tail cause once the machine's cores are mostly busy;
    // beyond loopback, the path. Either is named on its share alone; on a
    // machine with room, nothing seen explains it.
    if c.local() {
        let m = c
            .get(resource::MACHINE, None)
            .filter(|m| m.value >= LOOPBACK_BUSY * m.threshold)?;
        return Some(c.cause(
            m,
            format!(
                "{}; on loopback the time in flight is the machine's CPU work, and {compare}",
                m.quote
            ),
        ));
    }
    Some(Cause {
        resource: resource::NETWORK.into(),
        node: Some(n.into()),
        why: format!(
            "the requests were in flight with no server stage to show for it, while {compare} (neither starved) and {n} did not stop: the path to it",
        ),
        crossed: false,
    })
}

/// A share in words.
pub fn pct(x: f64) -> String {
    format!("{}%", fmt_num((x.max(0.0) * 100.0).round() + 0.0))
}
