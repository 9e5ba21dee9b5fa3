//! Every cause the verdict can name, one file each: its reading (the
//! figure, its threshold and the mechanism that sets it), how the places
//! of the slowest requests' time resolve to it, and its words. `CAUSES`
//! is their table; `readings` takes every reading of a trial in the
//! table's order, `resolve` hands each place to the cause file that owns
//! it (the node's own work and time in flight, shared by several causes,
//! are `places`'), and `words` says a cause. The golden cases from the
//! corpus sit beside them (`<cause>.golden`: every recorded sweep that
//! put that cause there, judged; `crates/lab/tests/golden.rs`).
//!
//! - `admission`: a node's admission limit full.
//! - `cpu`: the cores a node may run on, full, or its CPU quota.
//! - `fsync`: a node's WAL fsync, busy or slow.
//! - `generator`: the load generator late.
//! - `io`: the disk under a node (I/O pressure).
//! - `lock`: a lock the writes wait for, held by another thread.
//! - `machine`: the whole machine's cores (named `cpu`).
//! - `memory`: memory on a node's machine (memory pressure).
//! - `network`: the path to a node.
//! - `pause`: a node stopping.
//! - `stalls`: a node's write stalls.
//! - `thread`: one thread busy while its process had cores to spare.
//!
//! Owns the causes' table and the dispatch to their files; must not weigh
//! one cause against another (`verdict` does).

pub mod admission;
pub mod cpu;
pub mod fsync;
pub mod generator;
pub mod io;
pub mod lock;
pub mod machine;
pub mod memory;
pub mod network;
pub mod pause;
pub mod stalls;
pub mod thread;

use super::places::{self, Cause, Context, Family, Place};
use super::readings::{max, mean, node_count, node_samples};
use crate::report::model::{resource, Machine, ResourceReading, ServerSample, Trial};

/// One cause: its resource as `report.json` spells it, and the places of
/// the slowest requests' time that may resolve to it (its file says on
/// what condition).
pub struct Kind {
    pub resource: &'static str,
    pub places: &'static [Family],
}

/// The causes, in the order each node's readings are taken.
pub const CAUSES: [Kind; 12] = [
    Kind {
        resource: resource::FSYNC,
        places: &[Family::Wal, Family::Work],
    },
    Kind {
        resource: resource::STALLS,
        places: &[Family::Stalls, Family::Wal, Family::Work, Family::Admission],
    },
    Kind {
        resource: resource::CPU,
        places: &[Family::Work, Family::Flight, Family::Wal, Family::Admission],
    },
    Kind {
        resource: resource::IO,
        places: &[Family::Work, Family::Wal],
    },
    Kind {
        resource: resource::MEMORY,
        places: &[Family::Work, Family::Wal, Family::Admission],
    },
    Kind {
        resource: resource::PAUSE,
        places: &[Family::Wal, Family::Work, Family::Admission, Family::Flight],
    },
    Kind {
        resource: resource::ADMISSION,
        places: &[Family::Admission, Family::Work],
    },
    Kind {
        resource: resource::GENERATOR,
        places: &[Family::Generator, Family::Flight, Family::Work],
    },
    Kind {
        resource: resource::THREAD,
        places: &[Family::Wal, Family::Work, Family::Flight, Family::Generator],
    },
    Kind {
        resource: resource::MACHINE,
        places: &[Family::Work, Family::Flight, Family::Generator],
    },
    Kind {
        resource: resource::NETWORK,
        places: &[Family::Replica, Family::Flight],
    },
    Kind {
        resource: resource::LOCK,
        places: &[Family::Wal],
    },
];

