//! Building a node's scenario from its /metrics text (the fixture in
//! data/ is a real node's scrape after 50 GETs and 50 PUTs).

use std::path::Path;

use strata_sim::dist::DistSpec;
use strata_sim::scenario::node::Stage;
use strata_sim::scenario::Clients;
use strata_sim::{scenario_from_metrics, simulate, CalibrateOptions, Scenario};

fn sample() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/metrics-sample.txt"),
    )
    .unwrap()
}

#[test]
fn node_scenario_from_metrics() {
    let opts = CalibrateOptions {
        cores: Some(2),
        ..Default::default()
    };
    let sc = scenario_from_metrics(&sample(), &opts).unwrap();
    // 100 requests, half of them PUTs; 0.06 s of CPU: 600 µs per request.
    match &sc.clients {
        Clients::Open {
            write_fraction,
            rate,
            ..
        } => {
            assert_eq!(*write_fraction, 0.5);
            // 80% of min(2 cores / 600 µs, 256 permits / hold, WAL).
            assert!((*rate - 0.8 * 2.0 / 0.0006).abs() < 1.0, "{rate}");
        }
        c => panic!("{c:?}"),
    }
    let names: Vec<&str> = sc.stages.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["admission", "cpu", "wal"]);
    match &sc.stages[0] {
        Stage::Admission {
            permits,
            max_waiting,
            max_wait,
            ..
        } => {
            assert_eq!(*permits, Some(256));
            assert_eq!(*max_waiting, Some(1024));
            assert_eq!(max_wait.unwrap().0, 100_000_000);
        }
        s => panic!("{s:?}"),
    }
    match &sc.stages[1] {
        Stage::Workers {
            servers, service, ..
        } => {
            assert_eq!(*servers, 2);
            assert!(matches!(service, DistSpec::Gamma { mean, .. } if mean.0 == 600_000));
        }
        s => panic!("{s:?}"),
    }
    match &sc.stages[2] {
        Stage::GroupCommit {
            fsync, max_batch, ..
        } => {
            assert_eq!(*max_batch, 512);
            // 30 fsyncs in (128, 256] µs, 19 in (256, 512], 1 in (512, 1024].
            match fsync {
                DistSpec::Histogram {
                    counts, le_seconds, ..
                } => {
                    assert_eq!(counts.iter().sum::<u64>(), 50);
                    assert_eq!(*counts.last().unwrap(), 1);
                    assert_eq!(*le_seconds.last().unwrap(), 0.001024);
                }
                d => panic!("{d:?}"),
            }
        }
        s => panic!("{s:?}"),
    }
    assert!(
        sc.notes.iter().any(|n| n.contains("600.0 µs per request")),
        "{:#?}",
        sc.notes
    );

    // Saved as TOML and read back, it is the same scenario; and it runs.
    let text = sc.to_toml().unwrap();
    assert_eq!(Scenario::from_toml(&text).unwrap(), sc, "{text}");
    let short = sc
        .with_overrides(&[("duration".into(), "2s".into())])
        .unwrap();
    let (_, a) = simulate(&short, Path::new("."), 1).unwrap();
    assert_eq!(a.bottleneck.as_deref(), Some("cpu"));
    assert!(
        (a.capacity - 2.0 / 0.0006).abs() / a.capacity < 0.02,
        "{}",
        a.capacity
    );
}

