//! One node's pipeline in virtual time: clients send requests through the
//! stages of a node scenario (`scenario::node`) in order (delay, admission, workers, store, group commit),
//! one event at a time from the queue in `des`. Requests, writes and
//! admission permits live in slabs (vectors with free lists), queues are
//! `VecDeque`s of slab indices, and nothing on the hot path allocates or
//! hashes; a wait on the runtime's timer goes through `timer`, which says
//! when it ends. Owns the stages' behaviour and the raw counts a run produces
//! (probe counts, latency histograms, time-weighted means); must not
//! interpret them or format them (that is `report::node`).
//!
//! Here: the state, its records and the event loop; `events` what each
//! event does; `stalls` a CPU server's stalls.

use std::collections::VecDeque;
use std::path::Path;

use crate::des::{same_gen, Ev, EventQueue, Slab};
use crate::dist::Sampler;
use crate::model::{Latency, EV_ARRIVAL, EV_WAKE, F_FAILED, F_WAITING, F_WRITE};
use crate::rng::SimRng;
use crate::scenario::node::{OnExceed, Only, Policy, Scenario, Stage, WriteMode};
use crate::scenario::{Arrivals, Clients, Start};
use crate::timer::{Slept, TimerRt};

mod events;
mod stalls;

use stalls::{serve_stalled, StallRt};

const NONE: u32 = u32::MAX;

const EV_DELAY: u8 = 2;
const EV_WORK: u8 = 3;
const EV_PART: u8 = 4;
const EV_GROUP: u8 = 5;
const EV_TIMEOUT: u8 = 6;
/// The timer thread wakes (index unused; the generation tags the wake).
const EV_TIMER: u8 = 7;
/// A request handed a permit (or its synchronous write) goes on, once
/// the clients' thread runs.
const EV_RESUME: u8 = 8;

#[derive(Clone, Copy)]
struct Req {
    start: u64,
    /// When it entered its current stage (or queue).
    mark: u64,
    client: u32,
    gen: u32,
    stage: u16,
    flags: u8,
    tickets: [u32; 2],
}

#[derive(Clone, Copy)]
struct Write {
    start: u64,
    /// The request waiting for it (sync), or NONE.
    req: u32,
    stage: u16,
    parts_left: u16,
    parts_unstarted: u16,
    /// Permits the write holds (async writes share their request's).
    tickets: [u32; 2],
}

#[derive(Clone, Copy)]
struct Ticket {
    refs: u16,
    stage: u16,
    release_at: u16,
    acquired: u64,
    /// Time its holders spent queued in later stages while holding it.
    queued: u64,
}

/// A level that changes at instants, averaged over the measured window.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeAvg {
    level: i64,
    last: u64,
    area: f64,
    pub peak: i64,
    /// The level when the window opened (once something changed in it).
    start: Option<i64>,
}

impl TimeAvg {
    #[inline]
    fn add(&mut self, now: u64, t0: u64, delta: i64) {
        if now > t0 {
            let from = self.last.max(t0);
            self.area += self.level as f64 * (now - from) as f64;
        }
        if now >= t0 && self.start.is_none() {
            self.start = Some(self.level);
        }
        self.last = now;
        self.level += delta;
        if self.level > self.peak && now >= t0 {
            self.peak = self.level;
        }
    }
    /// The mean over [t0, end] (after `close`).
    pub fn mean(&self, window_ns: u64) -> f64 {
        self.area / window_ns as f64
    }
    pub fn level(&self) -> i64 {
        self.level
    }
    /// The level when the window opened.
    pub fn start_level(&self) -> i64 {
        self.start.unwrap_or(self.level)
    }
    fn close(&mut self, end: u64, t0: u64) {
        self.add(end, t0, 0);
    }
}

/// The seed's probes, counted over the window, plus what it did not have.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Probes {
    pub request_start: u64,
    pub request_block: u64,
    pub request_nonblock: u64,
    pub request_done: u64,
    pub persist_start: u64,
    pub persist_done: u64,
    /// Not in the seed: refused at admission (no room to wait, or the
    /// `refuse` policy), refused after `max_wait`, writes failed on a full
    /// store, requests answered with a failure, arrivals dropped by the
    /// open loop's `max_in_flight` guard.
    pub request_refused: u64,
    pub request_timeout: u64,
    pub persist_failed: u64,
    pub request_failed: u64,
    pub arrivals_dropped: u64,
}