/// Every reading of a trial: each node's resources (fsync, stalls, cpu,
/// io, memory, pause, admission, lock), then the generator's, the threads' and
/// the machine's.
pub fn readings(t: &Trial, m: Machine) -> Vec<ResourceReading> {
    let mut out = Vec::new();
    let mut pauses = Vec::new();
    for i in 0..node_count(t) {
        let applier = t.per_node.get(i).and_then(|n| {
            n.threads
                .iter()
                .find(|x| x.name == strata_api::threads::names::APPLY)
                .map(|x| x.cpu)
        });
        let (rs, pause) = node_readings(node_samples(t, i), i, m, applier);
        let base = out.len();
        out.extend(rs);
        pauses.extend(pause.map(|p| pause::Pause {
            reading: base + p.reading,
            ..p
        }));
    }
    pause::weigh(&pauses, &mut out);
    out.push(generator::reading(t));
    if let Some(r) = thread::reading(
        &t.generator_threads,
        None,
        t.generator_cpu_cores,
        m.generator_cpus,
    ) {
        out.push(r);
    }
    for (i, n) in t.per_node.iter().enumerate() {
        let xs = node_samples(t, i);
        let used = mean(xs.iter().filter_map(|x| x.cpu_cores));
        let cpus = max(xs.iter().filter_map(|x| x.cpus));
        if let Some(r) = thread::reading(&n.threads, Some(format!("node-{}", i + 1)), used, cpus) {
            out.push(r);
        }
    }
    out.extend(machine::reading(t, m));
    out
}

/// One node's readings from its samples, and its pause reading's figures
/// (its place counted in this node's readings).
fn node_readings(
    xs: &[ServerSample],
    i: usize,
    m: Machine,
    applier: Option<f64>,
) -> (Vec<ResourceReading>, Option<pause::Pause>) {
    let mut out = Vec::new();
    if xs.is_empty() {
        return (out, None);
    }
    let name = Some(format!("node-{}", i + 1));
    out.extend(fsync::reading(xs, &name, m));
    out.push(stalls::reading(xs, &name));
    let cpu = cpu::reading(xs, &name, m);
    let cpu_bound = cpu.crossed;
    out.push(cpu);
    out.extend(io::reading(xs, &name));
    out.extend(memory::reading(xs, &name));
    let (r, p) = pause::reading(xs, &name, i, out.len(), cpu_bound);
    out.push(r);
    out.push(admission::reading(xs, &name));
    out.extend(lock::reading(xs, &name, applier));
    (out, Some(p))
}

/// Why a place was slow, by the file that owns it; `None` when nothing
/// seen explains it.
pub fn resolve(p: &Place, c: &Context) -> Option<Cause> {
    match p.family {
        Family::Generator => generator::resolve(p, c),
        Family::Wal => fsync::resolve(p, c),
        Family::Stalls => stalls::resolve(p, c),
        Family::Admission => admission::resolve(p, c),
        Family::Work => places::work(p.node.as_deref()?, p.reads, Some(p.mean_ms), c),
        Family::Replica => network::resolve(p, c),
        Family::Flight => places::flight(p.node.as_deref()?, p.mean_ms, c),
    }
}

/// What a cause is, and what would raise the limit, in its file's words.
pub fn words(res: &str, node: Option<&str>, quote: &str) -> (String, String) {
    let n = node.unwrap_or("the node");
    match res {
        resource::FSYNC => fsync::words(n, quote),
        resource::STALLS => stalls::words(n, quote),
        resource::PAUSE => pause::words(n, quote),
        resource::CPU => cpu::words(n, quote),
        resource::THREAD => thread::words(node, quote),
        resource::MACHINE => machine::words(quote),
        resource::IO => io::words(n, quote),
        resource::MEMORY => memory::words(n, quote),
        resource::ADMISSION => admission::words(n, quote),
        resource::GENERATOR => generator::words(quote),
        resource::NETWORK => network::words(n, quote),
        resource::LOCK => lock::words(n, quote),
        _ => (quote.to_string(), String::new()),
    }
}

/// The cause as the report names it (the machine's CPU is `cpu`).
pub fn name(res: &str) -> &str {
    if res == resource::MACHINE {
        resource::CPU
    } else {
        res
    }
}
