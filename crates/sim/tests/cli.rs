//! `run_scenario` as `strata sim` calls it: text and JSON reports, sweeps
//! with their SVG chart, overrides, saving the scenario, --from-metrics.

use std::path::{Path, PathBuf};

use strata_sim::{config_from_args, run_config, SimArgs};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("strata-sim-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &SimArgs) -> Result<String, String> {
    let (config, base) = config_from_args(args, None).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    run_config(&config, &base, args, &mut out).map_err(|e| e.to_string())?;
    Ok(String::from_utf8(out).unwrap())
}

fn seed_args() -> SimArgs {
    SimArgs {
        scenario: Some(scenarios().join("system-simulator.toml")),
        duration: Some(strata_sim::Dur::parse("5s").unwrap()),
        out: PathBuf::from("."),
        ..Default::default()
    }
}

#[test]
fn text_report() {
    let out = run(&SimArgs {
        clients: Some(1000),
        ..seed_args()
    })
    .unwrap();
    for want in [
        "Probe counts over 5 s",
        "blocked requests",
        "request lifetimes visualisation",
        "------------- Distribution -------------",
        "Little's law, whole system",
        "Bottleneck: semaphore (admission) saturates first: 8 permits /",
        "M events/s",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
}

#[test]
fn json_report() {
    let out = run(&SimArgs {
        json: true,
        set: vec!["semaphore.permits=16".into()],
        ..seed_args()
    })
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["perf"]["events_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["probes"]["request_start"].as_u64().unwrap() > 0);
    // 16 permits in front of a store of 8: the store saturates first.
    assert_eq!(v["analysis"]["bottleneck"], "store");
    assert!(v["analysis"]["capacity_text"]
        .as_str()
        .unwrap()
        .starts_with("8 concurrent writes"));
    assert!(v["analysis"]["stages"][1]["capacity_text"]
        .as_str()
        .unwrap()
        .starts_with("16 permits"));
}

#[test]
fn sweep_writes_rows_and_chart() {
    let dir = tmp("sweep");
    let out = run(&SimArgs {
        sweep: Some("clients=1,135,1000".into()),
        out: dir.clone(),
        ..seed_args()
    })
    .unwrap();
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("semaphore (")).collect();
    assert_eq!(rows.len(), 3, "{out}");
    let svg = std::fs::read_to_string(dir.join("sim-sweep-system-simulator-clients.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("throughput"),
        "{}",
        &svg[..200.min(svg.len())]
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn fix_scenario_shouts() {
    let out = run(&SimArgs {
        scenario: Some(scenarios().join("system-simulator-fix.toml")),
        clients: Some(200),
        ..seed_args()
    })
    .unwrap();
    assert!(out.contains("!!! STORE LIMIT EXCEEDED at store"), "{out}");
    assert!(
        out.contains("failed persistent writes (store full)"),
        "{out}"
    );
}

#[test]
fn save_and_from_metrics() {
    let dir = tmp("save");
    let saved = dir.join("node.toml");
    let args = SimArgs {
        from_metrics: Some(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/metrics-sample.txt"),
        ),
        cores: Some(2),
        duration: Some(strata_sim::Dur::parse("1s").unwrap()),
        save_scenario: Some(saved.clone()),
        out: dir.clone(),
        ..Default::default()
    };
    let out = run(&args).unwrap();
    assert!(out.contains("Bottleneck: cpu (workers)"), "{out}");
    assert!(out.contains("note: CPU: 0.060 s"), "{out}");
    // The saved scenario runs as a file too.
    let again = run(&SimArgs {
        scenario: Some(saved),
        ..seed_args()
    })
    .unwrap();
    assert!(again.contains("Bottleneck: cpu (workers)"), "{again}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_arguments() {
    let e = run(&SimArgs {
        set: vec!["nosuch.x=1".into()],
        ..seed_args()
    })
    .unwrap_err();
    assert!(e.contains("no stage named"), "{e}");
    let e = run(&SimArgs {
        scenario: Some(scenarios().join("strata-node.toml")),
        clients: Some(5),
        ..seed_args()
    })
    .unwrap_err();
    assert!(e.contains("open loop"), "{e}");
    let e = run(&SimArgs {
        sweep: Some("clients".into()),
        ..seed_args()
    })
    .unwrap_err();
    assert!(e.contains("PARAM=V1,V2"), "{e}");
}

#[test]
fn one_entry_runs_either_configuration() {
    // A cluster scenario through the same door as a node's.
    let out = run(&SimArgs {
        scenario: Some(scenarios().join("strata-cluster.toml")),
        duration: Some(strata_sim::Dur::parse("1s").unwrap()),
        no_what_if: true,
        out: PathBuf::from("."),
        ..Default::default()
    })
    .unwrap();
    assert!(out.contains("nodes"), "{out}");
    // A node's scenario cannot be sized for a rate: that is a cluster's
    // question.
    let mut args = seed_args();
    args.sizing.size_for = Some(1000.0);
    let e = run(&args).unwrap_err();
    assert!(e.contains("--size-for needs a cluster scenario"), "{e}");
}