#[test]
fn baseline_and_errors() {
    let text = sample();
    // Against itself as the baseline, nothing was served in the window.
    let opts = CalibrateOptions {
        baseline: Some(text.clone()),
        ..Default::default()
    };
    let e = scenario_from_metrics(&text, &opts).unwrap_err().to_string();
    assert!(e.contains("served no requests"), "{e}");
    let e = scenario_from_metrics("up 1\n", &CalibrateOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("strata_http_requests_total"), "{e}");
    // A baseline with fewer requests and less CPU: the differences count.
    let before = text
        .replace(
            "strata_http_requests_total{method=\"GET\",status=\"200\"} 50",
            "strata_http_requests_total{method=\"GET\",status=\"200\"} 40",
        )
        .replace(
            "strata_http_requests_total{method=\"PUT\",status=\"201\"} 50",
            "strata_http_requests_total{method=\"PUT\",status=\"201\"} 10",
        )
        .replace(
            "process_cpu_seconds_total 0.06",
            "process_cpu_seconds_total 0.05",
        );
    let sc = scenario_from_metrics(
        &text,
        &CalibrateOptions {
            baseline: Some(before),
            cores: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    // 50 requests (10 GET, 40 PUT), 0.01 s of CPU: 200 µs each.
    assert_eq!(sc.clients.write_fraction(), 0.8);
    assert!(
        matches!(&sc.stages[1], Stage::Workers { service: DistSpec::Gamma { mean, .. }, .. } if mean.0 == 200_000)
    );
}

#[test]
fn cores_shared_with_other_work_serve_it_too() {
    // The node's 600 µs per request, and 300 µs per request of other work
    // on the same cores (a generator on the machine): the CPU stage
    // serves 900 µs per request, and the capacity is 2 cores / 900 µs.
    let opts = CalibrateOptions {
        cores: Some(2),
        shared_per_request: Some(300e-6),
        ..Default::default()
    };
    let sc = scenario_from_metrics(&sample(), &opts).unwrap();
    match &sc.stages[1] {
        Stage::Workers { service, .. } => {
            assert!(matches!(service, DistSpec::Gamma { mean, .. } if mean.0 == 900_000));
        }
        s => panic!("{s:?}"),
    }
    match &sc.clients {
        Clients::Open { rate, .. } => {
            assert!((*rate - 0.8 * 2.0 / 0.0009).abs() < 1.0, "{rate}")
        }
        c => panic!("{c:?}"),
    }
    assert!(sc
        .notes
        .iter()
        .any(|n| n.contains("other work on the same cores")));
    // Nothing shared, or nonsense: the node's own cost alone.
    for s in [None, Some(0.0), Some(f64::NAN), Some(-1.0)] {
        let opts = CalibrateOptions {
            cores: Some(2),
            shared_per_request: s,
            ..Default::default()
        };
        let sc = scenario_from_metrics(&sample(), &opts).unwrap();
        assert!(
            matches!(&sc.stages[1], Stage::Workers { service: DistSpec::Gamma { mean, .. }, .. } if mean.0 == 600_000)
        );
    }
}

#[test]
fn steal_the_pause_detector_missed_stretches_each_request() {
    // 5 s of pause-detector ticks (1,000 of them, none late enough to be a
    // stall) on a node with 2 CPUs, and 2.5 s of those CPUs' time taken by
    // the hypervisor: a quarter of the cores. The node's 600 µs of CPU
    // per request takes 800 µs of a core it gets three quarters of.
    let with = |stolen: f64| {
        format!(
            "{}\n# TYPE strata_pause_lateness_seconds histogram\n\
             strata_pause_lateness_seconds_bucket{{le=\"0.0005\"}} 990\n\
             strata_pause_lateness_seconds_bucket{{le=\"0.001\"}} 1000\n\
             strata_pause_lateness_seconds_bucket{{le=\"+Inf\"}} 1000\n\
             strata_pause_lateness_seconds_sum 0\n\
             strata_pause_lateness_seconds_count 1000\n\
             # TYPE strata_process_cpus gauge\nstrata_process_cpus 2\n\
             # TYPE strata_host_allowed_cpus_stolen_seconds counter\n\
             strata_host_allowed_cpus_stolen_seconds_total {stolen}\n",
            sample()
        )
    };
    let opts = CalibrateOptions {
        cores: Some(2),
        ..Default::default()
    };
    let mean_of = |text: &str| {
        let sc = scenario_from_metrics(text, &opts).unwrap();
        let Stage::Workers {
            service: DistSpec::Gamma { mean, .. },
            ..
        } = &sc.stages[1]
        else {
            panic!("{:?}", sc.stages[1])
        };
        (mean.0, sc.notes)
    };
    let (mean, notes) = mean_of(&with(2.5));
    assert_eq!(mean, 800_000);
    assert!(
        notes.iter().any(|n| n.contains("hypervisor took 25.0%")),
        "{notes:?}"
    );
    // No steal, or a node that does not say: the node's own cost.
    assert_eq!(mean_of(&with(0.0)).0, 600_000);
    assert_eq!(mean_of(&sample()).0, 600_000);
}