/// What a stage measured over the window.
#[derive(Clone, Debug, Default)]
pub struct StageStats {
    pub arrivals: u64,
    pub departures: u64,
    /// Sum of the time spent in the stage by those that left it.
    pub residence_ns: f64,
    /// In the stage (waiting or served; for stores, writes).
    pub in_stage: TimeAvg,
    /// Servers, slots or permits in use; a group commit's leader.
    pub busy: TimeAvg,
    pub queue: TimeAvg,
    pub service_ns: f64,
    pub service_n: u64,
    pub wait_ns: f64,
    pub wait_n: u64,
    // admission
    pub nonblock: u64,
    pub block: u64,
    pub refused: u64,
    pub timeouts: u64,
    pub hold_ns: f64,
    pub hold_service_ns: f64,
    pub hold_n: u64,
    // stores
    pub failed: u64,
    pub batches: u64,
    pub batch_writes: u64,
}

enum Rt {
    Delay {
        d: Sampler,
        tick: u64,
        timer: bool,
    },
    Admission {
        permits: u32,
        policy: Policy,
        max_waiting: u32,
        max_wait: u64,
        release_at: u16,
        in_use: u32,
        waiting: u32,
        queue: VecDeque<(u32, u32)>,
    },
    Workers {
        servers: u32,
        d: Sampler,
        tick: u64,
        busy: u32,
        queue: VecDeque<u32>,
        stalls: Option<StallRt>,
    },
    Store {
        slots: u32,
        d: Sampler,
        tick: u64,
        timer: bool,
        sync: bool,
        fail: bool,
        parts: u16,
        busy: u32,
        queue: VecDeque<u32>,
    },
    Group {
        max_batch: u32,
        fsync: Sampler,
        per_write: Option<Sampler>,
        sync: bool,
        busy: bool,
        queue: VecDeque<u32>,
        batch: Vec<u32>,
    },
}

/// Draw a service time from `d` and count it if the window is open.
#[inline]
fn serve(d: &Sampler, rng: &mut SimRng, st: &mut StageStats, win: bool) -> u64 {
    let x = d.sample(rng);
    if win {
        st.service_n += 1;
        st.service_ns += x as f64;
    }
    x
}

struct StageRt {
    only: Only,
    rt: Rt,
    rng: SimRng,
    st: StageStats,
}

/// Static facts about a stage, for analysis and reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StageInfo {
    pub name: String,
    pub kind: &'static str,
    pub only: Only,
    /// Servers, slots, permits or the batch size; 0 for a delay.
    pub servers: u32,
    /// Mean service (delay, worker service, store part latency, fsync)
    /// from the distribution, in ns.
    pub mean_service_ns: f64,
    /// Mean added per write of a group (group commit).
    pub mean_per_write_ns: f64,
    pub parts: u32,
    pub sync: bool,
    pub fail_on_exceed: bool,
    pub policy: Option<Policy>,
    pub max_waiting: Option<u32>,
    pub max_wait_ns: Option<u64>,
    pub release_after: Option<String>,
    pub describe: String,
}

enum ClientsRt {
    Closed {
        think: Sampler,
        tick: u64,
        timer: bool,
    },
    Open {
        mean_gap: f64,
        poisson: bool,
        max_in_flight: u32,
    },
}

/// Everything a run measured.
pub struct Run {
    pub scenario: Scenario,
    pub seed: u64,
    pub window_ns: u64,
    pub warmup_ns: u64,
    pub probes: Probes,
    pub lifetime: Latency,
    pub persist: Latency,
    /// Lifetimes as the seed's request-lifetime.sh measured them with
    /// every client on one OS thread: one start kept per thread (the last
    /// one), taken by the next request done, whichever request that is.
    pub thread_lifetime: Latency,
    pub stages: Vec<StageStats>,
    pub info: Vec<StageInfo>,
    /// Requests in the system (start to done), time-averaged.
    pub in_system: TimeAvg,
    pub events: u64,
    pub wall_s: f64,
    /// Requests in flight when the run ended.
    pub in_flight_end: u64,
    pub mean_think_ns: f64,
}

