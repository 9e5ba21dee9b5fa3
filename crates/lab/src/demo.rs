//! `strata demo`: Strata's main job on embedded defaults, in under two
//! minutes. Starts a local node (a child process; the caller says how)
//! with its data under a directory it creates, runs a short sweep against
//! it, writes the report, prints the verdict and the report's path, and
//! stops the node. Owns that sequence; must not know how a node is built.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::load::TargetArgs;
use crate::slo::SloArgs;
use crate::sweep::{self, SweepArgs};

#[derive(clap::Args, Clone, Debug)]
pub struct DemoArgs {
    /// Directory for the node's data and the report (created).
    #[arg(long, default_value = "strata-demo")]
    pub dir: PathBuf,
    /// Workload of the sweep.
    #[arg(long, default_value = "put")]
    pub workload: String,
    /// Latency objective of the sweep.
    #[arg(long, default_value = "p99<=10ms")]
    pub slo: String,
    /// Seconds each trial is counted.
    #[arg(long, default_value_t = 4.0)]
    pub trial: f64,
    /// Most trials (each about trial + 2 seconds).
    #[arg(long, default_value_t = 12)]
    pub max_trials: usize,
}

/// A node child process, stopped with SIGTERM when dropped.
struct Node {
    child: Child,
}

impl Drop for Node {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

/// Start the node with `serve` (given `--listen` and `--data-dir` here)
/// and return it with the URL it announced.
fn start(serve: &mut Command, data: &Path) -> Result<(Node, String), String> {
    serve
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = serve
        .spawn()
        .map_err(|e| format!("starting the node: {e}"))?;
    let out = child.stdout.take().expect("piped");
    let node = Node { child };
    let mut line = String::new();
    BufReader::new(out)
        .read_line(&mut line)
        .map_err(|e| format!("reading the node's address: {e}"))?;
    let url = line
        .trim()
        .rsplit_once("listening on ")
        .map(|(_, u)| u.to_string())
        .ok_or_else(|| format!("the node said {line:?}, not its address"))?;
    Ok((node, url))
}

/// Run the demo; `serve` is a command that runs `strata serve`.
pub fn run(a: &DemoArgs, mut serve: Command) -> Result<(), String> {
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    let data = a.dir.join("data");
    let report = a.dir.join("report");
    println!("Starting a local node, data in {}", data.display());
    let (node, url) = start(&mut serve, &data)?;
    println!(
        "Node at {url}; sweeping {} load for the breaking point of {}",
        a.workload, a.slo
    );
    let args = SweepArgs {
        target: TargetArgs {
            url,
            workload: a.workload.clone(),
            keys: 1_000_000,
            value_size: 100,
            connections: 64,
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
    let r = sweep::main(&args);
    drop(node);
    std::thread::sleep(Duration::from_millis(10));
    r?;
    println!("Node stopped. Data in {}", data.display());
    Ok(())
}
