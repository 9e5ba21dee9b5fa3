//! A fault schedule's words: the `--fault` grammar (`kill:2@20s`,
//! `pause:1@10s+3s`, `partition:3@15s+5s`, `isolate:3@10s+5s`,
//! `clock:2+10s`, `jump:3+30s@10s+5s`) as [`Step`]s, their check against a
//! cluster, and the [`Action`]s a step does and undoes, as they cross the
//! control socket (one line each). Owns the grammar and the lines; must
//! not time anything (the schedule does) nor do anything to a node (the
//! target does).

use std::fmt;
use std::time::Duration;

pub use super::netns::Cut;

/// What a step does to its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SIGKILL; started again on its data after the hold, or by a later
    /// `restart` step, or at the end of the run.
    Kill,
    /// Started again (after a kill), or stopped gracefully and started
    /// again if it runs.
    Restart,
    /// SIGSTOP, SIGCONT after the hold (or at the end of the run).
    Pause,
    /// Its internal traffic black-holed in the proxy (the cluster must
    /// run `--proxied`), healed after the hold (or at the end).
    Partition,
    /// Restarted with its wall clock off by the offset (HLC versions must
    /// still order writes); at the start of the run unless `@` says when.
    Clock,
    /// Its running clock jumps by the offset (its test hook: the cluster's
    /// nodes run `--test-clock-hook`), and back after the hold (or at the
    /// end).
    Jump,
    /// Cut off in the network (the cluster runs in network namespaces,
    /// `cluster up --netns`) as the cut says: `isolate` (clients and
    /// peers, both ways), `oneway` (only what it sends), `inbound` (only
    /// what it would receive), `internal` (only its peers, both ways);
    /// mended after the hold (or at the end).
    Net(Cut),
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill",
            Kind::Restart => "restart",
            Kind::Pause => "pause",
            Kind::Partition => "partition",
            Kind::Clock => "clock",
            Kind::Jump => "jump",
            Kind::Net(c) => c.name(),
        }
    }
}

/// One `--fault`.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// As given.
    pub spec: String,
    pub kind: Kind,
    /// 0-based (the spec counts from 1, as `strata cluster up` names
    /// nodes).
    pub node: usize,
    /// From the start of the run.
    pub at: Duration,
    pub hold: Option<Duration>,
    /// Clock: the offset in milliseconds.
    pub offset_ms: i64,
}

const GRAMMAR: &str = "KIND:NODE@TIME[+HOLD] (kill, restart, pause, partition; isolate, oneway, inbound, internal), clock:NODE+OFFSET[@TIME] or jump:NODE+OFFSET@TIME[+HOLD], e.g. kill:2@20s, pause:1@10s+3s, isolate:3@10s+5s, clock:2-500ms, jump:3+30s@10s+5s";

impl Step {
    pub fn parse(spec: &str) -> Result<Step, String> {
        let bad = |why: &str| format!("--fault {spec}: {why}; expected {GRAMMAR}");
        let (kind, rest) = spec.trim().split_once(':').ok_or_else(|| bad("no ':'"))?;
        let kind = match kind {
            "kill" => Kind::Kill,
            "restart" => Kind::Restart,
            "pause" | "stop" => Kind::Pause,
            "partition" => Kind::Partition,
            "clock" => Kind::Clock,
            "jump" => Kind::Jump,
            k => match Cut::parse(k) {
                Some(c) => Kind::Net(c),
                None => return Err(bad(&format!("unknown fault {k:?}"))),
            },
        };
        let dur = |s: &str| crate::units::duration(s).map_err(|e| bad(&e));
        let node_of = |s: &str| -> Result<usize, String> {
            match s.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n - 1),
                _ => Err(bad(&format!("{s:?} is not a node number (1, 2, ...)"))),
            }
        };
        let mut step = Step {
            spec: spec.trim().to_string(),
            kind,
            node: 0,
            at: Duration::ZERO,
            hold: None,
            offset_ms: 0,
        };
        if kind == Kind::Jump {
            // jump:NODE+OFFSET@TIME[+HOLD]: the offset as a clock's, the
            // rest as any step's.
            let (main, time) = rest.split_once('@').ok_or_else(|| bad("no '@TIME'"))?;
            let i = main
                .find(['+', '-'])
                .ok_or_else(|| bad("a jump needs +OFFSET or -OFFSET"))?;
            let off = dur(&main[i + 1..])?.as_millis() as i64;
            let mut s = Step::parse(&format!("pause:{}@{time}", &main[..i])).map_err(|e| {
                e.replace(
                    &format!("--fault pause:{}@{time}", &main[..i]),
                    &format!("--fault {spec}"),
                )
            })?;
            s.spec = spec.trim().to_string();
            s.kind = Kind::Jump;
            s.offset_ms = if &main[i..=i] == "-" { -off } else { off };
            return Ok(s);
        }
        if kind == Kind::Clock {
            let (main, at) = match rest.split_once('@') {
                Some((m, a)) => (m, Some(a)),
                None => (rest, None),
            };
            let i = main
                .find(['+', '-'])
                .ok_or_else(|| bad("a clock fault needs +OFFSET or -OFFSET"))?;
            step.node = node_of(&main[..i])?;
            let off = dur(&main[i + 1..])?.as_millis() as i64;
            step.offset_ms = if &main[i..=i] == "-" { -off } else { off };
            if let Some(a) = at {
                step.at = dur(a)?;
            }
            return Ok(step);
        }
        let (node, time) = rest.split_once('@').ok_or_else(|| bad("no '@TIME'"))?;
        step.node = node_of(node)?;
        let (at, hold) = match time.split_once('+') {
            Some((a, h)) => (a, Some(h)),
            None => (time, None),
        };
        step.at = dur(at)?;
        if let Some(h) = hold {
            if kind == Kind::Restart {
                return Err(bad("a restart has no hold time"));
            }
            let h = dur(h)?;
            if h.is_zero() {
                return Err(bad("the hold time must be positive"));
            }
            step.hold = Some(h);
        }
        Ok(step)
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

