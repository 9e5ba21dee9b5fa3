//! Each resource's utilization or saturation in one trial, node by node,
//! against a stated threshold (the USE method's reading, taken from the
//! nodes' own `/metrics` samples and the generator's evidence):
//!
//! | resource | figure | threshold |
//! | --- | --- | --- |
//! | `fsync` | share of the time the WAL spent in fsync, or its p99 fsync against the objective's tightest bound | 0.7, or half the bound |
//! | `stalls` | share of the time writes were stalled (or 2 stalls) | 0.01 |
//! | `cpu` | how busy the CPUs the node may run on were, whoever used them (or, on a machine of its own, what it used of them) | 0.85 |
//! | `cpu` (a quota) | share of the time the node's cgroup was held back by its CPU quota | 0.1 |
//! | `io` | the machine's I/O pressure: share of the time some task waited for the disk | 0.5 |
//! | `memory` | the machine's memory pressure: share of the time some task waited for memory | 0.1 |
//! | `pause` | the latest the pause detector woke, ms (a scrape that took as long counts; not while its CPUs were full, unless it stopped 3 times longer than each co-located peer) | 50 |
//! | `admission` | share of samples with every place in service taken or requests waiting | 0.5 |
//! | `generator` | share of sends the generator made late with a connection free, or of its threads' time waiting for a CPU | 0.05, 0.5 |
//! | `machine` | the whole machine's busy cores, when the nodes run on it | 0.85 of its cores |
//! | `thread` | a node's (or the generator's) busiest thread, cores, while the process had half a core to spare | 0.9 |
//!
//! The thresholds' mechanisms are in `docs/lab.md` ("The verdict's
//! thresholds"). Beside the readings, `starvation` gives each side's
//! share of its runnable time spent waiting for a CPU, which the verdict
//! compares rather than judges.
//!
//! Owns the figures and the thresholds; must not weigh one resource
//! against another (`verdict` does).

use crate::experiment::slo::fmt_num;
use crate::report::model::{resource, ResourceReading, ServerSample, Trial};

pub const FSYNC_BUSY: f64 = 0.7;
/// A p99 fsync this share of the objective's tightest bound is slow.
pub const SLOW_FSYNC: f64 = 0.5;
pub const STALL_SHARE: f64 = 0.01;
pub const CPU_USED: f64 = 0.85;
/// Steal from this share of the node's cores up is quoted in the CPU
/// reading (it is already part of how busy they were; quoted, not judged).
pub const STOLEN_QUOTED: f64 = 0.02;
pub const PAUSE_MS: f64 = 50.0;
pub const THROTTLED: f64 = 0.1;
pub const IO_PRESSURE: f64 = 0.5;
pub const MEMORY_PRESSURE: f64 = 0.1;
pub const ADMISSION_SHARE: f64 = 0.5;
pub const GENERATOR_LATE: f64 = 0.05;
pub const GENERATOR_WAITING: f64 = 0.5;
pub const THREAD_BUSY: f64 = 0.9;
/// Cores a process must have left beside its busiest thread for that
/// thread to be the limit rather than the process's cores.
pub const SPARE_CORES: f64 = 0.5;

/// What the readings need beyond the trial (the report keeps it).
pub use crate::report::model::Machine;

/// The mean of some figures; `None` for none.
pub fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut s, mut n) = (0.0, 0usize);
    for x in xs {
        s += x;
        n += 1;
    }
    (n > 0).then(|| s / n as f64)
}

