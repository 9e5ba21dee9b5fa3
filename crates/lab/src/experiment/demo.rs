//! `strata demo`: Strata's main job on embedded defaults, in a few
//! minutes. Starts a local cluster (three `strata serve` processes, a
//! generated secret; the caller says how to run `strata`) under a
//! directory it creates, sweeps it through every node for its breaking
//! point, writes the report and prints its verdict, then offers half that
//! rate for a while with the consistency checker's clients alongside while
//! a fault schedule runs (a node killed and restarted, by default), and
//! prints the faults' marks, the recovery times and what the checker
//! found, with a report of its own; stops the cluster. Owns that
//! sequence; must not know how a node is built.

use std::path::PathBuf;
use std::process::Command;

use crate::experiment::slo::SloArgs;
use crate::experiment::sweep::{self, SweepArgs};
use crate::experiment::target::TargetArgs;
use crate::experiment::trial::LoadArgs;
use crate::nemesis::during::DuringArgs;
use crate::nemesis::local::{ClusterOptions, LocalCluster};
use crate::nemesis::step::{Kind, Step};

#[derive(clap::Args, Clone, Debug)]
pub struct DemoArgs {
    /// Directory for the cluster's data and the report (created).
    #[arg(long, default_value = "strata-demo")]
    pub dir: PathBuf,
    /// Nodes in the local cluster.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Workload of the sweep.
    #[arg(long, default_value = "put")]
    pub workload: String,
    /// Latency objective of the sweep.
    #[arg(long, default_value = "p99<=10ms")]
    pub slo: String,
    /// How long each trial is counted (4s; a bare number is seconds).
    #[arg(long, default_value_t = 4.0, value_parser = crate::units::seconds)]
    pub trial: f64,
    /// Most trials (each about trial + 2 seconds), the repeats of the
    /// deciding rates included.
    #[arg(long, default_value_t = 18)]
    pub max_trials: usize,
    /// The faults of the checked run after the sweep, as `strata load
    /// --fault` takes them (repeatable: kill:3@5s+5s, pause:1@5s+3s,
    /// partition:2@5s+5s, clock:3+10s); `none` for no checked run.
    #[arg(long = "fault", default_value = "kill:3@5s+5s")]
    pub faults: Vec<String>,
    /// How long the checked run under the faults lasts (20s; a bare
    /// number is seconds).
    #[arg(long, default_value_t = 20.0, value_parser = crate::units::seconds)]
    pub fault_run: f64,
}

/// Run the demo; `strata` runs the `strata` binary (the launcher adds
/// `serve` and its flags).
pub fn run(a: &DemoArgs, strata: Command) -> Result<(), String> {
    let faults: Vec<Step> = if a.faults.iter().any(|f| f == "none") {
        Vec::new()
    } else {
        a.faults
            .iter()
            .map(|f| Step::parse(f))
            .collect::<Result<_, _>>()?
    };
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    let data = a.dir.join("cluster");
    let report = a.dir.join("report");
    let mut o = ClusterOptions::new(a.nodes, &data);
    o.proxied = faults.iter().any(|f| f.kind == Kind::Partition);
    crate::nemesis::step::validate(&faults, a.nodes, o.proxied, o.netns)?;
    println!(
        "Starting a local cluster of {} nodes, data in {}",
        a.nodes,
        data.display()
    );
    let mut cluster = LocalCluster::start(&o, strata)?;
    let urls = cluster.urls().join(",");
    println!(
        "Cluster at {urls}; sweeping {} load through every node (the nodes' default ack/from) for the breaking point of {}",
        a.workload, a.slo
    );
    let target = TargetArgs {
        url: urls,
        workload: a.workload.clone(),
        keys: 1_000_000,
        value_size: 100,
        connections: 64,
        max_connections: crate::experiment::trial::MAX_CONNECTIONS,
        drop_after: 1.0,
        threads: 1,
        arrivals: "constant".into(),
        seed: 1,
        warmup: 1.0,
        out: Some(report.clone()),
        preload: false,
        json: false,
        quiet: false,
        ack: None,
        from: None,
        client: Default::default(),
    };
    let args = SweepArgs {
        target: target.clone(),
        objective: SloArgs {
            slo: a.slo.clone(),
            max_errors: "0.1%".into(),
        },
        start_rate: 2000.0,
        max_rate: 1_000_000.0,
        duration: a.trial,
        precision: 0.1,
        max_trials: a.max_trials,
        pause: 0.5,
        check: false,
        check_clients: 4,
        workers: Default::default(),
        repeats: 3,
        tail_samples: 100,
    };
    let swept = sweep::run(&args, &mut |line| println!("{line}")).and_then(|(r, scrapes)| {
        crate::report::write_dir(&report, &r, &scrapes)
            .map_err(|e| format!("{}: {e}", report.display()))?;
        println!("Report: {}", report.join("report.html").display());
        Ok(r.breaking_point)
    });
    let checked = match (&swept, faults.is_empty()) {
        (Ok(bp), false) => {
            let rate = (bp.unwrap_or(args.start_rate) * 0.5).max(100.0).round();
            let out = a.dir.join("fault-report");
            println!();
            println!(
                "Faults: {} during {:.0} s at {rate} req/s (half the breaking point), with the consistency checker's clients alongside",
                faults.iter().map(|f| f.spec.as_str()).collect::<Vec<_>>().join(", "),
                a.fault_run
            );
            let la = LoadArgs {
                target: TargetArgs {
                    out: Some(out.clone()),
                    quiet: true,
                    ..target
                },
                rate,
                uploads_per_day: None,
                duration: a.fault_run,
                clients: 0,
                think: 0.0,
                hdr: None,
                objective: Default::default(),
                share: Default::default(),
                workers: Default::default(),
                during: DuringArgs {
                    faults,
                    check: true,
                    ..DuringArgs::default()
                },
            };
            crate::experiment::trial::run_on(&la, Some(&mut cluster)).and_then(|r| {
                crate::report::write_dir(&out, &r.report, &r.scrapes)
                    .map_err(|e| format!("{}: {e}", out.display()))?;
                Ok(Some((r, out)))
            })
        }
        _ => Ok(None),
    };
    let _ = cluster.terminate_all();
    swept?;
    if let Some((r, out)) = checked? {
        print!(
            "{}",
            crate::experiment::trial::summary(r.trial(), &r.outcome)
        );
        print!(
            "{}",
            crate::report::alongside::summary(&r.report.faults, r.report.check.as_ref())
        );
        if let Some(c) = &r.report.check {
            if !c.passed {
                println!("{}", c.text);
            }
        }
        println!("Report: {}", out.join("report.html").display());
        let t = r.trial();
        let failed = t.errors as f64 / t.requests.max(1) as f64;
        println!(
            "Requests failed during the faults: {} of {} ({:.3}%){}",
            t.errors,
            t.requests,
            failed * 100.0,
            match (&t.client, failed <= 0.001) {
                (Some(_), true) => ": within 0.1 %, the client moved requests off the faulted node",
                (Some(_), false) =>
                    ": more than 0.1 %, though the client failed over (see the report)",
                (None, _) => " (the lab drove each node directly)",
            }
        );
        let passed = r.report.check.as_ref().is_some_and(|c| c.passed);
        println!(
            "Fault verdict: {}",
            if passed {
                "PASSED: nothing acknowledged was lost, no read went back in time"
            } else {
                "FAILED (see above)"
            }
        );
        if !passed {
            println!("Cluster stopped. Data in {}", data.display());
            return Err("the checked run under the faults failed".into());
        }
    }
    println!("Cluster stopped. Data in {}", data.display());
    Ok(())
}
