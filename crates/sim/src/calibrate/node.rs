//! A node scenario of a running Strata node, built from its `/metrics` text
//! (Prometheus or OpenMetrics): admission (FIFO, the node's max_in_service,
//! max_waiting and max_wait), CPU workers (the cores the node can use,
//! serving each request for process CPU seconds / requests), and the WAL's
//! group commit (fsync times from the node's own histogram, drawn bucket by
//! count then uniformly within the bucket). With a baseline scrape taken
//! before the load, counters and histograms are the difference of the two,
//! so start-up work does not count. Owns the parsing of the text format and
//! the mapping from metrics to stages; must not fetch anything over the
//! network (the binary does) nor run the model.

use crate::dist::DistSpec;
use crate::scenario::node::{Policy, Scenario, Stage, WriteMode};
use crate::scenario::{Arrivals, Clients};
use crate::units::{human_ns, rate, Dur};

use super::reading::{stall_mean, Reading};
pub use super::reading::{
    stalls_from_pauses, stolen_beyond_stalls, CalibrateOptions, MAX_STOLEN, STALL_FROM,
};
use super::CalibrationError;
/// Steal from this share up is named in the scenario's notes.
const STOLEN_NOTED: f64 = 0.005;

/// Build a scenario of the node whose `/metrics` text this is (after
/// `opts.baseline`, before): `Reading::from_metrics`, then
/// `scenario_from_reading`.
pub fn scenario_from_metrics(
    text: &str,
    opts: &CalibrateOptions,
) -> Result<Scenario, CalibrationError> {
    scenario_from_reading(&Reading::from_metrics(text, opts)?, opts)
}

