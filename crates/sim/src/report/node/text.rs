//! A run as people and programs read it. The text report first shows the
//! seed report's own views, in DTrace's layout (probe counts, then request
//! lifetimes and persist times with count, average, max, min and a
//! `quantize` power-of-two histogram), so the two can be set side by side;
//! then what the seed lacked: percentiles, per-stage throughput,
//! utilisation and queues, Little's law, the bottleneck and the capacity in
//! numbers, warnings, and the simulator's own speed. `--json` gives the same
//! content as one object. Owns layout only; must not compute beyond
//! percentiles (that is `report::node`).

use serde::Serialize;
use std::fmt::Write as _;

use crate::model::node::{Probes, Run};
use crate::model::Latency;
use crate::report::LatencySummary;
use crate::scenario::{Clients, Start};

use super::Analysis;
use crate::units::{grouped, human_ns, rate, sig};

/// One line of a DTrace `printa` of a scalar aggregation.
fn agg_line(out: &mut String, key: &str, v: u64) {
    let _ = writeln!(out, "  {key:<50}{v:>17}");
}

/// DTrace's `quantize` output of power-of-two counts.
pub fn quantize(pow2: &[u64; 65]) -> String {
    let mut out = String::new();
    let total: u64 = pow2.iter().sum();
    let _ = writeln!(
        out,
        "{:>16} {:>41} {:<9}",
        "value", "------------- Distribution -------------", "count"
    );
    if total == 0 {
        return out;
    }
    let lo = pow2.iter().position(|&c| c > 0).unwrap();
    let hi = pow2.iter().rposition(|&c| c > 0).unwrap();
    let first = lo.saturating_sub(1);
    let last = (hi + 1).min(64);
    for (k, &c) in pow2.iter().enumerate().take(last + 1).skip(first) {
        let value: u64 = if k == 0 { 0 } else { 1 << (k - 1) };
        let depth = ((c as f64 * 40.0) / total as f64 + 0.5) as usize;
        let _ = writeln!(
            out,
            "{value:>16} |{}{} {c:<9}",
            "@".repeat(depth),
            " ".repeat(40 - depth)
        );
    }
    out
}

#[derive(Clone, Debug, Serialize)]
pub struct Perf {
    pub events: u64,
    pub wall_s: f64,
    pub events_per_s: f64,
}

impl Perf {
    pub fn of(run: &Run) -> Perf {
        Perf {
            events: run.events,
            wall_s: run.wall_s,
            events_per_s: run.events as f64 / run.wall_s.max(1e-9),
        }
    }
}

/// `--json`'s object.
#[derive(Serialize)]
pub struct JsonReport<'a> {
    pub scenario: &'a str,
    pub seed: u64,
    pub clients: String,
    pub window_s: f64,
    pub warmup_s: f64,
    pub probes: Probes,
    pub request_lifetime: LatencySummary,
    pub persist_time: LatencySummary,
    /// Lifetimes as the seed's per-thread script measured them (every
    /// client on one thread).
    pub thread_lifetime: LatencySummary,
    pub analysis: &'a Analysis,
    pub in_flight_end: u64,
    pub perf: Perf,
}

pub fn json(run: &Run, a: &Analysis) -> String {
    let j = JsonReport {
        scenario: &run.scenario.name,
        seed: run.seed,
        clients: describe_clients(run),
        window_s: run.window_ns as f64 / 1e9,
        warmup_s: run.warmup_ns as f64 / 1e9,
        probes: run.probes,
        request_lifetime: LatencySummary::of(&run.lifetime),
        persist_time: LatencySummary::of(&run.persist),
        thread_lifetime: LatencySummary::of(&run.thread_lifetime),
        analysis: a,
        in_flight_end: run.in_flight_end,
        perf: Perf::of(run),
    };
    serde_json::to_string_pretty(&j).expect("serializable report")
}