/// Check a schedule against a cluster of `nodes` (proxied or not, in
/// network namespaces or not).
pub fn validate(steps: &[Step], nodes: usize, proxied: bool, netns: bool) -> Result<(), String> {
    for s in steps {
        if s.node >= nodes {
            return Err(format!(
                "--fault {s}: the cluster has {nodes} nodes (node-1 to node-{nodes})"
            ));
        }
        if s.kind == Kind::Partition && !proxied {
            return Err(format!(
                "--fault {s}: a partition needs internal traffic through the lab's proxy (strata cluster up --proxied)"
            ));
        }
        if matches!(s.kind, Kind::Net(_)) && !netns {
            return Err(format!(
                "--fault {s}: a network cut needs the cluster in network namespaces (strata cluster up --netns, as root)"
            ));
        }
    }
    Ok(())
}

/// What a fault does, in terms a cluster understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Kill(usize),
    /// Start again if down; if it runs, stop it gracefully first.
    Restart(usize),
    Pause(usize),
    Resume(usize),
    Partition(usize),
    Heal(usize),
    /// Restart with the wall clock off by this many milliseconds.
    Clock(usize, i64),
    /// Move the running node's clock by this many milliseconds.
    Jump(usize, i64),
    /// Cut the node off in the network.
    Cut(usize, Cut),
    /// Lift its cut.
    Mend(usize),
}

impl Action {
    /// The control socket's line for it.
    pub fn line(self) -> String {
        match self {
            Action::Kill(i) => format!("kill {i}"),
            Action::Restart(i) => format!("restart {i}"),
            Action::Pause(i) => format!("pause {i}"),
            Action::Resume(i) => format!("resume {i}"),
            Action::Partition(i) => format!("partition {i}"),
            Action::Heal(i) => format!("heal {i}"),
            Action::Clock(i, ms) => format!("clock {i} {ms}"),
            Action::Jump(i, ms) => format!("jump {i} {ms}"),
            Action::Cut(i, c) => format!("cut {i} {}", c.name()),
            Action::Mend(i) => format!("mend {i}"),
        }
    }