pub struct Sim {
    now: u64,
    t0: u64,
    end: u64,
    q: EventQueue,
    reqs: Slab<Req>,
    writes: Slab<Write>,
    tickets: Slab<Ticket>,
    stages: Vec<StageRt>,
    info: Vec<StageInfo>,
    clients: ClientsRt,
    client_rng: SimRng,
    write_fraction: f64,
    /// Requests that completed a stage and must go on (filled by permit
    /// hand-overs, drained by the loop, so that no call recurses).
    ready: Vec<(u32, u16)>,
    probes: Probes,
    lifetime: Latency,
    persist: Latency,
    thread_lifetime: Latency,
    /// The one thread's kept start (the seed's `self->t`), if any.
    thread_start: Option<u64>,
    in_system: TimeAvg,
    events: u64,
    scenario: Scenario,
    seed: u64,
    /// The runtime's timer, if the scenario has one.
    timer: Option<TimerRt>,
    fired: Vec<(Ev, u64)>,
}

/// Schedule `ev` for `t`: as a sleep on the runtime's timer (`on_timer`),
/// else at `t` rounded up to a multiple of `tick` (0: at `t`).
#[inline]
fn sleep_until(
    q: &mut EventQueue,
    timer: &mut Option<TimerRt>,
    on_timer: bool,
    now: u64,
    t: u64,
    tick: u64,
    ev: Ev,
) {
    if on_timer {
        let tm = timer.as_mut().expect("checked: timer = true needs [timer]");
        match tm.sleep(now, t, ev) {
            Slept::Filed => {}
            Slept::Wake(at, gen) => q.push(at, Ev::new(EV_TIMER, gen, 0)),
            Slept::Elapsed => q.push(now, ev),
        }
    } else {
        q.push(round_up(t, tick), ev);
    }
}

fn round_up(t: u64, tick: u64) -> u64 {
    if tick == 0 {
        t
    } else {
        t.div_ceil(tick) * tick
    }
}

