//! The checker's report as text: counts, then examples of each anomaly.
//! Owns the wording; must not judge.

use std::fmt;
use std::time::Duration;

use super::Report;
use crate::history::Shown;
use crate::numbers::group;

/// Seconds with milliseconds: `1.234s`.
fn secs(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

fn via(node: &str) -> String {
    if node.is_empty() {
        String::new()
    } else {
        format!(" via {node}")
    }
}

fn value(v: &Option<Vec<u8>>) -> String {
    match v {
        Some(v) => Shown(v).to_string(),
        None => "absent".into(),
    }
}

fn heading(f: &mut fmt::Formatter<'_>, what: &str, n: u64, shown: usize) -> fmt::Result {
    if n as usize > shown {
        writeln!(f, "{what} ({}, the first {shown}):", group(n))
    } else {
        writeln!(f, "{what} ({}):", group(n))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "checked {} writes ({} acknowledged, ",
            group(self.writes),
            group(self.writes_ok)
        )?;
        if self.writes_failed > 0 {
            write!(f, "{} failed, ", group(self.writes_failed))?;
        }
        write!(f, "{} unknown), ", group(self.writes_unknown))?;
        if self.deletes > 0 {
            write!(f, "{} deletes, ", group(self.deletes))?;
        }
        write!(
            f,
            "{} reads: {} lost, ",
            group(self.reads),
            group(self.lost)
        )?;
        if self.stale_checked {
            write!(f, "{} stale, ", group(self.stale))?;
        } else {
            f.write_str("stale not checked, ")?;
        }
        write!(f, "{} impossible", group(self.impossible))?;
        if self.unverified > 0 {
            write!(f, ", {} not verified", group(self.unverified))?;
        }
        writeln!(f)?;

        write!(
            f,
            "  set keys: {} acknowledged writes checked by the final reads",
            group(self.set_acknowledged)
        )?;
        if self.unknown_present + self.unknown_absent > 0 {
            write!(
                f,
                "; unknown writes: {} present, {} absent",
                group(self.unknown_present),
                group(self.unknown_absent)
            )?;
        }
        writeln!(f)?;
        write!(
            f,
            "  register keys: {}, reads checked: {}; ",
            group(self.registers),
            group(self.register_reads_checked)
        )?;
        match self.quorum.intersects() {
            Some(true) => writeln!(f, "reads during the run checked ({})", self.quorum)?,
            Some(false) => writeln!(
                f,
                "reads during the run not checked ({}: a read need not meet an acknowledged write)",
                self.quorum
            )?,
            None => writeln!(f, "reads during the run not checked ({})", self.quorum)?,
        }
        if self.quorum_keys > 0 {
            writeln!(
                f,
                "  shared keys with a quorum per operation: {}, reads checked: {} (each against the writes whose quorums meet its own)",
                group(self.quorum_keys),
                group(self.quorum_reads_checked)
            )?;
        }
        if self.late_unknown > 0 {
            writeln!(
                f,
                "  {} reads returned an unknown write after a newer acknowledged one (allowed: an unfinished write may take effect late)",
                group(self.late_unknown)
            )?;
        }
        if self.unchecked_ops > 0 {
            writeln!(
                f,
                "  {} operations on other keys, not checked",
                group(self.unchecked_ops)
            )?;
        }

        if self.lost > 0 {
            heading(f, "lost writes", self.lost, self.lost_examples.len())?;
            for l in &self.lost_examples {
                writeln!(
                    f,
                    "  {} = {}: acknowledged to client {}{} at {}..{}; the final read at {}{} found {}",
                    Shown(&l.key),
                    value(&l.value),
                    l.client,
                    via(&l.node),
                    secs(l.invoked),
                    secs(l.completed),
                    secs(l.found_at),
                    via(&l.found_node),
                    value(&l.found),
                )?;
            }
        }
        if self.stale > 0 {
            heading(f, "stale reads", self.stale, self.stale_examples.len())?;
            for s in &self.stale_examples {
                writeln!(
                    f,
                    "  {}: client {} read {}{} at {}..{}, but {} had been acknowledged at {}",
                    Shown(&s.key),
                    s.client,
                    value(&s.read),
                    via(&s.node),
                    secs(s.invoked),
                    secs(s.completed),
                    value(&s.newest),
                    secs(s.newest_completed),
                )?;
            }
        }
        if self.impossible > 0 {
            heading(
                f,
                "impossible reads",
                self.impossible,
                self.impossible_examples.len(),
            )?;
            for i in &self.impossible_examples {
                writeln!(
                    f,
                    "  {}: client {} read {}{} at {}..{}: {}",
                    Shown(&i.key),
                    i.client,
                    Shown(&i.read),
                    via(&i.node),
                    secs(i.invoked),
                    secs(i.completed),
                    i.why,
                )?;
            }
        }
        if self.unverified > 0 {
            heading(
                f,
                "not verified (the final read got no answer)",
                self.unverified,
                self.unverified_keys.len(),
            )?;
            for k in &self.unverified_keys {
                writeln!(f, "  {}", Shown(k))?;
            }
        }
        if self.anomalies() > 0 {
            writeln!(f, "FAILED")
        } else if self.unverified > 0 {
            writeln!(
                f,
                "NOT PROVEN: some acknowledged writes could not be verified"
            )
        } else {
            writeln!(f, "passed")
        }
    }
}
