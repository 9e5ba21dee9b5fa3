//! A fault schedule for a run (`--fault kill:2@20s --fault restart:2@30s
//! --fault pause:1@10s+3s --fault isolate:3@15s+5s --fault clock:2+10s`,
//! its words in `step`): the thread that injects each fault at its time
//! into a cluster the lab started (a [`LocalCluster`] in this process, or one that
//! `strata cluster up` runs, through its control socket), undoes it after
//! its hold, notes when each happened, and polls the cluster's hints until
//! the node that came back is level. Owns the schedule and its timing;
//! must not judge the run (the report and the checker do) nor know how a
//! node is started or frozen (the target does).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::fault::Backlog;
use super::local::LocalCluster;
use super::step::{Action, Kind, Step};

/// A cluster faults can be injected into.
pub trait Target {
    /// Client URLs and advertised URLs (as members name each other), in
    /// node order.
    fn urls(&self) -> Vec<String>;
    fn advertised(&self) -> Vec<String>;
    fn proxied(&self) -> bool;
    /// Whether its nodes run in network namespaces (network cuts work).
    fn netns(&self) -> bool;
    fn apply(&mut self, a: Action) -> Result<(), String>;
}

impl Target for LocalCluster {
    fn urls(&self) -> Vec<String> {
        LocalCluster::urls(self)
    }

    fn advertised(&self) -> Vec<String> {
        LocalCluster::advertised(self)
    }

    fn proxied(&self) -> bool {
        LocalCluster::proxied(self)
    }

    fn netns(&self) -> bool {
        LocalCluster::netns(self)
    }

    fn apply(&mut self, a: Action) -> Result<(), String> {
        match a {
            Action::Kill(i) => self.kill(i),
            Action::Restart(i) => {
                if self.is_running(i) {
                    self.terminate(i)?;
                }
                self.restart(i)
            }
            Action::Pause(i) => self.stop(i),
            Action::Resume(i) => self.cont(i),
            Action::Partition(i) => self.partition(i),
            Action::Heal(i) => self.heal(i),
            Action::Clock(i, ms) => {
                if self.is_running(i) {
                    self.terminate(i)?;
                }
                self.set_clock_offset(i, ms);
                self.restart(i)
            }
            Action::Jump(i, ms) => self.jump_clock(i, ms),
            Action::Cut(i, c) => self.cut(i, c),
            Action::Mend(i) => self.mend(i),
        }
    }
}

/// Something that happens at a time: a step's fault, or its undoing.
#[derive(Clone, Copy)]
struct Event {
    at: Duration,
    step: usize,
    undo: bool,
}

/// How long after the run the schedule still waits for a node that came
/// back during it to be level.
pub const LEVEL_LIMIT: Duration = Duration::from_secs(30);

/// Run `during` (the load) while the schedule's faults are injected into
/// `target`, times counted from `origin`. When `during` returns, faults
/// still in force are undone (killed nodes started again, paused ones
/// continued, partitions healed), and nodes that came back during the run
/// are given up to [`LEVEL_LIMIT`] to be level. The marks are in the
/// steps' order; `recovered_after_s` is left for the caller, who has the
/// timeline.
pub fn run_during<T: Target + Send, R>(
    steps: &[Step],
    target: &mut T,
    origin: Instant,
    during: impl FnOnce() -> R,
) -> (R, Vec<FaultMark>) {
    let done = AtomicBool::new(false);
    let (urls, adv) = (target.urls(), target.advertised());
    let (back_tx, back_rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        let injector = scope.spawn(|| inject(steps, target, origin, &done, back_tx));
        // Asking every node for its hints can take a while (a paused node
        // answers nothing until its timeout): on a thread of its own, so
        // that it never delays a fault.
        let leveler = scope.spawn(|| level_times(&urls, &adv, back_rx));
        let r = during();
        done.store(true, Ordering::Relaxed);
        let mut marks = injector.join().unwrap_or_else(|_| {
            steps
                .iter()
                .map(|s| mark(s, 0.0, Some("the fault thread panicked".into())))
                .collect()
        });
        for (k, secs) in leveler.join().unwrap_or_default() {
            marks[k].level_after_s = Some(secs);
        }
        (r, marks)
    })
}