impl Sim {
    /// Compile a scenario (files relative to `base`) for the given seed.
    pub fn new(sc: &Scenario, base: &Path, seed: u64) -> Result<Sim, String> {
        sc.check()?;
        let n = sc.stages.len();
        let last_service = sc
            .stages
            .iter()
            .rposition(|s| !matches!(s, Stage::Delay { .. }))
            .unwrap_or(n - 1);
        let mut stages = Vec::with_capacity(n);
        let mut info = Vec::with_capacity(n);
        let comp = |name: &str, what: &str, d| {
            Sampler::compile(d, base).map_err(|e| format!("{name}.{what}: {e}"))
        };
        for (i, s) in sc.stages.iter().enumerate() {
            let name = s.name().to_string();
            let mut inf = StageInfo {
                name: name.clone(),
                kind: s.kind(),
                only: s.only(),
                servers: 0,
                mean_service_ns: 0.0,
                mean_per_write_ns: 0.0,
                parts: 1,
                sync: true,
                fail_on_exceed: false,
                policy: None,
                max_waiting: None,
                max_wait_ns: None,
                release_after: None,
                describe: String::new(),
            };
            let rt = match s {
                Stage::Delay {
                    delay, tick, timer, ..
                } => {
                    let d = comp(&name, "delay", delay)?;
                    inf.mean_service_ns = d.mean();
                    inf.describe = delay.describe();
                    if *timer {
                        inf.describe.push_str(", a sleep on the timer");
                    }
                    Rt::Delay {
                        d,
                        tick: tick.0,
                        timer: *timer,
                    }
                }
                Stage::Admission {
                    permits,
                    permits_per_client,
                    policy,
                    max_waiting,
                    max_wait,
                    release_after,
                    ..
                } => {
                    let p = match (permits, permits_per_client) {
                        (Some(p), _) => *p,
                        (None, Some(k)) => k.saturating_mul(sc.client_count().unwrap_or(1)),
                        _ => unreachable!("checked"),
                    };
                    let release_at = match release_after {
                        Some(r) => sc
                            .stages
                            .iter()
                            .position(|o| o.name() == r)
                            .expect("checked"),
                        None => last_service,
                    };
                    inf.servers = p;
                    inf.policy = Some(*policy);
                    inf.max_waiting = *max_waiting;
                    inf.max_wait_ns = max_wait.map(|d| d.0);
                    inf.release_after = Some(sc.stages[release_at].name().to_string());
                    inf.describe = format!("{p} permits, {policy:?}").to_lowercase();
                    Rt::Admission {
                        permits: p,
                        policy: *policy,
                        max_waiting: max_waiting.unwrap_or(u32::MAX),
                        max_wait: max_wait.map(|d| d.0).unwrap_or(0),
                        release_at: release_at.max(i) as u16,
                        in_use: 0,
                        waiting: 0,
                        queue: VecDeque::new(),
                    }
                }
                Stage::Workers {
                    servers,
                    service,
                    tick,
                    stalls,
                    ..
                } => {
                    let d = comp(&name, "service", service)?;
                    inf.servers = *servers;
                    inf.mean_service_ns = d.mean();
                    inf.describe = format!("{servers} × {}", service.describe());
                    let stalls = match stalls {
                        Some(st) => {
                            let length = comp(&name, "stalls.length", &st.length)?;
                            let per_ns = st.per_second / 1e9;
                            inf.describe += &format!(
                                ", each stalling {:.1}/s for {} on average",
                                st.per_second,
                                crate::units::human_ns(length.mean())
                            );
                            Some(StallRt {
                                per_ns,
                                away: (per_ns * length.mean()).min(0.9),
                                length,
                            })
                        }
                        None => None,
                    };
                    Rt::Workers {
                        servers: *servers,
                        d,
                        tick: tick.0,
                        busy: 0,
                        queue: VecDeque::new(),
                        stalls,
                    }
                }
                Stage::Store {
                    max_concurrent,
                    write,
                    on_exceed,
                    parts,
                    tick,
                    timer,
                    latency,
                    ..
                } => {
                    let d = comp(&name, "latency", latency)?;
                    inf.servers = *max_concurrent;
                    inf.mean_service_ns = d.mean();
                    inf.parts = *parts;
                    inf.sync = *write == WriteMode::Sync;
                    inf.fail_on_exceed = *on_exceed == OnExceed::Fail;
                    inf.describe = format!(
                        "{} writes at once, {:?}, {}{}",
                        max_concurrent,
                        write,
                        if *parts > 1 {
                            format!("{parts} parts × ")
                        } else {
                            String::new()
                        },
                        latency.describe()
                    )
                    .replace("Sync", "sync")
                    .replace("Async", "async");
                    if *timer {
                        inf.describe.push_str(", a sleep on the timer");
                    }
                    Rt::Store {
                        slots: *max_concurrent,
                        d,
                        tick: tick.0,
                        timer: *timer,
                        sync: *write == WriteMode::Sync,
                        fail: *on_exceed == OnExceed::Fail,
                        parts: *parts as u16,
                        busy: 0,
                        queue: VecDeque::new(),
                    }
                }
                Stage::GroupCommit {
                    max_batch,
                    write,
                    fsync,
                    per_write,
                    ..
                } => {
                    let f = comp(&name, "fsync", fsync)?;
                    let pw = per_write
                        .as_ref()
                        .map(|p| comp(&name, "per_write", p))
                        .transpose()?;
                    inf.servers = *max_batch;
                    inf.mean_service_ns = f.mean();
                    inf.mean_per_write_ns = pw.as_ref().map(|p| p.mean()).unwrap_or(0.0);
                    inf.sync = *write == WriteMode::Sync;
                    inf.describe = format!("≤{max_batch} writes per fsync of {}", fsync.describe());
                    Rt::Group {
                        max_batch: *max_batch,
                        fsync: f,
                        per_write: pw,
                        sync: *write == WriteMode::Sync,
                        busy: false,
                        queue: VecDeque::new(),
                        batch: Vec::new(),
                    }
                }
            };
            info.push(inf);
            stages.push(StageRt {
                only: s.only(),
                rt,
                rng: SimRng::new(seed, i as u64 + 1),
                st: StageStats::default(),
            });
        }
        let (clients, write_fraction) = match &sc.clients {
            Clients::Closed {
                think,
                tick,
                timer,
                write_fraction,
                ..
            } => (
                ClientsRt::Closed {
                    think: Sampler::compile(think, base)
                        .map_err(|e| format!("clients.think: {e}"))?,
                    tick: tick.0,
                    timer: *timer,
                },
                *write_fraction,
            ),
            Clients::Open {
                rate,
                arrivals,
                write_fraction,
                max_in_flight,
            } => (
                ClientsRt::Open {
                    mean_gap: 1e9 / rate,
                    poisson: *arrivals == Arrivals::Poisson,
                    max_in_flight: *max_in_flight,
                },
                *write_fraction,
            ),
        };
        let t0 = sc.warmup.0;
        let timer = sc
            .timer
            .as_ref()
            .map(|t| TimerRt::new(t, base, seed))
            .transpose()?;
        Ok(Sim {
            now: 0,
            t0,
            end: t0 + sc.duration.0,
            q: EventQueue::new(),
            reqs: Slab::new(),
            writes: Slab::new(),
            tickets: Slab::new(),
            stages,
            info,
            clients,
            client_rng: SimRng::new(seed, 0),
            write_fraction,
            ready: Vec::new(),
            probes: Probes::default(),
            lifetime: Latency::new(),
            persist: Latency::new(),
            thread_lifetime: Latency::new(),
            thread_start: None,
            in_system: TimeAvg::default(),
            events: 0,
            scenario: sc.clone(),
            seed,
            timer,
            fired: Vec::new(),
        })
    }

