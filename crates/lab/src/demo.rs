//! `strata demo`: Strata's main job on embedded defaults, in a few
//! minutes. Starts a local cluster (three `strata serve` processes, a
//! generated secret; the caller says how to run `strata`) under a
//! directory it creates, sweeps it through every node for its breaking
//! point, writes the report and prints its verdict, then runs the checked
//! workload while one node is killed and restarted and prints what the
//! checker found and how long the node took to be level again; stops the
//! cluster. Owns that sequence; must not know how a node is built.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::cluster::campaign::{self, RunOptions};
use crate::cluster::fault::Fault;
use crate::cluster::local::{ClusterOptions, LocalCluster};
use crate::load::TargetArgs;
use crate::slo::SloArgs;
use crate::sweep::{self, SweepArgs};

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
    /// Most trials (each about trial + 2 seconds).
    #[arg(long, default_value_t = 12)]
    pub max_trials: usize,
    /// The fault after the sweep: kill, stop, partition, clock, or none.
    #[arg(long, default_value = "kill")]
    pub fault: String,
    /// Acknowledged writes of the checked run under the fault.
    #[arg(long, default_value_t = 20_000)]
    pub fault_writes: u64,
}

/// Run the demo; `strata` runs the `strata` binary (the launcher adds
/// `serve` and its flags).
pub fn run(a: &DemoArgs, strata: Command) -> Result<(), String> {
    let fault = match a.fault.as_str() {
        "none" => None,
        f => Some(f.parse::<Fault>()?),
    };
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    let data = a.dir.join("cluster");
    let report = a.dir.join("report");
    let mut o = ClusterOptions::new(a.nodes, &data);
    let mut plan = None;
    if let Some(f) = fault {
        let mut r = RunOptions::new(f, a.fault_writes, &data);
        r.plan.node = a.nodes.saturating_sub(1);
        r.plan.prepare(&mut o);
        plan = Some(r);
    }
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
    let args = SweepArgs {
        target: TargetArgs {
            url: urls,
            workload: a.workload.clone(),
            keys: 1_000_000,
            value_size: 100,
            connections: 64,
            max_connections: 10_000,
            drop_after: 1.0,
            threads: 1,
            arrivals: "constant".into(),
            seed: 1,
            warmup: 1.0,
            out: Some(report.clone()),
            preload: false,
            json: false,
            quiet: false,
        },
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
    };
    let swept = sweep::main(&args);
    let checked = match (&swept, &plan) {
        (Ok(()), Some(r)) => {
            println!();
            println!(
                "Fault: {} on node-{} while {} checked writes are acknowledged (ack={}&from={}); the checker looks for lost writes and stale reads",
                describe(r),
                r.plan.node + 1,
                r.writes,
                r.quorum.ack_write.unwrap_or(0),
                r.quorum.from.unwrap_or(0),
            );
            campaign::run_on(r, &mut cluster).map(Some)
        }
        _ => Ok(None),
    };
    let _ = cluster.terminate_all();
    std::thread::sleep(Duration::from_millis(10));
    swept?;
    if let Some(res) = checked? {
        println!("{}", res.report);
        println!(
            "Faulted node level again (no hints pending for it) {} after its return; every node's own store held {} of {} acknowledged writes before the final reads",
            res.level_after
                .map(|d| format!("{:.2} s", d.as_secs_f64()))
                .unwrap_or_else(|| "-".into()),
            res.own_missing
                .iter()
                .map(|m| (res.own_checked - m).to_string())
                .collect::<Vec<_>>()
                .join("/"),
            res.own_checked,
        );
        println!(
            "Fault verdict: {}",
            if res.passed() {
                "PASSED: nothing acknowledged was lost, no read went back in time"
            } else {
                "FAILED (see above)"
            }
        );
        if !res.passed() {
            println!("Cluster stopped. Data in {}", data.display());
            return Err("the checked run under the fault failed".into());
        }
    }
    println!("Cluster stopped. Data in {}", data.display());
    Ok(())
}

fn describe(r: &RunOptions) -> String {
    let hold = r.plan.hold.as_secs_f64();
    match r.plan.fault {
        Fault::Kill => format!("SIGKILL, {hold:.0} s down, restart"),
        Fault::Stop => format!("SIGSTOP for {hold:.0} s, then SIGCONT"),
        Fault::Partition => format!("cut off from the others for {hold:.0} s"),
        Fault::Clock => format!("clock {:+} ms off", r.plan.clock_offset_ms),
    }
}
