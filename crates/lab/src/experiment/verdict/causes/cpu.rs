//! `cpu`: the cores a node may run on, full (whoever kept them busy:
//! itself or a neighbour), or its cgroup held back by its CPU quota.
//!
//! - Reading: how busy the CPUs the node may run on were (on a machine of
//!   its own, what it used of them) against `CPU_USED`, or its quota's
//!   throttled share against `THROTTLED`, whichever is further past.
//! - Its share: the node's own work (`places::work`) and time in flight
//!   when its cores crossed, or when its threads were starved of CPU
//!   beside the generator's (`places::STARVED`, `places::CLEARLY`) while
//!   its cores were not all busy (a neighbour taking them in turns);
//!   else the node's own work with nothing else to show (its CPU, not
//!   full). A node that may use every core of the machine it shares with
//!   the generator has the machine's CPU instead (`machine`).
//! - Owns its reading, its thresholds and its words; must not weigh it
//!   against another cause.

use crate::experiment::slo::fmt_num;
use crate::experiment::verdict::readings::{judged, max, mean};
use crate::report::model::{resource, Machine, ResourceReading, ServerSample};

/// At 85 % busy a runnable thread waits for a core about as long as it
/// runs.
pub const CPU_USED: f64 = 0.85;
/// Steal from this share of the node's cores up is quoted in the CPU
/// reading (it is already part of how busy they were; quoted, not judged).
pub const STOLEN_QUOTED: f64 = 0.02;
/// A throttled cgroup stops every thread until the next period: one in
/// ten periods is in the p99.
pub const THROTTLED: f64 = 0.1;

/// The CPU: whether the cores it may run on were full (whoever kept them
/// busy: itself, or a neighbour), or its quota held it back. How long its
/// threads waited for a CPU is quoted, not judged: threads that hand work
/// to each other wait a little at every hand-over, so the wait grows with
/// the rate on an idle machine too.
pub fn reading(xs: &[ServerSample], name: &Option<String>, m: Machine) -> ResourceReading {
    let field = |f: fn(&ServerSample) -> Option<f64>| xs.iter().filter_map(f);
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
    judged(
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
    )
}

/// The cause in words, and what would raise the limit.
pub fn words(n: &str, quote: &str) -> (String, String) {
    (
        format!("the CPU of {n}: {quote}"),
        format!("more cores for {n}, or other processes off its cores; profile it with /debug/pprof/profile; more nodes on machines of their own"),
    )
}