    #[inline]
    fn in_window(&self) -> bool {
        self.now >= self.t0
    }

    /// Run to the end of the window.
    pub fn run(mut self) -> Run {
        let started = std::time::Instant::now();
        match &self.clients {
            ClientsRt::Closed { think, .. } => {
                let n = self.scenario.client_count().unwrap_or(0);
                let spread = matches!(
                    &self.scenario.clients,
                    Clients::Closed {
                        start: Start::Spread,
                        ..
                    }
                );
                let mean = think.mean();
                for c in 0..n {
                    let t = if spread {
                        (self.client_rng.unit() * mean) as u64
                    } else {
                        0
                    };
                    self.q.push(t, Ev::new(EV_WAKE, 0, c));
                }
            }
            ClientsRt::Open { .. } => self.q.push(0, Ev::new(EV_ARRIVAL, 0, 0)),
        }
        let end = self.end;
        while let Some((t, ev)) = self.q.pop() {
            if t > end {
                break;
            }
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            while let Some((r, s)) = self.ready.pop() {
                self.advance(r, s as usize);
            }
        }
        self.now = end;
        let (t0, end) = (self.t0, self.end);
        self.in_system.close(end, t0);
        for s in &mut self.stages {
            s.st.in_stage.close(end, t0);
            s.st.busy.close(end, t0);
            s.st.queue.close(end, t0);
        }
        let mean_think_ns = match &self.clients {
            ClientsRt::Closed { think, .. } => think.mean(),
            ClientsRt::Open { .. } => 0.0,
        };
        Run {
            seed: self.seed,
            window_ns: end - t0,
            warmup_ns: t0,
            probes: self.probes,
            lifetime: self.lifetime,
            persist: self.persist,
            thread_lifetime: self.thread_lifetime,
            stages: self.stages.into_iter().map(|s| s.st).collect(),
            info: self.info,
            in_system: self.in_system,
            events: self.events,
            wall_s: started.elapsed().as_secs_f64(),
            in_flight_end: self.reqs.live() as u64,
            mean_think_ns,
            scenario: self.scenario,
        }
    }

    #[inline]
    fn dispatch(&mut self, ev: Ev) {
        let i = ev.index();
        match ev.kind() {
            EV_WAKE => self.start_request(i),
            EV_ARRIVAL => self.arrival(),
            EV_DELAY => {
                let s = self.reqs[i].stage as usize;
                let mark = self.reqs[i].mark;
                self.depart(s, mark);
                self.advance(i, s);
            }
            EV_WORK => self.work_done(i),
            EV_PART => self.part_done(i),
            EV_GROUP => self.group_done(i as usize),
            EV_TIMEOUT => self.timeout(i, ev.gen()),
            EV_TIMER => self.timer_wake(ev.gen()),
            EV_RESUME => {
                let s = self.reqs[i].stage as usize;
                self.advance(i, s);
            }
            k => unreachable!("event kind {k}"),
        }
    }
}
