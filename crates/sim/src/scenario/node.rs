//! A node's scenario as a TOML file has it: the clients (`super`), the
//! pipeline of stages in order (delay, admission, workers, store, group
//! commit), the run's length and seed. Owns the format, its checks, saving
//! back to TOML, and `PARAM=VALUE` overrides (what `--set`, `--clients` and
//! `--sweep` change); must not run anything.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dist::DistSpec;
use crate::units::Dur;

use super::{check_run, default_seed, is_false, is_zero, Clients};

fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_all(o: &Only) -> bool {
    *o == Only::All
}
fn default_duration() -> Dur {
    Dur(60_000_000_000)
}
fn default_batch() -> u32 {
    512
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The measured window of virtual time.
    #[serde(default = "default_duration")]
    pub duration: Dur,
    /// Virtual time simulated before the window and left out of every
    /// figure.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup: Dur,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Free text shown under the report's title (calibration writes how it
    /// derived each figure here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The runtime's timer, for the stages and clients that wait on it
    /// (`timer = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer: Option<Timer>,
    pub clients: Clients,
    pub stages: Vec<Stage>,
}

/// A timer as a runtime implements it: a wheel of `tick`s counted from the
/// start of the run, turned by one thread that sleeps until the next due
/// tick. tokio's (the seed program's runtime) has 1 ms ticks: a sleep's
/// deadline is rounded up to a whole tick, and every timer due when the
/// thread wakes fires at that instant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timer {
    pub tick: Dur,
    /// The operating system's slack on the timer thread's own sleep: a
    /// sleep of T ends min(T × fraction, max) late (macOS coalesces
    /// timers so; see docs/simulator.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<Slack>,
    /// How long a woken thread takes to run: the clients' thread after a
    /// timer fired for it or a permit was handed to it, a write's task
    /// after it was spawned, the timer thread after a new, earlier
    /// deadline woke it. Clients woken together run together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup: Option<DistSpec>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slack {
    pub fraction: f64,
    pub max: Dur,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Only {
    #[default]
    All,
    Reads,
    Writes,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Wait for a permit in arrival order (tokio's semaphore).
    #[default]
    Fifo,
    /// Wait, the newest first.
    Lifo,
    /// No waiting: refuse when no permit is free.
    Refuse,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    /// The request waits for its write.
    #[default]
    Sync,
    /// The request goes on once its write is queued; permits it holds stay
    /// held until the write ends.
    Async,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExceed {
    /// A write that finds every slot taken waits for one.
    #[default]
    Queue,
    /// A write that finds every slot taken fails at once (the store's
    /// limit is a hard one); the report counts and shouts about it.
    Fail,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Stage {
    /// A pure delay with no limit on concurrency (a network hop).
    Delay {
        name: String,
        #[serde(default, skip_serializing_if = "is_all")]
        only: Only,
        #[serde(default, skip_serializing_if = "is_zero")]
        tick: Dur,
        /// The delay is a sleep on the scenario's `timer`.
        #[serde(default, skip_serializing_if = "is_false")]
        timer: bool,
        delay: DistSpec,
    },
    /// Permits: a request takes one here and keeps it until it leaves the
    /// stage `release_after` (default: the last stage that is not a delay)
    /// and every asynchronous write it started there has ended.
    Admission {
        name: String,
        #[serde(default, skip_serializing_if = "is_all")]
        only: Only,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permits: Option<u32>,
        /// Permits = this × the number of closed-loop clients (the seed
        /// report's "fix").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permits_per_client: Option<u32>,
        #[serde(default)]
        policy: Policy,
        /// Most requests waiting; more are refused at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_waiting: Option<u32>,
        /// Longest wait; a request still waiting then is refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_wait: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        release_after: Option<String>,
    },
    /// `servers` identical servers in front of one FIFO queue.
    Workers {
        name: String,
        #[serde(default, skip_serializing_if = "is_all")]
        only: Only,
        servers: u32,
        #[serde(default, skip_serializing_if = "is_zero")]
        tick: Dur,
        service: DistSpec,
        /// Each server loses its core now and then (another process's time
        /// slice, the host's): a request it serves waits out the stall.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stalls: Option<Stalls>,
    },
    /// A store taking writes (reads pass through): at most `max_concurrent`
    /// at once, each split into `parts` parts that take `latency` each.
    Store {
        name: String,
        max_concurrent: u32,
        #[serde(default)]
        write: WriteMode,
        #[serde(default)]
        on_exceed: OnExceed,
        #[serde(default = "one", skip_serializing_if = "is_one")]
        parts: u32,
        #[serde(default, skip_serializing_if = "is_zero")]
        tick: Dur,
        /// A write is a task spawned on another thread that sleeps on the
        /// scenario's `timer` for its latency, then releases its slot.
        #[serde(default, skip_serializing_if = "is_false")]
        timer: bool,
        latency: DistSpec,
    },
    /// Group commit (a WAL): one leader at a time takes every waiting write
    /// (at most `max_batch`) and makes them durable with one fsync.
    GroupCommit {
        name: String,
        #[serde(default = "default_batch")]
        max_batch: u32,
        #[serde(default)]
        write: WriteMode,
        fsync: DistSpec,
        /// Added to a group's time once per write in it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per_write: Option<DistSpec>,
    },
}

fn one() -> u32 {
    1
}

/// A server's stalls: `per_second` of them a second, each `length` long
/// (a CPU server of a node: its threads off their cores, as the node's
/// pause detector saw it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stalls {
    pub per_second: f64,
    pub length: DistSpec,
}

impl Stage {
    pub fn name(&self) -> &str {
        match self {
            Stage::Delay { name, .. }
            | Stage::Admission { name, .. }
            | Stage::Workers { name, .. }
            | Stage::Store { name, .. }
            | Stage::GroupCommit { name, .. } => name,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Stage::Delay { .. } => "delay",
            Stage::Admission { .. } => "admission",
            Stage::Workers { .. } => "workers",
            Stage::Store { .. } => "store",
            Stage::GroupCommit { .. } => "group_commit",
        }
    }

    /// Which requests visit the stage (stores take writes only).
    pub fn only(&self) -> Only {
        match self {
            Stage::Delay { only, .. }
            | Stage::Admission { only, .. }
            | Stage::Workers { only, .. } => *only,
            Stage::Store { .. } | Stage::GroupCommit { .. } => Only::Writes,
        }
    }
}

impl Scenario {
    pub fn from_toml(text: &str) -> Result<Scenario, String> {
        let s: Scenario = toml::from_str(text).map_err(|e| e.to_string())?;
        s.check()?;
        Ok(s)
    }

    /// Read a scenario file; returns it and the directory its relative
    /// paths start from.
    pub fn load(path: &Path) -> Result<(Scenario, PathBuf), String> {
        super::load(path, Scenario::from_toml)
    }

    pub fn to_toml(&self) -> Result<String, String> {
        toml::to_string_pretty(self).map_err(|e| format!("cannot write the scenario as TOML: {e}"))
    }

    /// Whether any stage or the clients wait on the scenario's timer.
    pub fn uses_timer(&self) -> bool {
        matches!(self.clients, Clients::Closed { timer: true, .. })
            || self.stages.iter().any(|s| {
                matches!(
                    s,
                    Stage::Delay { timer: true, .. } | Stage::Store { timer: true, .. }
                )
            })
    }

    /// The number of closed-loop clients, if closed.
    pub fn client_count(&self) -> Option<u32> {
        match &self.clients {
            Clients::Closed { count, .. } => Some(*count),
            Clients::Open { .. } => None,
        }
    }

    /// Consistency checks beyond the format.
    pub fn check(&self) -> Result<(), String> {
        if self.stages.is_empty() {
            return Err("a scenario needs at least one stage".into());
        }
        check_run(self.duration, &self.clients)?;
        if let Some(t) = &self.timer {
            if t.tick.0 == 0 {
                return Err("timer.tick must be > 0".into());
            }
            if let Some(sl) = &t.slack {
                if !(0.0..=1.0).contains(&sl.fraction) {
                    return Err(format!(
                        "timer.slack.fraction {} must be within 0..=1",
                        sl.fraction
                    ));
                }
            }
        }
        if self.timer.is_none() && self.uses_timer() {
            return Err("timer = true needs a [timer] section (its tick at least)".into());
        }
        if let Clients::Closed {
            timer: true, tick, ..
        } = &self.clients
        {
            if tick.0 > 0 {
                return Err("clients: give tick or timer = true, not both".into());
            }
        }
        let mut admissions = 0;
        for (i, st) in self.stages.iter().enumerate() {
            let name = st.name();
            if name.is_empty() || name.contains('.') || name.contains('=') {
                return Err(format!(
                    "stage {i}: a name must be non-empty, without '.' or '='"
                ));
            }
            if matches!(
                name,
                "clients" | "duration" | "warmup" | "seed" | "name" | "description" | "timer"
            ) {
                return Err(format!("stage name {name:?} is reserved"));
            }
            if self.stages[..i].iter().any(|o| o.name() == name) {
                return Err(format!("two stages are named {name:?}"));
            }
            if let Stage::Delay {
                timer: true, tick, ..
            }
            | Stage::Store {
                timer: true, tick, ..
            } = st
            {
                if tick.0 > 0 {
                    return Err(format!("{name}: give tick or timer = true, not both"));
                }
            }
            match st {
                Stage::Admission {
                    permits,
                    permits_per_client,
                    release_after,
                    ..
                } => {
                    admissions += 1;
                    match (permits, permits_per_client) {
                        (Some(_), Some(_)) => {
                            return Err(format!(
                                "{name}: give permits or permits_per_client, not both"
                            ))
                        }
                        (None, None) => return Err(format!("{name}: permits is missing")),
                        (Some(0), _) | (_, Some(0)) => {
                            return Err(format!("{name}: permits must be >= 1"))
                        }
                        (None, Some(_)) if self.client_count().is_none() => {
                            return Err(format!(
                                "{name}: permits_per_client needs closed-loop clients"
                            ))
                        }
                        _ => {}
                    }
                    if let Some(r) = release_after {
                        match self.stages.iter().position(|o| o.name() == r) {
                            Some(j) if j > i => {}
                            Some(_) => {
                                return Err(format!(
                                    "{name}: release_after {r:?} must name a later stage"
                                ))
                            }
                            None => {
                                return Err(format!("{name}: release_after {r:?}: no such stage"))
                            }
                        }
                    }
                }
                Stage::Workers { servers: 0, .. } => {
                    return Err(format!("{name}: servers must be >= 1"))
                }
                Stage::Workers {
                    stalls: Some(st), ..
                } if !(st.per_second.is_finite() && st.per_second >= 0.0) => {
                    return Err(format!("{name}: stalls.per_second must be >= 0"))
                }
                Stage::Store {
                    max_concurrent,
                    parts,
                    ..
                } => {
                    if *max_concurrent == 0 || *parts == 0 {
                        return Err(format!("{name}: max_concurrent and parts must be >= 1"));
                    }
                    if *parts > u16::MAX as u32 {
                        return Err(format!("{name}: at most {} parts", u16::MAX));
                    }
                }
                Stage::GroupCommit { max_batch: 0, .. } => {
                    return Err(format!("{name}: max_batch must be >= 1"))
                }
                _ => {}
            }
        }
        if admissions > 2 {
            return Err("at most two admission stages".into());
        }
        if self.stages.len() > u16::MAX as usize - 1 {
            return Err("too many stages".into());
        }
        Ok(())
    }

    /// Apply `PARAM=VALUE` overrides, in order (see [`set_param`]).
    pub fn with_overrides(&self, sets: &[(String, String)]) -> Result<Scenario, String> {
        super::overridden(self, sets, super::set_param, Scenario::check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scenario::examples::NODE as SEED;

    #[test]
    fn parse_save_and_reload() {
        let s = Scenario::from_toml(SEED).unwrap();
        assert_eq!(s.stages.len(), 3);
        let text = s.to_toml().unwrap();
        let back = Scenario::from_toml(&text).unwrap();
        assert_eq!(back, s, "{text}");
    }

    #[test]
    fn overrides() {
        let s = Scenario::from_toml(SEED).unwrap();
        let o = s
            .with_overrides(&[
                ("clients".into(), "1000".into()),
                ("semaphore.permits".into(), "16".into()),
                ("store.latency.sd".into(), "0.1ms".into()),
                ("semaphore.policy".into(), "lifo".into()),
                ("duration".into(), "2s".into()),
            ])
            .unwrap();
        assert_eq!(o.client_count(), Some(1000));
        assert_eq!(o.duration, Dur(2_000_000_000));
        match &o.stages[1] {
            Stage::Admission {
                permits, policy, ..
            } => {
                assert_eq!(*permits, Some(16));
                assert_eq!(*policy, Policy::Lifo);
            }
            _ => unreachable!(),
        }
        let e = s
            .with_overrides(&[("nope.x".into(), "1".into())])
            .unwrap_err();
        assert!(e.contains("no stage named"), "{e}");
        let e = s
            .with_overrides(&[("semaphore.permits".into(), "0".into())])
            .unwrap_err();
        assert!(e.contains("permits must be >= 1"), "{e}");
    }

    #[test]
    fn timer_checks_and_off() {
        let on = SEED
            .replace("[clients]", "[timer]\ntick = \"1ms\"\n[clients]")
            .replace("kind = \"delay\"", "kind = \"delay\"\ntimer = true");
        let s = Scenario::from_toml(&on).unwrap();
        assert!(s.uses_timer());
        let off = s.with_overrides(&[("timer".into(), "off".into())]).unwrap();
        assert!(off.timer.is_none() && !off.uses_timer());
        let e = Scenario::from_toml(
            &SEED.replace("kind = \"delay\"", "kind = \"delay\"\ntimer = true"),
        )
        .unwrap_err();
        assert!(e.contains("needs a [timer]"), "{e}");
        let e = Scenario::from_toml(&on.replace("timer = true", "timer = true\ntick = \"1ms\""))
            .unwrap_err();
        assert!(e.contains("not both"), "{e}");
        let e = s
            .with_overrides(&[("timer".into(), "on".into())])
            .unwrap_err();
        assert!(e.contains("only timer=off"), "{e}");
        // `--set timer.tick=…` starts the section where there is none.
        let t = Scenario::from_toml(SEED)
            .unwrap()
            .with_overrides(&[
                ("timer.tick".into(), "1ms".into()),
                ("net.timer".into(), "true".into()),
            ])
            .unwrap();
        assert!(t.uses_timer());
    }

    #[test]
    fn checks() {
        let bad = SEED.replace("name = \"store\"", "name = \"net\"");
        assert!(Scenario::from_toml(&bad)
            .unwrap_err()
            .contains("two stages"));
        let bad = SEED.replace("permits = 8", "permits = 8\nrelease_after = \"net\"");
        assert!(Scenario::from_toml(&bad)
            .unwrap_err()
            .contains("later stage"));
        let bad = SEED.replace("max_concurrent = 8", "max_concurrent = 8\nbogus = 1");
        assert!(Scenario::from_toml(&bad).is_err());
    }
}