/// The largest of some figures; `None` for none.
pub fn max(xs: impl Iterator<Item = f64>) -> Option<f64> {
    xs.fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

fn reading(
    resource: &str,
    node: Option<String>,
    value: f64,
    threshold: f64,
    quote: String,
) -> ResourceReading {
    ResourceReading {
        resource: resource.into(),
        node,
        value,
        threshold,
        crossed: value >= threshold,
        quote,
        worst: None,
    }
}

/// A node's samples in a trial: its own, or the trial's for one node.
pub fn node_samples(t: &Trial, i: usize) -> &[ServerSample] {
    match t.per_node.get(i) {
        Some(n) if !n.server.is_empty() || t.per_node.len() > 1 => &n.server,
        _ => &t.server,
    }
}

/// How many nodes a trial has.
pub fn node_count(t: &Trial) -> usize {
    t.per_node.len().max(1)
}

/// Every reading of a trial: each node's resources, then the generator's
/// and the machine's.
pub fn readings(t: &Trial, m: Machine) -> Vec<ResourceReading> {
    let mut out = Vec::new();
    let mut pauses = Vec::new();
    for i in 0..node_count(t) {
        let (rs, pause) = node_readings(node_samples(t, i), i, m);
        let base = out.len();
        out.extend(rs);
        pauses.extend(pause.map(|p| Pause {
            reading: base + p.reading,
            ..p
        }));
    }
    // A pause that the node's full CPUs explain is the CPU's, unless it is
    // the node's own: its co-located peers share those CPUs, so a node
    // that stopped several times longer than each of them (at least the
    // threshold) was stopped by something else (a signal, a debugger, its
    // VM), not by waiting for a CPU.
    for p in &pauses {
        let own = pauses.len() > 1
            && p.raw >= PAUSE_MS
            && pauses
                .iter()
                .filter(|q| q.index != p.index)
                .all(|q| p.raw >= OWN_PAUSE_FACTOR * q.raw.max(1.0));
        if let Some(r) = out.get_mut(p.reading) {
            r.value = if p.explained && !own { 0.0 } else { p.raw };
            r.crossed = r.value >= r.threshold;
        }
    }
    let late = t.generator_late_sends as f64 / t.requests.max(1) as f64;
    let waiting = t.generator_run_queue_share.unwrap_or(0.0);
    // The worse of its two figures, as a share of its threshold.
    let (value, threshold) = if late / GENERATOR_LATE >= waiting / GENERATOR_WAITING {
        (late, GENERATOR_LATE)
    } else {
        (waiting, GENERATOR_WAITING)
    };
    out.push(reading(
        resource::GENERATOR,
        None,
        value,
        threshold,
        format!(
            "the generator's timer made {:.1}% of sends late with a connection free, and its threads waited for a CPU {:.0}% of the time",
            late * 100.0,
            waiting * 100.0
        ),
    ));
    if let Some(r) = thread_reading(
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
        if let Some(r) = thread_reading(&n.threads, Some(format!("node-{}", i + 1)), used, cpus) {
            out.push(r);
        }
    }
    if let (Some(busy), Some(cores)) = (t.machine_cpu_cores, m.cores) {
        out.push(reading(
            resource::MACHINE,
            None,
            busy / cores,
            CPU_USED,
            machine_words(t, busy, cores),
        ));
    }
    out
}

/// The machine's reading in words: how busy its cores were (a share past
/// 100 % is the two readings' sampling skew, said so), and whose: the
/// nodes', the generator's and every other process's cores.
fn machine_words(t: &Trial, busy: f64, cores: f64) -> String {
    let share = 100.0 * busy / cores;
    let busy_words = if share > 100.0 {
        format!("all busy ({share:.0}% as read: the readings' sampling skew)")
    } else {
        format!("{share:.0}% busy")
    };
    let cores_of = |c: Option<f64>| c.map(|c| format!("{c:.2}")).unwrap_or_else(|| "?".into());
    let others = match (t.server_cpu_cores, t.generator_cpu_cores) {
        (Some(n), Some(g)) => format!(", other processes {:.2}", (busy - n - g).max(0.0)),
        _ => String::new(),
    };
    format!(
        "the machine's {} cores were {busy_words} (cores used: the nodes {}, the generator {}{others})",
        fmt_num(cores),
        cores_of(t.server_cpu_cores),
        cores_of(t.generator_cpu_cores),
    )
}

/// A node's pause reading before it is weighed against its peers'.
struct Pause {
    /// The node's index.
    index: usize,
    /// The reading's place in the list of readings.
    reading: usize,
    /// The longest stop seen, ms.
    raw: f64,
    /// Whether its full CPUs or its quota would explain it.
    explained: bool,
}

/// How many times longer than each co-located peer's a node's pause must
/// be to be its own while its CPUs were full.
const OWN_PAUSE_FACTOR: f64 = 3.0;

/// One node's readings from its samples, and its pause reading's
/// figures (its place counted in this node's readings).
fn node_readings(
    xs: &[ServerSample],
    i: usize,
    m: Machine,
) -> (Vec<ResourceReading>, Option<Pause>) {
    let mut out = Vec::new();
    if xs.is_empty() {
        return (out, None);
    }
    let name = Some(format!("node-{}", i + 1));
    let field = |f: fn(&ServerSample) -> Option<f64>| xs.iter().filter_map(f);
    // The WAL's fsync: busy (one fsync after another), or slow. A write
    // that arrives during an fsync waits for it and then for its own, so
    // an fsync whose p99 takes half the objective's bound leaves a write
    // no time to meet it however seldom the WAL is busy (a slow-but-idle
    // disk).
    if let Some(busy) = mean(field(|x| x.fsync_busy)) {
        let p99 = max(field(|x| x.fsync_p99_ms));
        let slow =
            matches!((p99, m.objective_ms), (Some(f), Some(o)) if o > 0.0 && f >= SLOW_FSYNC * o);
        let mut r = reading(
            resource::FSYNC,
            name.clone(),
            busy,
            FSYNC_BUSY,
            format!(
                "its WAL fsync was busy {:.0}% of the time (p99 fsync {} ms{}, {} writes per fsync, up to {} writers waiting)",
                busy * 100.0,
                p99.map(fmt_num).unwrap_or_else(|| "?".into()),
                match m.objective_ms {
                    Some(o) if slow => format!(", at least half the objective's {} ms", fmt_num(o)),
                    _ => String::new(),
                },
                mean(field(|x| x.writes_per_fsync)).map(fmt_num).unwrap_or_else(|| "?".into()),
                max(field(|x| x.writers_waiting)).map(fmt_num).unwrap_or_else(|| "?".into()),
            ),
        );
        r.crossed |= slow;
        // The slower figure's share of its threshold, when it is further
        // past it than the busy share.
        if let (Some(f), Some(o)) = (p99, m.objective_ms.filter(|o| *o > 0.0)) {
            let slowness = f / (SLOW_FSYNC * o);
            if slowness > busy / FSYNC_BUSY {
                r.worst = Some(slowness);
            }
        }
        out.push(r);
    }
    // Write stalls: flush and compaction behind.
    let stalls: f64 = field(|x| x.stalls).sum();
    let share = mean(field(|x| x.stall_share)).unwrap_or(0.0);
    let value = if stalls >= 2.0 {
        share.max(STALL_SHARE)
    } else {
        share
    };
    out.push(reading(
        resource::STALLS,
        name.clone(),
        value,
        STALL_SHARE,
        format!(
            "its writes were stalled {:.1}% of the time ({} stalls; {} flushes, {} compactions, up to {} memtables waiting for flush and {} tables in level 0)",
            share * 100.0,
            fmt_num(stalls),
            fmt_num(field(|x| x.flushes).sum()),
            fmt_num(field(|x| x.compactions).sum()),
            max(field(|x| x.immutables)).map(fmt_num).unwrap_or_else(|| "?".into()),
            max(field(|x| x.l0_tables)).map(fmt_num).unwrap_or_else(|| "?".into()),
        ),
    ));
    // The CPU: whether the cores it may run on were full (whoever kept
    // them busy: itself, or a neighbour), or its quota held it back. How
    // long its threads waited for a CPU is quoted, not judged: threads
    // that hand work to each other wait a little at every hand-over, so
    // the wait grows with the rate on an idle machine too.
    let used = mean(field(|x| x.cpu_cores)).unwrap_or(0.0);
    let cpus = max(field(|x| x.cpus)).unwrap_or(1.0).max(1.0);
    let waiting = mean(field(|x| x.run_queue_cores)).unwrap_or(0.0);
    let pressure = mean(field(|x| x.pressure_cpu));
    let full = mean(field(|x| x.allowed_cpus_busy));
    let stolen = mean(field(|x| x.allowed_cpus_stolen)).unwrap_or(0.0);
    // On a machine of its own, what it used of its cores says it too.
    let own = if m.cores.is_some() { 0.0 } else { used / cpus };
    let throttled = mean(field(|x| x.throttled_share)).unwrap_or(0.0);
    // The worst of its figures, as a share of its threshold.
    let (value, threshold) = [
        (full.unwrap_or(0.0).max(own), CPU_USED),
        (throttled, THROTTLED),
    ]
    .into_iter()
    .max_by(|a, b| (a.0 / a.1).total_cmp(&(b.0 / b.1)))
    .expect("two");
    let cpu_bound = value >= threshold;
    out.push(reading(
        resource::CPU,
        name.clone(),
        value,
        threshold,
        format!(
            "{}it used {} of them and its threads waited for a CPU {} s per second{}{}",
            match full {
                Some(f) => format!(
                    "the {} cores it may run on were {:.0}% busy{}; ",
                    fmt_num(cpus),
                    f * 100.0,
                    if stolen >= STOLEN_QUOTED {
                        format!(
                            " ({:.0}% of their time taken by the hypervisor for other guests)",
                            stolen * 100.0
                        )
                    } else {
                        String::new()
                    }
                ),
                None => format!("of its {} cores, ", fmt_num(cpus)),
            },
            fmt_num(used),
            fmt_num(waiting),
            if throttled > 0.0 {
                format!(
                    "; its CPU quota held it back {:.0}% of the time",
                    throttled * 100.0
                )
            } else {
                String::new()
            },
            pressure
                .map(|p| format!(" (the machine's CPU pressure {:.0}%)", p * 100.0))
                .unwrap_or_default()
        ),
    ));
    // The machine's disk and memory, as this node sees them.
    let wal = mean(field(|x| x.wal_bytes_per_s));
    let flush = mean(field(|x| x.flush_bytes_per_s));
    let compaction = mean(field(|x| x.compaction_bytes_per_s));
    let engine_mb = |xs: &[Option<f64>]| xs.iter().flatten().sum::<f64>() / 1e6;
    if let Some(io) = mean(field(|x| x.pressure_io)) {
        out.push(reading(
            resource::IO,
            name.clone(),
            io,
            IO_PRESSURE,
            format!(
                "some task on its machine waited for the disk {:.0}% of the time, while its engine wrote {} MB/s to it (WAL {}, flushes {}, compactions {}; {} flushes, {} compactions)",
                io * 100.0,
                fmt_num(engine_mb(&[wal, flush, compaction])),
                fmt_num(engine_mb(&[wal])),
                fmt_num(engine_mb(&[flush])),
                fmt_num(engine_mb(&[compaction])),
                fmt_num(field(|x| x.flushes).sum()),
                fmt_num(field(|x| x.compactions).sum()),
            ),
        ));
    }
    if let Some(mem) = mean(field(|x| x.pressure_memory)) {
        out.push(reading(
            resource::MEMORY,
            name.clone(),
            mem,
            MEMORY_PRESSURE,
            format!(
                "some task on its machine waited for memory {:.0}% of the time (reclaim, swap)",
                mem * 100.0
            ),
        ));
    }
    // Pauses: seen from inside (the detector), and from outside (ticks
    // with no sample at all, and, from a node with no detector, a scrape
    // that took long). A stopped process stops its detector too, which
    // sees the stop when it runs again; so from a node that has one, a
    // slow scrape its detector did not see was the node's queue (the
    // scrape waits behind the load like any request), not a stop. A pause
    // that the node's own wait for a CPU, or its CPU quota, explains is
    // the CPU's.
    let detector = max(field(|x| x.pause_max_ms));
    let inside = detector.unwrap_or(0.0);
    let slow_scrape = max(field(|x| x.scrape_ms)).unwrap_or(0.0);
    let gaps = xs.windows(2).filter(|w| w[1].t_s - w[0].t_s > 1.8).count();
    let paused = inside
        .max(if detector.is_none() { slow_scrape } else { 0.0 })
        .max(if gaps > 0 { PAUSE_MS } else { 0.0 });
    let pause = Pause {
        index: i,
        reading: out.len(),
        raw: paused,
        explained: cpu_bound,
    };
    out.push(reading(
        resource::PAUSE,
        name.clone(),
        paused,
        PAUSE_MS,
        format!(
            "it stopped for up to {} ms (its pause detector; the lab's scrapes took up to {} ms, {} missed)",
            fmt_num(inside),
            fmt_num(slow_scrape),
            gaps
        ),
    ));
    // Admission.
    let busy = xs
        .iter()
        .filter(|x| {
            x.waiting.unwrap_or(0.0) > 0.0
                || x.admitted_after_wait.unwrap_or(0.0) > 0.0
                || x.refused.unwrap_or(0.0) > 0.0
                || matches!((x.in_service, x.limit), (Some(s), Some(l)) if l > 0.0 && s >= l)
        })
        .count() as f64
        / xs.len() as f64;
    out.push(reading(
        resource::ADMISSION,
        name,
        busy,
        ADMISSION_SHARE,
        format!(
            "all {} places in service were taken or requests waited in {:.0}% of samples ({} refused)",
            max(field(|x| x.limit)).map(fmt_num).unwrap_or_else(|| "?".into()),
            busy * 100.0,
            fmt_num(field(|x| x.refused).sum())
        ),
    ));
    (out, Some(pause))
}

/// What a thread is for, by its name, when the name says it.
pub fn thread_role(name: &str) -> Option<&'static str> {
    use strata_api::threads::names;
    Some(match name {
        n if n == names::RUNTIME => "a runtime thread: HTTP, the requests' own work, and blocking work (reads, metrics, scrub)",
        n if n == names::APPLY => "the applier: WAL writes and their fsyncs, one commit group at a time",
        n if n == names::WALSYNC => "the WAL's timed fsync",
        n if n == names::FLUSH => "the memtable flush",
        n if n == names::COMPACT => "compaction",
        n if n == names::TREES => "anti-entropy's trees",
        n if n == names::HINTS => "hint delivery",
        n if n == names::PAUSE => "the pause detector",
        n if n.starts_with(names::SCRAPE) => "the lab's scrape of a node",
        n if n.starts_with(names::LOAD) => "a generator thread: sends and reads answers",
        n if n == names::TIMER => "the generator's timer",
        _ => return None,
    })
}