/// Build a scenario of a node from one step's reading. What limits a
/// node: its CPU (cores / CPU seconds per request), its admission permits
/// (max_in_service / mean time a request holds one), and, for writes, the
/// WAL (writes per group / fsync time). The capacity the scenario predicts
/// is the least of the three; `notes` shows each.
pub fn scenario_from_reading(
    r: &Reading,
    opts: &CalibrateOptions,
) -> Result<Scenario, CalibrationError> {
    let wf = r.write_share;
    let (cores, cores_from) = match opts.cores {
        Some(c) => (c.max(1), "as given"),
        None => (r.cores.max(1), r.cores_from),
    };
    let shared = r.shared_per_request;
    let own_per_req = r.own_cpu_per_request;
    let cpu_per_req = own_per_req + shared;
    let permits = r.admission.permits;
    let max_batch = opts.max_batch.unwrap_or(512).max(1);
    let mut notes = Vec::new();
    let stalls = r.stalls.clone();
    let stolen = r.stolen;
    let all_ns = cpu_per_req * 1e9;
    let background = r.background_share();
    let cpu_per_req = cpu_per_req / ((1.0 - stolen) * (1.0 - background));
    let cpu_ns = cpu_per_req * 1e9;
    let cpu_cap = cores as f64 / cpu_per_req;
    let cpu_s = own_per_req * r.requests;
    if shared > 0.0 {
        notes.push(format!(
            "CPU: {cpu_s:.3} s of process CPU / {} requests = {} per request, and {} per request of other work on the same cores (the load generator, the kernel's network work): {} in all; {cores} cores ({cores_from}) / {} = {} req/s",
            r.requests as u64,
            human_ns(own_per_req * 1e9),
            human_ns(shared * 1e9),
            human_ns(all_ns),
            human_ns(cpu_ns),
            rate(cpu_cap)
        ));
    } else {
        notes.push(format!(
            "CPU: {cpu_s:.3} s of process CPU / {} requests = {} per request; {cores} cores ({cores_from}) / {} = {} req/s",
            r.requests as u64,
            human_ns(all_ns),
            human_ns(cpu_ns),
            rate(cpu_cap)
        ));
    }
    if stolen >= STOLEN_NOTED {
        notes.push(format!(
            "cpu: the hypervisor took {:.1}% of the node's cores for other guests beyond the stalls below (steal, /proc/stat): each request's CPU time stretched by 1 / {:.3} (the figure divided above)",
            stolen * 100.0,
            1.0 - stolen
        ));
    }
    if background >= STOLEN_NOTED {
        notes.push(format!(
            "cpu: other work that does not grow with the load kept {:.2} of the node's cores busy: it takes {:.1}% of them (at most {:.0}%), each request's CPU time stretched by 1 / {:.3}",
            r.background_cores,
            background * 100.0,
            super::reading::MAX_BACKGROUND * 100.0,
            1.0 - background
        ));
    }
    let mut caps = vec![cpu_cap];
    if let Some(h) = r.admission.mean_hold {
        let c = permits as f64 / h;
        caps.push(c);
        notes.push(format!(
            "admission: {permits} permits / {} mean hold measured by the node = {} req/s (the hold includes queueing at the load it saw)",
            human_ns(h * 1e9),
            rate(c)
        ));
    }
    if let Some(l) = r.admission.limit.filter(|l| (l.round() as u32) != permits) {
        notes.push(format!(
            "admission: the node's current (adaptive) limit was {l:.0}, below max_in_service {permits}"
        ));
    }
    let mut stages = vec![Stage::Admission {
        name: "admission".into(),
        only: Default::default(),
        permits: Some(permits),
        permits_per_client: None,
        policy: Policy::Fifo,
        max_waiting: r.admission.max_waiting,
        max_wait: r.admission.max_wait,
        release_after: None,
    }];
    if let Some(st) = &stalls {
        notes.push(format!(
            "cpu: each core stalls {:.1} times a second for {} on average (the node's pause detector: ticks at least {} late; each of the node's threads loses its core as that thread did)",
            st.per_second,
            stall_mean(st).map(|x| human_ns(x * 1e9)).unwrap_or_default(),
            human_ns(STALL_FROM * 1e9)
        ));
    }
    stages.push(Stage::Workers {
        name: "cpu".into(),
        only: Default::default(),
        servers: cores,
        tick: Dur::ZERO,
        service: DistSpec::Gamma {
            mean: Dur(cpu_ns.round().max(1.0) as u64),
            sd: Dur((cpu_ns / 2.0).round().max(1.0) as u64),
            shift: Dur::ZERO,
        },
        stalls,
    });
    notes.push(
        "cpu: service drawn from gamma(mean, sd = mean / 2): the metrics give the mean only".into(),
    );
    match (&r.fsync, wf > 0.0) {
        (Some(f), true) => {
            let c = max_batch as f64 / f.mean / wf;
            caps.push(c);
            notes.push(format!(
                "wal: {} fsyncs, mean {}; at most {max_batch} writes per group: {} writes/s = {} req/s at {:.0}% writes",
                f.count as u64,
                human_ns(f.mean * 1e9),
                rate(max_batch as f64 / f.mean),
                rate(c),
                wf * 100.0
            ));
            if let Some(g) = f.group_mean {
                notes.push(format!(
                    "wal: the node's mean commit group was {g:.1} writes"
                ));
            }
            stages.push(Stage::GroupCommit {
                name: "wal".into(),
                max_batch,
                write: WriteMode::Sync,
                fsync: f.dist.clone(),
                per_write: None,
            });
        }
        (None, true) => {
            notes.push("wal: no fsyncs in the metrics (durability not sync?): no WAL stage".into())
        }
        _ => notes.push("no writes in the metrics: no WAL stage".into()),
    }
    for (label, c, mean) in &r.method_means {
        notes.push(format!(
            "the node measured {label}: {} requests, mean {} (compare the simulated lifetime)",
            *c as u64,
            human_ns(mean * 1e9)
        ));
    }
    let capacity = caps.iter().copied().fold(f64::INFINITY, f64::min);
    let rate_v = opts.rate.unwrap_or((capacity * 0.8).max(1.0));
    notes.push(format!(
        "predicted capacity min(...) = {} req/s; the clients default to 80% of it",
        rate(capacity)
    ));
    let s = Scenario {
        name: opts
            .name
            .clone()
            .unwrap_or_else(|| "strata-node (from metrics)".into()),
        description: "A Strata node calibrated from its /metrics by strata sim --from-metrics."
            .into(),
        duration: Dur(10_000_000_000),
        warmup: Dur(1_000_000_000),
        seed: 1,
        notes,
        timer: None,
        clients: Clients::Open {
            rate: (rate_v * 10.0).round() / 10.0,
            arrivals: Arrivals::Poisson,
            write_fraction: (wf * 1000.0).round() / 1000.0,
            max_in_flight: 1_000_000,
        },
        stages,
    };
    s.check().map_err(CalibrationError::Invalid)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{parse_metrics, Hist};

    #[test]
    fn parses_labels_and_values() {
        let m = parse_metrics(
            "# TYPE x counter\nx_total{a=\"1\",b=\"q\\\"uote\"} 3\ny 2.5 1700000000\nz{le=\"+Inf\"} 4\n# EOF\n",
        )
        .unwrap();
        assert_eq!(m.samples.len(), 3);
        assert_eq!(m.samples[0].labels[1], ("b".into(), "q\"uote".into()));
        assert_eq!(m.samples[1].value, 2.5);
        assert_eq!(m.types["x"], "counter");
        assert!(parse_metrics("x{a=1} 2").is_err());
    }

    #[test]
    fn stalls_are_the_pause_detectors_late_ticks() {
        // 1,000 ticks: 990 under 1 ms late, 8 between 2 and 4 ms, 2
        // between 16 and 32 ms; 5 s of ticks and 0.1 s of lateness.
        let h = Hist {
            buckets: vec![
                (0.0005, 900.0),
                (0.001, 990.0),
                (0.002, 990.0),
                (0.004, 998.0),
                (0.008, 998.0),
                (0.016, 998.0),
                (0.032, 1000.0),
                (f64::INFINITY, 1000.0),
            ],
            sum: 0.1,
            count: 1000.0,
        };
        let st = stalls_from_pauses(&h).unwrap();
        assert!((st.per_second - 10.0 / 5.1).abs() < 1e-9, "{st:?}");
        let DistSpec::Histogram {
            le_seconds, counts, ..
        } = &st.length
        else {
            panic!("{st:?}")
        };
        assert_eq!(le_seconds, &vec![0.001, 0.002, 0.004, 0.008, 0.016, 0.032]);
        assert_eq!(counts, &vec![0, 0, 8, 0, 0, 2]);
        // No tick that late: no stalls.
        let quiet = Hist {
            buckets: vec![(0.0005, 10.0), (0.001, 10.0), (0.002, 10.0)],
            sum: 0.001,
            count: 10.0,
        };
        assert_eq!(stalls_from_pauses(&quiet), None);
    }

    #[test]
    fn baseline_subtracts_counters_not_gauges() {
        let a = parse_metrics("# TYPE c counter\nc_total 10\n# TYPE g gauge\ng 5\n").unwrap();
        let b = parse_metrics("# TYPE c counter\nc_total 4\n# TYPE g gauge\ng 3\n").unwrap();
        let d = a.minus(&b);
        assert_eq!(d.get("c_total"), Some(6.0));
        assert_eq!(d.get("g"), Some(5.0));
    }
}
