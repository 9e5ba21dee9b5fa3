//! The words for what ran alongside the load: the fault table and a
//! sentence per fault (what, on which node, when, how long the cluster took
//! to be level again), the consistency check's headline and table. Owns
//! those words; must not draw charts or touch files.

use super::{fmt_opt, fmt_pct, fmt_s, Table, MISSING};
use crate::report::model::{CheckSummary, FaultMark, Report};
use crate::units::group;

/// The fault table, or None when no fault was injected: what, on which
/// node, when, when undone, and how long the cluster took to be level and
/// the successful rate to come back.
pub fn fault_table(r: &Report) -> Option<Table> {
    if r.faults.is_empty() {
        return None;
    }
    let header = [
        "fault",
        "node",
        "injected at",
        "back at",
        "level after",
        "throughput back after",
        "error",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let opt_s = |v: Option<f64>| fmt_opt(v, fmt_s);
    let rows = r
        .faults
        .iter()
        .map(|f| {
            vec![
                f.spec.clone(),
                f.node.to_string(),
                fmt_s(f.at_s),
                opt_s(f.until_s),
                opt_s(f.level_after_s),
                opt_s(f.recovered_after_s),
                f.error.clone().unwrap_or_else(|| MISSING.into()),
            ]
        })
        .collect();
    Some(Table { header, rows })
}

/// What the fault table's columns mean.
pub const FAULT_INTRO: &str = "Times are seconds since the run started, as on the charts. \
     \"Back at\" is when the fault was undone (the node serving again, continued, or the \
     partition healed); \"level after\" is how long after that the cluster held no more hints \
     for the node; \"throughput back after\" is how long after that (after the injection, for a \
     fault not undone) the successful rate was back to its level before the fault.";

/// "node 2 (http://…)", or "node 2" when its URL is not known.
fn node_name(r: &Report, node: usize) -> String {
    match node.checked_sub(1).and_then(|i| r.node_url(i)) {
        Some(url) => format!("node {node} ({url})"),
        None => format!("node {node}"),
    }
}

/// One sentence (or a few) per fault: what happened to which node, when it
/// was back, and what the seconds around it show.
pub fn fault_sentences(r: &Report) -> Vec<String> {
    r.faults.iter().map(|f| fault_sentence(r, f)).collect()
}

fn fault_sentence(r: &Report, f: &FaultMark) -> String {
    let who = node_name(r, f.node);
    let what = match f.kind.as_str() {
        "kill" => "was killed".to_string(),
        "restart" => "was restarted".to_string(),
        "pause" => "was paused".to_string(),
        "partition" => "was cut off from the other nodes".to_string(),
        "clock" => "had its clock moved".to_string(),
        k => format!("had a {k} fault"),
    };
    if let (Some(e), None, None, None) = (&f.error, f.until_s, f.level_after_s, f.recovered_after_s)
    {
        // Nothing was seen of it: most likely it never took effect.
        return format!(
            "{}: injecting it into {who} at {} went wrong: {e}.",
            f.spec,
            fmt_s(f.at_s)
        );
    }
    let mut s = format!("{}: {who} {what} at {}", f.spec, fmt_s(f.at_s));
    match f.until_s {
        Some(u) => {
            let back = match f.kind.as_str() {
                "kill" | "restart" => "it was serving again",
                "pause" => "it was continued",
                "partition" => "the partition was healed",
                _ => "the fault was undone",
            };
            s += &format!("; {back} at {} ({} later).", fmt_s(u), fmt_s(u - f.at_s));
        }
        None => s += "; it was not undone during the run.",
    }
    if let Some(e) = &f.error {
        s += &format!(" Injecting it went wrong: {e}.");
    }
    if f.until_s.is_some() {
        match f.level_after_s {
            Some(l) => {
                s += &format!(
                    " The cluster held no more hints for it {} after its return.",
                    fmt_s(l)
                )
            }
            None => {
                s += " The cluster was not seen level (no hints held for it) before the run ended."
            }
        }
    }
    let since = if f.until_s.is_some() {
        "its return"
    } else {
        "the injection"
    };
    match f.recovered_after_s {
        Some(b) => {
            s += &format!(
                " The successful rate was back to its level before the fault {} after {since}.",
                fmt_s(b)
            )
        }
        None => s += " The successful rate was not back to its level before the fault by the end of the run.",
    }
    let w = r.fault_window(f);
    if w.requests > 0 {
        s += &format!(
            " From {} to {}, {} of {} requests failed ({})",
            fmt_s(w.from_s),
            fmt_s(w.to_s),
            group(w.errors),
            group(w.requests),
            fmt_pct(100.0 * w.errors as f64 / w.requests as f64),
        );
        match w.worst {
            Some((t, a)) if a < 1.0 => {
                s += &format!(
                    "; the worst second, from {}, answered {} of its requests successfully.",
                    fmt_s(t),
                    fmt_pct(100.0 * a)
                )
            }
            _ => s += ".",
        }
    }
    s
}

/// "1 lost write", "2 lost writes".
fn count(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {one}s", group(n))
    }
}

/// The consistency check's result in one sentence.
pub fn check_headline(c: &CheckSummary) -> String {
    if c.passed {
        if c.stale_checked {
            "The consistency check passed: no acknowledged write was lost, and no read was \
             stale or impossible."
                .into()
        } else {
            "The consistency check passed: no acknowledged write was lost and no read was \
             impossible (stale reads were not judged: a read quorum need not meet a write \
             quorum)."
                .into()
        }
    } else if c.anomalies() > 0 {
        let mut found = vec![count(c.lost, "lost write")];
        if c.stale_checked {
            found.push(count(c.stale, "stale read"));
        }
        found.push(count(c.impossible, "impossible read"));
        format!("The consistency check failed: {}.", found.join(", "))
    } else {
        format!(
            "The consistency check did not pass: it found no anomaly, but {} could not be \
             verified (the final read got no answer).",
            count(c.unverified, "acknowledged write")
        )
    }
}

/// The consistency check's counts, one row.
pub fn check_table(c: &CheckSummary) -> Table {
    let header = [
        "writes acknowledged",
        "set writes checked",
        "reads checked",
        "lost",
        "stale",
        "impossible",
        "not verified",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let row = vec![
        group(c.writes_acknowledged),
        group(c.set_acknowledged),
        group(c.reads_checked),
        group(c.lost),
        if c.stale_checked {
            group(c.stale)
        } else {
            "not checked".into()
        },
        group(c.impossible),
        group(c.unverified),
    ];
    Table {
        header,
        rows: vec![row],
    }
}