/// A process's busiest thread against `THREAD_BUSY`: crossed when it used
/// that much of one core while its process had `SPARE_CORES` of the
/// cores it may run on left (so more cores would not have helped: the
/// work waited for that one thread).
fn thread_reading(
    threads: &[strata_api::threads::ThreadRate],
    node: Option<String>,
    used: Option<f64>,
    cpus: Option<f64>,
) -> Option<ResourceReading> {
    let top = threads.first()?;
    let spare = match (used, cpus) {
        (Some(u), Some(c)) => c - u,
        _ => 0.0,
    };
    let who = node.clone().unwrap_or_else(|| "the generator".into());
    let mut r = reading(
        resource::THREAD,
        node,
        top.cpu,
        THREAD_BUSY,
        format!(
            "{who}'s busiest thread, {} (tid {}{}), was {:.0}% busy and waited for a CPU {:.0}% of its time; the process used {} of its {} cores{}",
            top.name,
            top.tid,
            thread_role(&top.name).map(|r| format!("; {r}")).unwrap_or_default(),
            top.cpu * 100.0,
            100.0 * top.waiting / (top.cpu + top.waiting).max(1e-9),
            used.map(fmt_num).unwrap_or_else(|| "?".into()),
            cpus.map(fmt_num).unwrap_or_else(|| "?".into()),
            threads
                .get(1)
                .map(|n| format!(" (next: {} at {:.0}%)", n.name, n.cpu * 100.0))
                .unwrap_or_default()
        ),
    );
    r.crossed = r.crossed && spare >= SPARE_CORES;
    Some(r)
}

