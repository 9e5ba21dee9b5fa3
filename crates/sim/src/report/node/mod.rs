//! What a run means: per stage, throughput, utilisation, mean queue, mean
//! number inside and mean time inside (Little's law, L = λW, checked for
//! every stage and the whole system); each stage's capacity from its
//! servers and mean service demand; the stage that saturates first; the
//! offered load against it; and the warnings a user must not miss (a store
//! pushed past its limit, queues that never stopped growing). Owns the
//! arithmetic; must not format text beyond the one-line statements it
//! returns (that is `text`), nor run the model.
//!
//! Here: the analysis; `breaking` the breaking point, `text` the text and
//! JSON reports.

use serde::Serialize;

use crate::model::node::{Run, StageInfo};
use crate::scenario::node::Only;
use crate::scenario::Clients;
use crate::units::{grouped, human_ns, rate, sig};

mod breaking;
pub mod text;

pub use breaking::breaking_point;

#[derive(Clone, Debug, Serialize)]
pub struct StageView {
    pub name: String,
    pub kind: &'static str,
    /// Departures per second (writes for stores).
    pub throughput: f64,
    /// Busy servers, slots or permits over what there is; the leader's busy
    /// share for a group commit; none for a delay.
    pub utilisation: Option<f64>,
    pub mean_queue: Option<f64>,
    /// L: mean number in the stage.
    pub mean_in_stage: f64,
    /// W: mean time in the stage, ns.
    pub mean_time_ns: f64,
    /// λW, to set against L.
    pub lambda_w: f64,
    /// Requests per second of the whole system the stage can carry.
    pub capacity: f64,
    pub capacity_text: String,
    /// Share of requests that visit the stage.
    pub visits: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Little {
    pub l: f64,
    pub lambda: f64,
    pub w_ns: f64,
    pub lambda_w: f64,
    /// |L − λW| / max(L, λW).
    pub error: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub stages: Vec<StageView>,
    /// Requests done per second (failed ones included).
    pub throughput: f64,
    /// Requests answered without failure per second.
    pub goodput: f64,
    pub little: Little,
    pub bottleneck: Option<String>,
    /// The predicted capacity, requests per second (the bottleneck's).
    pub capacity: f64,
    pub capacity_text: String,
    /// What the clients offer, requests per second (closed loop: at no
    /// queueing).
    pub offered: f64,
    pub offered_text: String,
    /// Closed loop: the number of clients at which the bottleneck
    /// saturates, N* = capacity × (think + unloaded response).
    pub saturation_clients: Option<f64>,
    /// Mean response time with no queueing anywhere, ns.
    pub unloaded_response_ns: f64,
    pub verdict: String,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

const MIN_SAMPLES: u64 = 1000;

fn visits(only: Only, wf: f64) -> f64 {
    match only {
        Only::All => 1.0,
        Only::Writes => wf,
        Only::Reads => 1.0 - wf,
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// A stage's capacity in system requests per second, with its arithmetic.
fn capacity(run: &Run, i: usize, v: f64, wf: f64) -> (f64, String) {
    let inf = &run.info[i];
    let st = &run.stages[i];
    let per_req = |c: f64, text: String| {
        if v <= 0.0 {
            (f64::INFINITY, format!("{text}; no request visits it"))
        } else if v >= 1.0 {
            (c, text)
        } else {
            let r = c / v;
            (
                r,
                format!(
                    "{text} = {} req/s with {:.0}% of requests visiting",
                    rate(r),
                    v * 100.0
                ),
            )
        }
    };
    // Measured figures once there are enough of them to beat the noise
    // (1,000 draws: about 0.3% for the seed's store); else the scenario's.
    // Waits on the runtime's timer last longer than their draws (rounding,
    // the OS's slack, wake-ups), so there any measurement beats the draws.
    let min = if run.scenario.uses_timer() {
        1
    } else {
        MIN_SAMPLES
    };
    let measured_service = if st.service_n >= min {
        st.service_ns / st.service_n as f64
    } else {
        inf.mean_service_ns
    };
    match inf.kind {
        "delay" => (f64::INFINITY, "no limit (a delay)".into()),
        "admission" => {
            let (hold, served) = if st.hold_n >= min {
                (
                    st.hold_ns / st.hold_n as f64,
                    st.hold_service_ns / st.hold_n as f64,
                )
            } else {
                let h = unloaded_hold(run, i, wf);
                (h, h)
            };
            if served <= 0.0 {
                return (
                    f64::INFINITY,
                    format!("{} permits, held for no time", inf.servers),
                );
            }
            let c = inf.servers as f64 / served * 1e9;
            let mut text = format!(
                "{} permits / {} mean hold = {} req/s",
                inf.servers,
                human_ns(served),
                rate(c)
            );
            if hold > served * 1.05 {
                text = format!(
                    "{} permits / {} mean hold without queueing after it = {} req/s (measured hold {}: {} queued downstream)",
                    inf.servers,
                    human_ns(served),
                    rate(c),
                    human_ns(hold),
                    human_ns(hold - served)
                );
            }
            per_req(c, text)
        }
        "workers" => {
            let c = inf.servers as f64 / measured_service * 1e9;
            per_req(
                c,
                format!(
                    "{} servers / {} mean service = {} req/s",
                    inf.servers,
                    human_ns(measured_service),
                    rate(c)
                ),
            )
        }
        "store" => {
            let per_write = measured_service * inf.parts as f64;
            let c = inf.servers as f64 / per_write * 1e9;
            let work = if inf.parts > 1 {
                format!("({} parts × {})", inf.parts, human_ns(measured_service))
            } else {
                human_ns(per_write)
            };
            per_req(
                c,
                format!(
                    "{} concurrent writes / {} per write = {} writes/s",
                    inf.servers,
                    work,
                    rate(c)
                ),
            )
        }
        "group_commit" => {
            let b = inf.servers as f64;
            let t = inf.mean_service_ns + b * inf.mean_per_write_ns;
            let c = b / t * 1e9;
            let per = if inf.mean_per_write_ns > 0.0 {
                format!(
                    "({} fsync + {} × {} per write)",
                    human_ns(inf.mean_service_ns),
                    inf.servers,
                    human_ns(inf.mean_per_write_ns)
                )
            } else {
                format!("{} fsync", human_ns(inf.mean_service_ns))
            };
            let mean_group = ratio(st.batch_writes as f64, st.batches as f64);
            per_req(
                c,
                format!(
                    "{} writes per group / {per} = {} writes/s (mean group {:.1}, leader busy {:.0}%)",
                    inf.servers,
                    rate(c),
                    mean_group,
                    st.busy.mean(run.window_ns) * 100.0
                ),
            )
        }
        k => unreachable!("stage kind {k}"),
    }
}

/// A write's time in a store or group commit at no queueing, ns.
fn write_time(inf: &StageInfo) -> f64 {
    match inf.kind {
        // Parts run side by side when there are slots for them all.
        "store" => inf.mean_service_ns * (inf.parts as f64 / inf.servers as f64).ceil().max(1.0),
        "group_commit" => inf.mean_service_ns + inf.mean_per_write_ns,
        _ => inf.mean_service_ns,
    }
}

/// A permit's hold time at no queueing: the stages up to its release point.
fn unloaded_hold(run: &Run, adm: usize, wf: f64) -> f64 {
    let rel = run.info[adm]
        .release_after
        .as_deref()
        .and_then(|r| run.info.iter().position(|s| s.name == r))
        .unwrap_or(adm);
    let mut path = 0.0f64;
    let mut longest_async = 0.0f64;
    for j in adm + 1..=rel.min(run.info.len() - 1) {
        let inf = &run.info[j];
        let v = visits(inf.only, wf);
        match inf.kind {
            "delay" | "workers" => path += v * inf.mean_service_ns,
            "store" | "group_commit" if inf.sync => path += v * write_time(inf),
            "store" | "group_commit" => longest_async = longest_async.max(v * write_time(inf)),
            _ => {}
        }
    }
    path.max(longest_async)
}

/// The mean response time with no queueing anywhere, ns.
pub fn unloaded_response(run: &Run) -> f64 {
    let wf = run.scenario.clients.write_fraction();
    run.info
        .iter()
        .map(|inf| {
            let v = visits(inf.only, wf);
            match inf.kind {
                "delay" | "workers" => v * inf.mean_service_ns,
                "store" | "group_commit" if inf.sync => v * write_time(inf),
                _ => 0.0,
            }
        })
        .sum()
}

pub fn analyse(run: &Run) -> Analysis {
    let t = run.window_ns as f64 / 1e9;
    let wf = run.scenario.clients.write_fraction();
    let mut stages = Vec::with_capacity(run.info.len());
    for (i, (inf, st)) in run.info.iter().zip(&run.stages).enumerate() {
        let v = visits(inf.only, wf);
        let throughput = st.departures as f64 / t;
        let w = ratio(st.residence_ns, st.departures as f64);
        let (cap, cap_text) = capacity(run, i, v, wf);
        let (utilisation, mean_queue) = match inf.kind {
            "delay" => (None, None),
            // A leader is busy whenever writes come at all; the share of
            // the WAL's capacity in use is what saturates.
            "group_commit" => (
                Some(ratio(throughput, cap * v)),
                Some(st.queue.mean(run.window_ns)),
            ),
            _ => (
                Some(st.busy.mean(run.window_ns) / inf.servers as f64),
                Some(st.queue.mean(run.window_ns)),
            ),
        };
        stages.push(StageView {
            name: inf.name.clone(),
            kind: inf.kind,
            throughput,
            utilisation,
            mean_queue,
            mean_in_stage: st.in_stage.mean(run.window_ns),
            mean_time_ns: w,
            lambda_w: throughput * w / 1e9,
            capacity: cap,
            capacity_text: cap_text,
            visits: v,
        });
    }
    let p = &run.probes;
    let throughput = p.request_done as f64 / t;
    let goodput = (p.request_done - p.request_failed) as f64 / t;
    let l = run.in_system.mean(run.window_ns);
    let w_ns = run.lifetime.mean();
    let lambda_w = throughput * w_ns / 1e9;
    let little = Little {
        l,
        lambda: throughput,
        w_ns,
        lambda_w,
        error: ratio((l - lambda_w).abs(), l.max(lambda_w)),
    };

    // The bottleneck: the smallest capacity; within 1% of it, the stage
    // nearest the clients (where the requests queue).
    let min = stages
        .iter()
        .map(|s| s.capacity)
        .fold(f64::INFINITY, f64::min);
    let bottleneck = stages
        .iter()
        .position(|s| s.capacity.is_finite() && s.capacity <= min * 1.01);
    let (capacity, capacity_text) = match bottleneck {
        Some(b) => (stages[b].capacity, stages[b].capacity_text.clone()),
        None => (f64::INFINITY, "no stage limits throughput".into()),
    };

    let r0 = unloaded_response(run);
    let (offered, offered_text, saturation_clients) = match &run.scenario.clients {
        Clients::Closed { count, .. } => {
            let cycle = run.mean_think_ns + r0;
            let x = if cycle > 0.0 {
                *count as f64 / cycle * 1e9
            } else {
                f64::INFINITY
            };
            let n_star = capacity * cycle / 1e9;
            (
                x,
                format!(
                    "{} clients / ({} think + {} unloaded response) = {} req/s",
                    grouped(*count as i64),
                    human_ns(run.mean_think_ns),
                    human_ns(r0),
                    rate(x)
                ),
                capacity.is_finite().then_some(n_star),
            )
        }
        Clients::Open {
            rate: r, arrivals, ..
        } => (
            *r,
            format!(
                "{} req/s, {} arrivals",
                rate(*r),
                match arrivals {
                    crate::scenario::Arrivals::Poisson => "Poisson",
                    crate::scenario::Arrivals::Constant => "constant",
                }
            ),
            None,
        ),
    };

    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    let load = ratio(offered, capacity);
    let verdict = match bottleneck {
        Some(b) => {
            let s = &stages[b];
            let state = if load >= 1.0 {
                "saturated"
            } else if load >= 0.8 {
                "near saturation"
            } else {
                "below saturation"
            };
            let lost = if p.persist_failed > 0 {
                format!(
                    ", but only {} writes/s were stored",
                    rate((p.persist_start - p.persist_failed) as f64 / t)
                )
            } else {
                String::new()
            };
            let ok = if p.request_failed > 0 {
                format!(" ({} req/s answered without error)", rate(goodput))
            } else {
                String::new()
            };
            let mut v = format!(
                "{} ({}) saturates first: {} ({} req/min). Offered: {} = {:.0}% of it, {state}; the run did {} req/s{ok}{lost}.",
                s.name,
                s.kind,
                s.capacity_text,
                grouped((s.capacity * 60.0).round() as i64),
                offered_text,
                load * 100.0,
                rate(throughput)
            );
            if let Some(n) = saturation_clients {
                v.push_str(&format!(
                    " Saturation from N* = {} × {} = {} clients on.",
                    rate(capacity),
                    human_ns(run.mean_think_ns + r0),
                    sig(n)
                ));
            }
            v
        }
        None => format!(
            "No stage limits throughput (only delays); offered {offered_text}; the run did {} req/s.",
            rate(throughput)
        ),
    };

    // Stores pushed past their limit.
    for (inf, st) in run.info.iter().zip(&run.stages) {
        if inf.kind == "store" && st.failed > 0 {
            let total = st.arrivals.max(1);
            let demanded = st.arrivals as f64 / t * inf.mean_service_ns * inf.parts as f64 / 1e9;
            warnings.push(format!(
                "STORE LIMIT EXCEEDED at {}: it accepts at most {} concurrent writes; {} of {} writes ({:.1}%) found it full and FAILED. \
                 The writes offered needed {:.1} concurrent slots on average. Whatever lets them through \
                 (more permits in front of it) does not add capacity: the store's limit stays {}.",
                inf.name,
                inf.servers,
                grouped(st.failed as i64),
                grouped(total as i64),
                st.failed as f64 / total as f64 * 100.0,
                demanded,
                capacity_of(&stages, &inf.name)
            ));
            if !inf.sync {
                warnings.push(format!(
                    "{}'s writes are asynchronous: clients were told their {} failed writes succeeded.",
                    inf.name,
                    grouped(st.failed as i64)
                ));
            }
        }
    }
    // Queues that grew through the window.
    for (inf, st) in run.info.iter().zip(&run.stages) {
        let (start, end) = (st.in_stage.start_level() as f64, st.in_stage.level() as f64);
        let mean = st.in_stage.mean(run.window_ns);
        let growth = end - start;
        if inf.kind != "delay" && growth > 100.0 && growth > 0.25 * mean {
            if run.scenario.client_count().is_some() {
                // A closed loop cannot grow without bound: it was filling.
                warnings.push(format!(
                    "{} was still filling: {} inside when the window opened, {} when it closed; \
                     the run had not reached steady state (add --warmup).",
                    inf.name,
                    grouped(start as i64),
                    grouped(end as i64)
                ));
                continue;
            }
            warnings.push(format!(
                "{} is unstable: {} inside when the window opened, {} when it closed ({} more per second); \
                 its queue grows without bound, so its times depend on the run's length.",
                inf.name,
                grouped(start as i64),
                grouped(end as i64),
                sig(growth / t)
            ));
        }
    }
    if p.arrivals_dropped > 0 {
        warnings.push(format!(
            "{} arrivals dropped: the open loop's max_in_flight guard was reached (offered load above capacity).",
            grouped(p.arrivals_dropped as i64)
        ));
    }
    if little.error > 0.05 && little.l > 0.0 {
        warnings.push(format!(
            "Little's law is off by {:.1}%: the window is short against the time requests spend inside \
             (or the system is not in steady state); lengthen --duration or add a warmup.",
            little.error * 100.0
        ));
    }
    if p.request_refused + p.request_timeout > 0 {
        notes.push(format!(
            "{} requests refused at admission ({} with no room to wait, {} after waiting too long): {:.2}% of those started.",
            grouped((p.request_refused + p.request_timeout) as i64),
            grouped(p.request_refused as i64),
            grouped(p.request_timeout as i64),
            ratio((p.request_refused + p.request_timeout) as f64, p.request_start as f64) * 100.0
        ));
    }

    Analysis {
        stages,
        throughput,
        goodput,
        little,
        bottleneck: bottleneck.map(|b| run.info[b].name.clone()),
        capacity,
        capacity_text,
        offered,
        offered_text,
        saturation_clients,
        unloaded_response_ns: r0,
        verdict,
        warnings,
        notes,
    }
}

fn capacity_of(stages: &[StageView], name: &str) -> String {
    stages
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.capacity_text.clone())
        .unwrap_or_default()
}

/// Run a scenario once and analyse it: the library call behind `run`.
pub fn simulate(
    sc: &crate::scenario::node::Scenario,
    base: &std::path::Path,
    seed: u64,
) -> Result<(Run, Analysis), String> {
    let run = crate::model::node::Sim::new(sc, base, seed)?.run();
    let a = analyse(&run);
    Ok((run, a))
}