    pub fn parse_line(line: &str) -> Result<Action, String> {
        let mut w = line.split_whitespace();
        let (verb, i) = (w.next().unwrap_or(""), w.next().unwrap_or(""));
        let i: usize = i.parse().map_err(|_| format!("{line:?}: no node index"))?;
        Ok(match verb {
            "kill" => Action::Kill(i),
            "restart" => Action::Restart(i),
            "pause" => Action::Pause(i),
            "resume" => Action::Resume(i),
            "partition" => Action::Partition(i),
            "heal" => Action::Heal(i),
            "mend" => Action::Mend(i),
            "cut" => {
                let c = w.next().unwrap_or("");
                Action::Cut(
                    i,
                    Cut::parse(c).ok_or_else(|| format!("{line:?}: {c:?} is not a cut"))?,
                )
            }
            "clock" | "jump" => {
                let ms = w
                    .next()
                    .and_then(|m| m.parse().ok())
                    .ok_or_else(|| format!("{line:?}: no offset"))?;
                if verb == "clock" {
                    Action::Clock(i, ms)
                } else {
                    Action::Jump(i, ms)
                }
            }
            v => return Err(format!("{v:?}: not an action")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar() {
        let s = Step::parse("kill:2@20s").unwrap();
        assert_eq!(
            (s.kind, s.node, s.at, s.hold),
            (Kind::Kill, 1, Duration::from_secs(20), None)
        );
        let s = Step::parse("pause:1@10s+3s").unwrap();
        assert_eq!(
            (s.kind, s.node, s.hold),
            (Kind::Pause, 0, Some(Duration::from_secs(3)))
        );
        let s = Step::parse("partition:3@1.5+500ms").unwrap();
        assert_eq!(
            (s.at, s.hold),
            (
                Duration::from_millis(1500),
                Some(Duration::from_millis(500))
            )
        );
        let s = Step::parse("clock:2+10s").unwrap();
        assert_eq!(
            (s.kind, s.node, s.offset_ms, s.at),
            (Kind::Clock, 1, 10_000, Duration::ZERO)
        );
        let s = Step::parse("clock:3-250ms@5s").unwrap();
        assert_eq!(
            (s.node, s.offset_ms, s.at),
            (2, -250, Duration::from_secs(5))
        );
        let s = Step::parse("jump:3+30s@10s+5s").unwrap();
        assert_eq!(
            (s.kind, s.node, s.offset_ms, s.at, s.hold),
            (
                Kind::Jump,
                2,
                30_000,
                Duration::from_secs(10),
                Some(Duration::from_secs(5))
            )
        );
        assert_eq!(s.spec, "jump:3+30s@10s+5s");
        let e = Step::parse("jump:3@10s").unwrap_err();
        assert!(
            e.contains("--fault jump:3@10s") && e.contains("OFFSET"),
            "{e}"
        );
        assert_eq!(
            Step::parse("restart:2@30s").unwrap().at,
            Duration::from_secs(30)
        );
        for bad in [
            "kill",
            "kill:0@1s",
            "kill:x@1s",
            "kill:2",
            "flood:1@1s",
            "restart:1@1s+2s",
            "pause:1@1s+0s",
            "clock:2",
            "kill:2@soon",
        ] {
            let e = Step::parse(bad).unwrap_err();
            assert!(e.contains("expected KIND:NODE"), "{bad}: {e}");
        }
        let steps = [Step::parse("partition:3@1s+1s").unwrap()];
        assert!(validate(&steps, 3, false, true)
            .unwrap_err()
            .contains("--proxied"));
        assert!(validate(&steps, 3, true, false).is_ok());
        assert!(validate(&steps, 2, true, false)
            .unwrap_err()
            .contains("2 nodes"));
        for (spec, cut) in [
            ("isolate:3@10s+5s", Cut::Both),
            ("oneway:1@1s+1s", Cut::Outbound),
            ("inbound:2@1s+1s", Cut::Inbound),
            ("internal:3@1s", Cut::Internal),
        ] {
            let s = Step::parse(spec).unwrap();
            assert_eq!(s.kind, Kind::Net(cut), "{spec}");
            assert_eq!(s.kind.name(), spec.split(':').next().unwrap());
            assert!(validate(std::slice::from_ref(&s), 3, true, false)
                .unwrap_err()
                .contains("--netns"));
            assert!(validate(&[s], 3, false, true).is_ok());
        }
        assert_eq!(
            Step::parse("isolate:3@10s+5s").unwrap().hold,
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn actions_cross_the_control_socket_as_lines() {
        for a in [
            Action::Kill(0),
            Action::Restart(2),
            Action::Pause(1),
            Action::Resume(1),
            Action::Partition(0),
            Action::Heal(0),
            Action::Clock(1, -500),
            Action::Jump(2, -7),
            Action::Cut(2, Cut::Both),
            Action::Cut(0, Cut::Outbound),
            Action::Cut(1, Cut::Inbound),
            Action::Cut(1, Cut::Internal),
            Action::Mend(2),
        ] {
            assert_eq!(Action::parse_line(&a.line()), Ok(a));
        }
        assert!(Action::parse_line("explode 1").is_err());
        assert!(Action::parse_line("kill").is_err());
        assert!(Action::parse_line("cut 1 sideways").is_err());
    }
}