pub fn describe_clients(run: &Run) -> String {
    match &run.scenario.clients {
        Clients::Closed {
            count,
            start,
            write_fraction,
            tick,
            timer,
            think,
        } => {
            let mut s = format!(
                "{} closed-loop clients, think {}, starting {}",
                grouped(*count as i64),
                think.describe(),
                match start {
                    Start::Together => "together",
                    Start::Spread => "spread",
                }
            );
            if tick.0 > 0 {
                s.push_str(&format!(", timer tick {tick}"));
            }
            if *timer {
                s.push_str(", thinking on the timer");
            }
            if *write_fraction < 1.0 {
                s.push_str(&format!(", {:.0}% writes", write_fraction * 100.0));
            }
            s
        }
        Clients::Open {
            rate: r,
            arrivals,
            write_fraction,
            ..
        } => {
            let how = match arrivals {
                crate::scenario::Arrivals::Poisson => "Poisson",
                crate::scenario::Arrivals::Constant => "constant",
            };
            let mut s = format!("open loop at {} req/s ({how} arrivals)", rate(*r));
            if *write_fraction < 1.0 {
                s.push_str(&format!(", {:.0}% writes", write_fraction * 100.0));
            }
            s
        }
    }
}

/// The runtime's timer in one line.
pub fn describe_timer(t: &crate::scenario::node::Timer) -> String {
    let mut s = format!("timer: {} ticks from the start", t.tick);
    if let Some(sl) = &t.slack {
        let pct = format!("{:.2}", sl.fraction * 100.0);
        let pct = pct.trim_end_matches('0').trim_end_matches('.');
        s.push_str(&format!(", OS slack {pct}% of a sleep up to {}", sl.max));
    }
    if let Some(w) = &t.wakeup {
        s.push_str(&format!(", thread wake-up {}", w.describe()));
    }
    s
}

fn secs(ns: u64) -> String {
    let s = format!("{:.3}", ns as f64 / 1e9);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} s")
}

