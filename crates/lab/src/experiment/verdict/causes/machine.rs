//! `machine` (named `cpu` in a verdict): the whole machine's cores busy,
//! when the nodes run on it beside the generator and whatever else.
//!
//! - Reading: the machine's busy cores' share against `cpu::CPU_USED`,
//!   quoting whose cores they were (the nodes', the generator's, every
//!   other process's).
//! - Its share: the own work and time in flight of a node that may run
//!   on every core of the machine it shares with the generator, when the
//!   machine crossed; time in flight on loopback with neither side
//!   starved, once the machine is `places::LOOPBACK_BUSY` of its
//!   threshold busy; the generator's lateness when the nodes took its
//!   cores (`generator`).
//! - Owns its reading, its words and its advice; must not weigh it
//!   against another cause.

use super::cpu::CPU_USED;
use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::readings::judged;
use crate::report::model::{resource, Machine, ResourceReading, Trial};

/// The machine's reading, where the lab runs on the nodes' machine.
pub fn reading(t: &Trial, m: Machine) -> Option<ResourceReading> {
    let (busy, cores) = (t.machine_cpu_cores?, m.cores?);
    Some(judged(
        resource::MACHINE,
        None,
        busy / cores,
        CPU_USED,
        quote(t, busy, cores),
    ))
}

/// The machine's reading in words: how busy its cores were (a share past
/// 100 % is the two readings' sampling skew, said so), and whose: the
/// nodes', the generator's and every other process's cores.
fn quote(t: &Trial, busy: f64, cores: f64) -> String {
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

/// The cause in words, and what would raise the limit.
pub fn words(quote: &str) -> (String, String) {
    (
        format!("the machine's CPU: {quote}"),
        "more cores, or the nodes and the generator on machines of their own; profile with /debug/pprof/profile".into(),
    )
}

/// What would raise the limit when other processes held a quarter of
/// the machine's cores or more: not more cores (they would get them too)
/// but those processes off it. `None` when the nodes and the generator
/// held most of it, or the split is unknown.
pub fn next(t: &Trial, cores: Option<f64>) -> Option<String> {
    let (busy, cores) = (t.machine_cpu_cores?, cores?);
    let ours = t.server_cpu_cores? + t.generator_cpu_cores?;
    let others = (busy - ours).max(0.0);
    (others >= 0.25 * cores).then(|| {
        format!(
            "other processes used {others:.2} of the machine's {} cores (the nodes and the generator {ours:.2}): move them off it, since more cores would go to them too, or run the nodes and the generator on machines of their own",
            fmt_num(cores)
        )
    })
}