/// A node that came back: the step whose mark gets its level time, the
/// node, and when it came back.
type Back = (usize, usize, Instant);

/// Poll the nodes that came back until nothing concerning them is
/// pending; each one's step and seconds from its return. Once the
/// injector is done (the channel closes), those still pending get up to
/// [`LEVEL_LIMIT`].
fn level_times(
    urls: &[String],
    adv: &[String],
    rx: std::sync::mpsc::Receiver<Back>,
) -> Vec<(usize, f64)> {
    let mut pending: Vec<Back> = Vec::new();
    let mut out = Vec::new();
    let mut deadline = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(b) => pending.push(b),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                if deadline.is_none() {
                    deadline = Some(Instant::now() + LEVEL_LIMIT);
                }
                if pending.is_empty() || deadline.is_some_and(|d| Instant::now() >= d) {
                    return out;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        pending.retain(|&(k, i, back)| {
            let level = matches!(Backlog::of(urls, adv, i), Ok(b) if b.toward == 0 && b.held == 0);
            if level {
                out.push((k, back.elapsed().as_secs_f64()));
            }
            !level
        });
    }
}

fn mark(s: &Step, at_s: f64, error: Option<String>) -> FaultMark {
    FaultMark {
        spec: s.spec.clone(),
        kind: s.kind.name().into(),
        node: s.node + 1,
        at_s,
        until_s: None,
        level_after_s: None,
        recovered_after_s: None,
        error,
    }
}

fn inject<T: Target>(
    steps: &[Step],
    target: &mut T,
    origin: Instant,
    done: &AtomicBool,
    back: std::sync::mpsc::Sender<Back>,
) -> Vec<FaultMark> {
    let mut events: Vec<Event> = Vec::new();
    for (k, s) in steps.iter().enumerate() {
        events.push(Event {
            at: s.at,
            step: k,
            undo: false,
        });
        if let Some(h) = s.hold {
            events.push(Event {
                at: s.at + h,
                step: k,
                undo: true,
            });
        }
    }
    events.sort_by_key(|e| (e.at, e.undo, e.step));
    let mut marks: Vec<Option<FaultMark>> = vec![None; steps.len()];
    // Faults in force, by step: undone at the end if still there.
    let mut in_force: Vec<bool> = vec![false; steps.len()];
    // Nodes that came back go to the level poller (a closed poller is
    // no reason to stop injecting).
    let leveling = |b: Back| {
        let _ = back.send(b);
    };
    let now_s = || origin.elapsed().as_secs_f64();
    let mut next = 0;
    while !done.load(Ordering::Relaxed) {
        if next < events.len() && origin + events[next].at <= Instant::now() {
            let e = events[next];
            next += 1;
            let s = &steps[e.step];
            let i = s.node;
            if !e.undo {
                let action = match s.kind {
                    Kind::Kill => Action::Kill(i),
                    Kind::Restart => Action::Restart(i),
                    Kind::Pause => Action::Pause(i),
                    Kind::Partition => Action::Partition(i),
                    Kind::Clock => Action::Clock(i, s.offset_ms),
                    Kind::Jump => Action::Jump(i, s.offset_ms),
                    Kind::Net(c) => Action::Cut(i, c),
                };
                let at_s = now_s();
                let r = target.apply(action);
                let mut m = mark(s, at_s, r.as_ref().err().cloned());
                if r.is_ok() {
                    match s.kind {
                        Kind::Restart | Kind::Clock => {
                            m.until_s = Some(now_s());
                            // A restart ends an earlier kill of the node.
                            for (k, f) in in_force.iter_mut().enumerate() {
                                if *f && steps[k].node == i && steps[k].kind == Kind::Kill {
                                    *f = false;
                                    if let Some(km) = marks[k].as_mut() {
                                        km.until_s = m.until_s;
                                    }
                                    leveling((k, i, Instant::now()));
                                }
                            }
                            leveling((e.step, i, Instant::now()));
                        }
                        _ => {
                            in_force[e.step] = true;
                            // The hold runs from when the fault took effect
                            // (an injection can be late on a busy machine).
                            if let Some(h) = s.hold {
                                let undo_at = origin.elapsed() + h;
                                for u in &mut events[next..] {
                                    if u.undo && u.step == e.step {
                                        u.at = u.at.max(undo_at);
                                    }
                                }
                                events[next..].sort_by_key(|e| (e.at, e.undo, e.step));
                            }
                        }
                    }
                }
                marks[e.step] = Some(m);
            } else if in_force[e.step] {
                in_force[e.step] = false;
                let r = target.apply(undo_of(s));
                if let Some(m) = marks[e.step].as_mut() {
                    match r {
                        Ok(()) => {
                            m.until_s = Some(now_s());
                            leveling((e.step, i, Instant::now()));
                        }
                        Err(err) => m.error = Some(err),
                    }
                }
            }
            continue;
        }
        let wait = events
            .get(next)
            .map(|e| (origin + e.at).saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(50))
            .min(Duration::from_millis(20));
        std::thread::sleep(wait);
    }
    // The run is over: undo what is still in force, so the cluster is
    // left whole.
    for (k, f) in in_force.iter().enumerate() {
        if *f {
            if let Err(err) = target.apply(undo_of(&steps[k])) {
                if let Some(m) = marks[k].as_mut() {
                    m.error.get_or_insert(err);
                }
            }
        }
    }
    steps
        .iter()
        .zip(marks)
        .map(|(s, m)| {
            m.unwrap_or_else(|| mark(s, 0.0, Some("not reached before the run ended".into())))
        })
        .collect()
}