/// The text report. `perf` adds the last line (wall time and events per
/// second), which golden files leave out.
pub fn text(run: &Run, a: &Analysis, perf: bool) -> String {
    let mut o = String::new();
    let sc = &run.scenario;
    let _ = writeln!(o, "strata sim: {} (seed {})", sc.name, run.seed);
    let _ = writeln!(
        o,
        "{}; {} measured{}",
        describe_clients(run),
        secs(run.window_ns),
        if run.warmup_ns > 0 {
            format!(" after {} of warm-up", secs(run.warmup_ns))
        } else {
            String::new()
        }
    );
    let _ = writeln!(o, "pipeline:");
    for inf in &run.info {
        let only = match inf.only {
            crate::scenario::node::Only::All => "",
            crate::scenario::node::Only::Reads => " (reads only)",
            crate::scenario::node::Only::Writes => " (writes only)",
        };
        let _ = writeln!(
            o,
            "  {:<14} {:<13} {}{only}",
            inf.name, inf.kind, inf.describe
        );
    }
    if let Some(t) = &sc.timer {
        let _ = writeln!(o, "  {}", describe_timer(t));
    }
    for n in &sc.notes {
        let _ = writeln!(o, "  note: {n}");
    }

    // The seed's count.sh.
    let p = &run.probes;
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Probe counts over {} (the seed's count.sh; DTrace order, smallest first):",
        secs(run.window_ns)
    );
    let mut seed_counts = [
        ("blocked requests", p.request_block),
        ("non blocked requests", p.request_nonblock),
        ("persistent writes done", p.persist_done),
        ("persistent writes started", p.persist_start),
        ("requests done", p.request_done),
        ("requests started", p.request_start),
    ];
    seed_counts.sort_by_key(|&(k, v)| (v, k));
    for (k, v) in seed_counts {
        if v > 0 {
            agg_line(&mut o, k, v);
        }
    }
    let extra = [
        ("refused requests (no room to wait)", p.request_refused),
        ("refused requests (waited too long)", p.request_timeout),
        ("failed requests (answered with an error)", p.request_failed),
        ("failed persistent writes (store full)", p.persist_failed),
        ("arrivals dropped (max_in_flight)", p.arrivals_dropped),
    ];
    if extra.iter().any(|e| e.1 > 0) {
        let _ = writeln!(o, "  -- not in the seed --");
        for (k, v) in extra {
            if v > 0 {
                agg_line(&mut o, k, v);
            }
        }
    }

    // request-lifetime.sh and persist-time.sh.
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Summary of all request lifetimes taken in {} represented in nanoseconds:",
        secs(run.window_ns)
    );
    latency_block(
        &mut o,
        &run.lifetime,
        "total requests",
        "request lifetime",
        "request lifetimes visualisation",
    );
    if run.scenario.uses_timer() && run.thread_lifetime.count() > 0 {
        // The clients share one thread here: what the seed's script, which
        // kept one start per OS thread, printed for such a program.
        let t = &run.thread_lifetime;
        let _ = writeln!(
            o,
            "  (the seed's script, one start kept per OS thread, all clients on one: total requests {}, average {:.0})",
            t.count(),
            t.mean()
        );
    }
    if run.persist.count() > 0 || p.persist_start > 0 {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Summary of all writes to persistent storage taken in {} represented in nanoseconds:",
            secs(run.window_ns)
        );
        latency_block(
            &mut o,
            &run.persist,
            "total writes",
            "write",
            "visualisation of writes",
        );
    }

    // What the seed lacked.
    let _ = writeln!(o);
    let _ = writeln!(o, "Stages over {}:", secs(run.window_ns));
    let _ = writeln!(
        o,
        "  {:<14} {:<12} {:>10} {:>7} {:>11} {:>11} {:>11} {:>11}",
        "stage", "kind", "per s", "util", "mean queue", "L (inside)", "W (time)", "λW"
    );
    for s in &a.stages {
        let _ = writeln!(
            o,
            "  {:<14} {:<12} {:>10} {:>7} {:>11} {:>11} {:>11} {:>11}",
            s.name,
            s.kind,
            rate(s.throughput),
            s.utilisation
                .map(|u| format!("{:.1}%", u * 100.0))
                .unwrap_or_else(|| "-".into()),
            s.mean_queue.map(sig).unwrap_or_else(|| "-".into()),
            sig(s.mean_in_stage),
            human_ns(s.mean_time_ns),
            sig(s.lambda_w),
        );
    }
    let _ = writeln!(o, "Capacity per stage:");
    for s in &a.stages {
        let _ = writeln!(o, "  {:<14} {}", s.name, s.capacity_text);
    }
    let l = &a.little;
    let _ = writeln!(
        o,
        "Little's law, whole system: L = {} requests inside on average; λW = {} req/s × {} = {} ({:.2}% apart)",
        sig(l.l),
        rate(l.lambda),
        human_ns(l.w_ns),
        sig(l.lambda_w),
        l.error * 100.0
    );
    let _ = writeln!(o);
    let _ = writeln!(o, "Bottleneck: {}", a.verdict);
    for n in &a.notes {
        let _ = writeln!(o, "Note: {n}");
    }
    for w in &a.warnings {
        let _ = writeln!(o, "!!! {w}");
    }
    if perf {
        let pf = Perf::of(run);
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "simulated {} in {:.3} s of wall time: {} events, {:.1} M events/s",
            secs(run.window_ns + run.warmup_ns),
            pf.wall_s,
            grouped(pf.events as i64),
            pf.events_per_s / 1e6
        );
    }
    o
}

fn latency_block(o: &mut String, l: &Latency, total: &str, what: &str, vis: &str) {
    let s = LatencySummary::of(l);
    agg_line(o, total, s.count);
    agg_line(o, &format!("average {what}"), s.mean_ns.round() as u64);
    agg_line(o, &format!("max {what}"), s.max_ns);
    agg_line(o, &format!("min {what}"), s.min_ns);
    let _ = writeln!(
        o,
        "  (not in the seed: p50 {}, p90 {}, p99 {}, p99.9 {}, sd {})",
        human_ns(s.p50_ns as f64),
        human_ns(s.p90_ns as f64),
        human_ns(s.p99_ns as f64),
        human_ns(s.p999_ns as f64),
        human_ns(s.sd_ns)
    );
    let _ = writeln!(o, "  {vis}");
    o.push_str(&quantize(&l.pow2));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's 1-client view: 60 requests in [4194304, 8388608).
    #[test]
    fn quantize_like_dtrace() {
        let mut p = [0u64; 65];
        p[23] = 60;
        let q = quantize(&p);
        let want = "           value  ------------- Distribution ------------- count    \n\
                    \x20        2097152 |                                         0        \n\
                    \x20        4194304 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 60       \n\
                    \x20        8388608 |                                         0        \n";
        assert_eq!(q, want);
        let mut line = String::new();
        agg_line(&mut line, "non blocked requests", 60);
        assert_eq!(
            line,
            "  non blocked requests                                             60\n"
        );
    }
}
