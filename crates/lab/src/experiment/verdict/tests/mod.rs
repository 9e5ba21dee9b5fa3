//! The verdict on trials built by hand: each cause named from its
//! evidence, the generator only on its own, "cannot tell" when nothing
//! crossed.
//! Helpers here; the rules' tests by concept: `resources`, `places`,
//! `flight`, `failures`.

mod failures;
mod flight;
mod host;
mod places;
mod resources;

use super::*;
use crate::report::model::{NodeSummary, Percentiles, ServerSample, SlowPart};

fn trial(rate: f64, nodes: usize, f: impl Fn(usize, &mut ServerSample)) -> Trial {
    let per_node = (0..nodes)
        .map(|i| NodeSummary {
            url: format!("http://127.0.0.1:{}", 7001 + i),
            connections: 16,
            requests: 10_000,
            errors: 0,
            server: (0..5)
                .map(|k| {
                    let mut x = ServerSample {
                        t_s: k as f64,
                        cpu_cores: Some(0.3),
                        cpus: Some(2.0),
                        in_service: Some(1.0),
                        limit: Some(64.0),
                        waiting: Some(0.0),
                        fsync_busy: Some(0.2),
                        run_queue_cores: Some(0.01),
                        pause_max_ms: Some(2.0),
                        scrape_ms: Some(3.0),
                        stall_share: Some(0.0),
                        stalls: Some(0.0),
                        ..Default::default()
                    };
                    f(i, &mut x);
                    x
                })
                .collect(),
            server_cpu_cores: Some(0.3),
            server_rss_bytes: None,
            threads: vec![],
        })
        .collect();
    Trial {
        offered_rate: Some(rate),
        clients: None,
        started_s: 0.0,
        duration_s: 5.0,
        requests: (rate * 5.0) as u64,
        achieved_rate: rate,
        errors: 0,
        error_pct: 0.0,
        latency: Percentiles {
            p50_ms: 1.0,
            p99_ms: 20.0,
            ..Default::default()
        },
        per_op: vec![],
        spectrum: vec![],
        timeline: vec![],
        server: vec![],
        meets_slo: Some(false),
        why: Vec::new(),
        late_sends: 0,
        max_lag_ms: 0.0,
        dropped_sends: 0,
        unfinished: 0,
        connections_opened: Some(16),
        capped_sends: 0,
        generator_cpu_cores: Some(0.2),
        machine_cpu_cores: None,
        distinct_keys: None,
        server_cpu_cores: Some(0.3),
        server_rss_bytes: None,
        per_node,
        slowest: None,
        generator_late_sends: 0,
        generator_run_queue_share: Some(0.0),
        client: None,
        resources: vec![],
        repeat: None,
        generator_threads: vec![],
        workers: vec![],
        failed_statuses: Default::default(),
        first_failure: None,
    }
}

fn slow(parts: &[(&str, Option<&str>, f64)]) -> Slowest {
    Slowest {
        requests: 100,
        unanswered: 0,
        with_timing: 100,
        from_ms: 12.0,
        mean_ms: 15.0,
        parts: parts
            .iter()
            .map(|(w, n, s)| SlowPart {
                what: w.to_string(),
                node: n.map(str::to_string),
                share: *s,
                mean_ms: 15.0 * s,
                words: crate::load::slowest::words(w, *n),
            })
            .collect(),
        by_node: vec![],
    }
}

fn judge(trials: &[Trial], cores: Option<f64>) -> Verdict {
    judge_on(
        trials,
        Machine {
            cores,
            generator_cpus: cores,
            objective_ms: Some(10.0),
        },
    )
}

/// The verdict with the generator's affinity apart from the machine's.
fn judge_on(trials: &[Trial], machine: Machine) -> Verdict {
    let why = vec!["p99 20 ms > 10 ms".to_string()];
    let last = trials.last().unwrap();
    verdict(&Evidence {
        trials,
        deciding: Some((last, &why)),
        breaking_point: Some(1000.0),
        range: None,
        machine,
        unseen: &[],
        cut_short: None,
    })
}

fn threads(list: &[(&str, u32, f64, f64)]) -> Vec<strata_api::threads::ThreadRate> {
    list.iter()
        .map(
            |&(name, tid, cpu, waiting)| strata_api::threads::ThreadRate {
                name: name.into(),
                tid,
                cpu,
                waiting,
                slices: 0.0,
            },
        )
        .collect()
}

/// The verdict on `t` alone, failed for `why`.
fn failed_on(t: &Trial, why: &[String], breaking_point: f64) -> Verdict {
    verdict(&Evidence {
        trials: std::slice::from_ref(t),
        deciding: Some((t, why)),
        breaking_point: Some(breaking_point),
        range: None,
        machine: Machine::default(),
        unseen: &[],
        cut_short: None,
    })
}

/// The verdict named `cause` on `node`; its text on failure.
fn named(v: &Verdict, cause: &str, node: Option<&str>) {
    assert_eq!(
        (v.cause.as_str(), v.node.as_deref()),
        (cause, node),
        "{}",
        v.text
    );
}