fn undo_of(s: &Step) -> Action {
    match s.kind {
        Kind::Kill | Kind::Restart | Kind::Clock => Action::Restart(s.node),
        Kind::Pause => Action::Resume(s.node),
        Kind::Partition => Action::Heal(s.node),
        Kind::Jump => Action::Jump(s.node, -s.offset_ms),
        Kind::Net(_) => Action::Mend(s.node),
    }
}

/// Fill in each mark's `recovered_after_s` from the run's timeline:
/// `seconds` are (start of the second, successful requests in it). The
/// level before a fault is the mean of the (up to 10) whole seconds before
/// it was injected, and never above `offered` (the rate the schedule
/// sends, when it has one: a second of catch-up after the generator fell
/// behind answers more than the rate, and a level it set could never be
/// met again at the rate itself); the cluster has recovered at the first
/// second, from the node's return (or the injection, for a fault not
/// undone), that starts three in a row at 95% of that level or more.
pub fn recovery(marks: &mut [FaultMark], seconds: &[(f64, f64)], offered: Option<f64>) {
    for m in marks.iter_mut() {
        let before: Vec<f64> = seconds
            .iter()
            .filter(|(t, _)| *t + 1.0 <= m.at_s && *t + 10.0 >= m.at_s)
            .map(|(_, ok)| *ok)
            .collect();
        if before.is_empty() {
            continue;
        }
        let level = before.iter().sum::<f64>() / before.len() as f64;
        let level = offered.map_or(level, |o| level.min(o));
        let from = m.until_s.unwrap_or(m.at_s);
        let after: Vec<&(f64, f64)> = seconds.iter().filter(|(t, _)| *t + 1.0 > from).collect();
        for w in after.windows(3) {
            if w.iter().all(|(_, ok)| *ok >= 0.95 * level) {
                m.recovered_after_s = Some((w[0].0 - from).max(0.0));
                break;
            }
        }
    }
}