/// How starved of CPU a side was: of its threads' runnable time, the
/// share spent waiting for a CPU, and the mean wait of one wake-up for a
/// core (ms; none where the times a thread was put on a CPU are unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Starvation {
    pub share: f64,
    pub wait_ms: Option<f64>,
    /// Its threads' summed wait for a core, seconds per second.
    pub waiting: Option<f64>,
}

/// A side's starvation from its threads.
pub fn starvation(threads: &[strata_api::threads::ThreadRate]) -> Option<Starvation> {
    let (cpu, wait, slices) = threads.iter().fold((0.0, 0.0, 0.0), |(c, w, n), t| {
        (c + t.cpu, w + t.waiting, n + t.slices)
    });
    (cpu + wait > 0.01).then(|| Starvation {
        share: wait / (cpu + wait),
        wait_ms: (slices > 0.0).then(|| 1000.0 * wait / slices),
        waiting: Some(wait),
    })
}

/// A node's starvation from its threads, or from its samples' totals.
pub fn node_starvation(t: &Trial, i: usize) -> Option<Starvation> {
    if let Some(s) = t.per_node.get(i).and_then(|n| starvation(&n.threads)) {
        return Some(s);
    }
    let xs = node_samples(t, i);
    let cpu = mean(xs.iter().filter_map(|x| x.cpu_cores))?;
    let wait = mean(xs.iter().filter_map(|x| x.run_queue_cores))?;
    (cpu + wait > 0.01).then(|| Starvation {
        share: wait / (cpu + wait),
        wait_ms: None,
        waiting: Some(wait),
    })
}

/// The generator's starvation: from its threads, or from its share of
/// wall time waiting.
pub fn generator_starvation(t: &Trial) -> Option<Starvation> {
    starvation(&t.generator_threads).or(t.generator_run_queue_share.map(|share| Starvation {
        share,
        wait_ms: None,
        waiting: None,
    }))
}
