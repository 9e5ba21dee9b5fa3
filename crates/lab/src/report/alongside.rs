//! The report's sections for what ran alongside a load
//! (`nemesis::during`): each fault's mark with the time throughput took to
//! come back, the checker's summary and its method, and the terminal's
//! lines for both. Owns turning them into the report's words; must not run
//! or judge anything.

use crate::check::history::Shown;
use crate::check::linear::{self, LinReport, Verdict};
use crate::check::Checked;
use crate::nemesis::schedule;
use crate::report::model::{CheckSummary, FaultMark, LinearSummary, Trial, WitnessOp};

/// The faults' marks with the time the successful rate took to come back,
/// read from the trial's timeline.
pub fn with_recovery(mut marks: Vec<FaultMark>, t: &Trial) -> Vec<FaultMark> {
    let seconds: Vec<(f64, f64)> = t
        .timeline
        .iter()
        .map(|s| (s.t_s, s.requests.saturating_sub(s.errors) as f64))
        .collect();
    schedule::recovery(&mut marks, &seconds, t.offered_rate);
    marks
}

/// The exact definitions of what `--check` looks for.
pub const CHECK_METHOD: &str = "Per-key checks on the checker's own keys, not a full linearizability search. Lost write: a write answered OK on a once-written set/ key whose final read (at ack=from, after every fault was undone) found it absent or another value. Stale read: on a register (one writer, sequential writes), a read returning a value all of whose possible writes were acknowledged before another acknowledged write W was invoked, where W was acknowledged before the read was invoked; judged only when ack_read + ack_write > from. Impossible read: a value no write that had not failed wrote to that key before the read completed. Writes whose outcome is unknown (timeouts) may take effect at any time and are never counted lost.";

/// The report's section for a checked run, with the shared keys'
/// linearizability when it was checked.
pub fn check_summary(c: &Checked, linear: Option<&LinReport>) -> CheckSummary {
    let r = &c.report;
    CheckSummary {
        passed: r.passed() && linear.is_none_or(LinReport::linearizable),
        linear: linear.map(linear_summary),
        writes_acknowledged: r.writes_ok,
        set_acknowledged: r.set_acknowledged,
        reads_checked: r.register_reads_checked,
        stale_checked: r.stale_checked,
        lost: r.lost,
        stale: r.stale,
        impossible: r.impossible,
        unverified: r.unverified,
        method: CHECK_METHOD.into(),
        text: r.to_string(),
    }
}

/// The linearizability check for the report: its verdict and the
/// witnesses' operations.
pub fn linear_summary(l: &LinReport) -> LinearSummary {
    let mut witness = Vec::new();
    let mut at = 0;
    for k in &l.keys {
        if let Verdict::Violation { witness: w, .. } = &k.verdict {
            for op in &l.witness_ops[at..at + w.len()] {
                witness.push(WitnessOp {
                    key: Shown(&k.key).to_string(),
                    client: op.client,
                    what: linear::what(op),
                    start_ms: op.invoked.as_secs_f64() * 1e3,
                    end_ms: op.completed.as_secs_f64() * 1e3,
                });
            }
            at += w.len();
        }
    }
    LinearSummary {
        verdict: l.word().into(),
        keys: l.keys.len(),
        operations: l.keys.iter().map(|k| k.ops).sum(),
        violated: l.violations(),
        undecided: l.unknown(),
        algorithm: linear::ALGORITHM.into(),
        witness,
        text: l.to_string(),
    }
}

/// Lines for the terminal: each fault, then the checker's verdict.
pub fn summary(faults: &[FaultMark], check: Option<&CheckSummary>) -> String {
    let mut s = String::new();
    let secs = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} s"));
    for f in faults {
        s += &format!(
            "  Fault {}: node-{} at {:.2} s, back at {}, level {} after, throughput back {} after{}\n",
            f.spec,
            f.node,
            f.at_s,
            f.until_s.map_or("-".to_string(), |v| format!("{v:.2} s")),
            secs(f.level_after_s),
            secs(f.recovered_after_s),
            f.error.as_ref().map(|e| format!(" (error: {e})")).unwrap_or_default()
        );
    }
    if let Some(c) = check {
        s += &format!(
            "  Check: {} ({} acknowledged writes, {} once-written keys verified, {} register reads checked{}): {} lost, {} stale, {} impossible\n",
            if c.passed { "passed" } else { "FAILED" },
            c.writes_acknowledged,
            c.set_acknowledged,
            c.reads_checked,
            if c.stale_checked { "" } else { ", stale reads not judged: quorums need not meet" },
            c.lost,
            c.stale,
            c.impossible
        );
        if let Some(l) = &c.linear {
            s += &format!(
                "  Linearizability: {} ({} keys, {} operations; {} violated, {} undecided)\n",
                l.verdict, l.keys, l.operations, l.violated, l.undecided
            );
        }
    }
    s
}