/// A fault injected during a run, on the report's time axis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultMark {
    /// As given, e.g. `kill:2@20s`, `pause:1@10s+3s`.
    pub spec: String,
    /// `kill`, `restart`, `pause`, `partition` or `clock`.
    pub kind: String,
    /// 1-based, as in the spec.
    pub node: usize,
    /// When it was injected, relative to the run start (seconds).
    pub at_s: f64,
    /// When it was undone (the node restarted and serving, continued,
    /// healed), if it was during the run.
    pub until_s: Option<f64>,
    /// Seconds from the node's return until the cluster held no hints for
    /// it any more (it was level), if seen before the run ended.
    pub level_after_s: Option<f64>,
    /// Seconds from the node's return (from the injection, for a fault
    /// that was not undone) until the successful rate was back to its
    /// level before the fault, if it came back during the run.
    pub recovered_after_s: Option<f64>,
    /// What went wrong injecting it, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_is_undone_by_its_opposite() {
        let s = Step::parse("jump:3+30s@10s+5s").unwrap();
        assert_eq!(undo_of(&s), Action::Jump(2, -30_000));
        let s = Step::parse("isolate:2@1s+1s").unwrap();
        assert_eq!(undo_of(&s), Action::Mend(1));
        let s = Step::parse("pause:1@1s+1s").unwrap();
        assert_eq!(undo_of(&s), Action::Resume(0));
    }

    /// A cluster that only writes down what it was told, with the time.
    struct Log(Vec<(Action, Instant)>);

    impl Target for Log {
        fn urls(&self) -> Vec<String> {
            vec![]
        }
        fn advertised(&self) -> Vec<String> {
            vec![]
        }
        fn proxied(&self) -> bool {
            true
        }
        fn netns(&self) -> bool {
            true
        }
        fn apply(&mut self, a: Action) -> Result<(), String> {
            self.0.push((a, Instant::now()));
            Ok(())
        }
    }

    #[test]
    fn faults_happen_in_order_and_are_undone_by_the_end() {
        let steps: Vec<Step> = [
            "pause:1@50ms+100ms",
            "kill:2@100ms",
            "partition:3@120ms+10s",
            "restart:2@200ms",
        ]
        .iter()
        .map(|s| Step::parse(s).unwrap())
        .collect();
        let mut log = Log(vec![]);
        let origin = Instant::now();
        let (_, marks) = run_during(&steps, &mut log, origin, || {
            std::thread::sleep(Duration::from_millis(400))
        });
        let actions: Vec<Action> = log.0.iter().map(|(a, _)| *a).collect();
        assert_eq!(
            actions,
            [
                Action::Pause(0),
                Action::Kill(1),
                Action::Partition(2),
                Action::Resume(0),
                Action::Restart(1),
                // The partition's hold outlasts the run: healed at its end.
                Action::Heal(2),
            ]
        );
        // Never early.
        for ((a, t), want) in log.0.iter().zip([50, 100, 120, 150, 200, 400]) {
            assert!(
                t.duration_since(origin) >= Duration::from_millis(want),
                "{a:?}"
            );
        }
        assert!(marks[0].until_s.is_some(), "the pause ended");
        assert!(
            marks[1].until_s.unwrap() >= 0.2,
            "the kill ended at the restart"
        );
        assert_eq!(marks[2].until_s, None, "the partition outlasted the run");
        assert_eq!(marks[3].node, 2);
        assert!(marks.iter().all(|m| m.error.is_none()));
    }

    #[test]
    fn recovery_is_three_seconds_back_at_the_level_before() {
        let mut m = mark(&Step::parse("kill:2@5s+2s").unwrap(), 5.0, None);
        m.until_s = Some(7.0);
        // 100/s, a dip while it is down and two seconds after, then back.
        let ok = [
            100., 100., 100., 100., 100., 40., 40., 60., 90., 99., 100., 98.,
        ];
        let seconds: Vec<(f64, f64)> = ok.iter().enumerate().map(|(i, v)| (i as f64, *v)).collect();
        let mut marks = [m];
        recovery(&mut marks, &seconds, None);
        assert_eq!(marks[0].recovered_after_s, Some(2.0), "from second 9 on");
        // A second of catch-up before the fault (the generator behind,
        // then sending what it owed) answers more than the offered 100/s:
        // the level is the offered rate, which the run meets again.
        let mut burst = seconds.clone();
        burst[3].1 = 300.0;
        let mut marks_b = [marks[0].clone()];
        marks_b[0].recovered_after_s = None;
        recovery(&mut marks_b, &burst, None);
        assert_eq!(marks_b[0].recovered_after_s, None, "an inflated level");
        recovery(&mut marks_b, &burst, Some(100.0));
        assert_eq!(marks_b[0].recovered_after_s, Some(2.0));
        // Never back: none.
        let mut marks = [marks[0].clone()];
        marks[0].recovered_after_s = None;
        let low: Vec<(f64, f64)> = seconds
            .iter()
            .map(|(t, v)| (*t, if *t >= 5.0 { 10.0 } else { *v }))
            .collect();
        recovery(&mut marks, &low, Some(100.0));
        assert_eq!(marks[0].recovered_after_s, None);
    }
}
