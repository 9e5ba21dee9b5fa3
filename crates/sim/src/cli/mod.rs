//! `strata sim`'s command line: its arguments (`SimArgs`), a scenario
//! from them (a file, a node's or a report's `/metrics`, a cluster's),
//! the overrides and sweeps they ask for, and the run that prints the
//! report (`run`, `run_scenario`); a cluster scenario's run, what-ifs
//! and JSON (`cluster`). Owns parsing and printing; must not model
//! anything itself (the other modules do).

pub mod cluster;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::calibrate::node::{scenario_from_metrics, CalibrateOptions};
use crate::calibrate::CalibrationError;
use crate::model::node::Sim;
use crate::report::cluster as cluster_report;
use crate::report::node::analyse;
use crate::report::node::text as report;
use crate::scenario;
use crate::scenario::node::Scenario;
use crate::scenario::Config;
use crate::sweep;
use crate::units::{self, Dur};

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("{0}")]
    Scenario(String),
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SimError + '_ {
    move |source| SimError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn parse_dur(s: &str) -> Result<Dur, String> {
    Dur::parse(s)
}

/// The files a lab report directory keeps the target's `/metrics` in,
/// before and after the run (the lab writes them under these names).
pub const REPORT_METRICS_START: &str = "metrics-start.txt";
pub const REPORT_METRICS_END: &str = "metrics-end.txt";

/// `strata sim`'s arguments.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SimArgs {
    /// The scenario (TOML): clients, then the stages in order. See
    /// scenarios/*.toml and docs/simulator.md.
    #[arg(
        value_name = "SCENARIO.toml",
        required_unless_present_any = ["from_metrics", "from_node", "from_report"]
    )]
    pub scenario: Option<PathBuf>,
    /// Random seed; the same seed gives the same run [default: the
    /// scenario's, else 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Virtual time measured, like 60s or 10m [default: the scenario's].
    #[arg(long, value_parser = parse_dur)]
    pub duration: Option<Dur>,
    /// Virtual time simulated before measuring [default: the scenario's].
    #[arg(long, value_parser = parse_dur)]
    pub warmup: Option<Dur>,
    /// Number of closed-loop clients (same as --set clients=N).
    #[arg(long)]
    pub clients: Option<u32>,
    /// Override a parameter: a stage name or top-level key, then fields,
    /// e.g. semaphore.permits=16, store.latency.sd=0.1ms, clients.rate=5000.
    /// Repeatable.
    #[arg(long = "set", value_name = "PARAM=VALUE")]
    pub set: Vec<String>,
    /// One JSON object instead of text (with --sweep: one object with a row
    /// per value).
    #[arg(long)]
    pub json: bool,
    /// Run once per value and print one row each, e.g.
    /// clients=1,15,125,135,1000; also writes an SVG chart to --out.
    #[arg(long, value_name = "PARAM=V1,V2,...")]
    pub sweep: Option<String>,
    /// Directory for the sweep's SVG chart.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Build the scenario of a Strata node from its saved /metrics text
    /// instead of a scenario file.
    #[arg(long, value_name = "FILE", conflicts_with = "scenario")]
    pub from_metrics: Option<PathBuf>,
    /// Build the scenario of a Strata node from a lab report directory
    /// (`strata load` or `strata sweep` against it): the node's /metrics
    /// after the run, less those before it.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["scenario", "from_metrics", "from_node", "baseline"])]
    pub from_report: Option<PathBuf>,
    /// Build the scenario of a running Strata node from its /metrics
    /// (http://HOST:PORT), read now: run some load against it first.
    #[arg(long, value_name = "URL", conflicts_with_all = ["scenario", "from_metrics"])]
    pub from_node: Option<String>,
    /// With --from-metrics or --from-node: a scrape taken before the load
    /// (curl URL/metrics > FILE); counters and histograms are the
    /// difference.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// With a node's metrics: CPU cores the node can use (the load
    /// generator may share the machine) [default: the CPUs the node reports it may run on, else this machine's].
    #[arg(long)]
    pub cores: Option<u32>,
    /// With a node's metrics: the open-loop rate [default: 80% of the
    /// predicted capacity].
    #[arg(long)]
    pub rate: Option<f64>,
    /// Write the scenario as run (after --set, --clients, --duration) to
    /// this TOML file, to keep or edit.
    #[arg(long, value_name = "FILE")]
    pub save_scenario: Option<PathBuf>,
    /// With a cluster scenario: skip the what-ifs (more nodes, ack=1, a
    /// node down) and their breaking-point searches.
    #[arg(long)]
    pub no_what_if: bool,
    #[command(flatten)]
    pub sizing: cluster_report::SizingArgs,
}

impl SimArgs {
    /// The calibration options these arguments ask for (baseline read).
    pub fn calibrate_options(&self) -> Result<CalibrateOptions, SimError> {
        let baseline = match (&self.from_report, &self.baseline) {
            (Some(dir), _) => {
                let p = dir.join(REPORT_METRICS_START);
                Some(std::fs::read_to_string(&p).map_err(io_err(&p))?)
            }
            (None, Some(p)) => Some(std::fs::read_to_string(p).map_err(io_err(p))?),
            (None, None) => None,
        };
        Ok(CalibrateOptions {
            cores: self.cores,
            baseline,
            rate: self.rate,
            max_batch: None,
            name: None,
            shared_per_request: None,
            background_cores: None,
        })
    }
}

/// Reads a node's `/metrics` text from its URL (the caller's HTTP client:
/// this crate speaks no HTTP).
pub type FetchMetrics<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// The scenario the arguments name, in the configuration it has: a file
/// (a node's, or a cluster's when it has a `[cluster]` table), or a node
/// calibrated from `--from-metrics`, `--from-report`, or `--from-node`
/// through `fetch`; and the directory its relative paths start from.
pub fn config_from_args(
    args: &SimArgs,
    fetch: Option<FetchMetrics>,
) -> Result<(Config, PathBuf), SimError> {
    if let Some(url) = &args.from_node {
        let fetch = fetch.ok_or_else(|| {
            SimError::Scenario("--from-node: no HTTP client in this program".into())
        })?;
        let text = fetch(url).map_err(|e| SimError::Scenario(format!("{url}: {e}")))?;
        let s = scenario_from_metrics(&text, &args.calibrate_options()?)?;
        return Ok((Config::Node(Box::new(s)), PathBuf::from(".")));
    }
    if args.baseline.is_some() && args.from_metrics.is_none() && args.from_node.is_none() {
        return Err(SimError::Scenario(
            "--baseline goes with --from-metrics or --from-node".into(),
        ));
    }
    let metrics = match (&args.from_metrics, &args.from_report) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(dir)) => Some(dir.join(REPORT_METRICS_END)),
        (None, None) => None,
    };
    if let Some(p) = &metrics {
        let text = std::fs::read_to_string(p).map_err(io_err(p))?;
        let s = scenario_from_metrics(&text, &args.calibrate_options()?)?;
        return Ok((Config::Node(Box::new(s)), PathBuf::from(".")));
    }
    let p = args.scenario.as_ref().ok_or_else(|| {
        SimError::Scenario("no scenario: give SCENARIO.toml or --from-metrics FILE".into())
    })?;
    Config::load(p).map_err(SimError::Scenario)
}

/// `strata sim`: build the scenario, run it, print to stdout. `fetch`
/// reads a node's metrics for `--from-node`.
pub fn run(args: &SimArgs, fetch: Option<FetchMetrics>) -> Result<(), SimError> {
    let (config, base) = config_from_args(args, fetch)?;
    run_config(&config, &base, args, &mut std::io::stdout().lock())
}

/// Run a scenario in either configuration as the arguments say, writing
/// the output to `out`: a node's (`run_scenario`) or a cluster's, with
/// its what-ifs (`cluster::run_cli`).
pub fn run_config(
    config: &Config,
    base: &Path,
    args: &SimArgs,
    out: &mut dyn Write,
) -> Result<(), SimError> {
    match config {
        Config::Cluster(sc) => cluster::run_cli(sc, base, args, out),
        Config::Node(_) if args.sizing.size_for.is_some() => Err(SimError::Scenario(
            "--size-for needs a cluster scenario (a [cluster] table): `strata calibrate` with \
             every node's URL writes one, or see scenarios/cluster-*.toml"
                .into(),
        )),
        Config::Node(sc) => run_scenario(sc, base, args, out),
    }
}

/// The overrides the arguments ask for, in order: --duration, --warmup,
/// --clients, then each --set; `clients` is the scenario's (a node's or a
/// cluster's: both hold one).
pub fn overrides(
    args: &SimArgs,
    clients: &scenario::Clients,
) -> Result<Vec<(String, String)>, SimError> {
    let mut sets = Vec::new();
    if let Some(d) = args.duration {
        sets.push(("duration".to_string(), d.to_string()));
    }
    if let Some(d) = args.warmup {
        sets.push(("warmup".to_string(), d.to_string()));
    }
    if let Some(n) = args.clients {
        if !matches!(clients, scenario::Clients::Closed { .. }) {
            return Err(SimError::Scenario(
                "--clients: this scenario's clients are an open loop; use --set clients.rate=R"
                    .into(),
            ));
        }
        sets.push(("clients.count".to_string(), n.to_string()));
    }
    for s in &args.set {
        sets.push(scenario::parse_assignment(s).map_err(SimError::Scenario)?);
    }
    Ok(sets)
}

/// Run a scenario (from a file, from metrics, or built by the caller, say
/// from a live node) as the arguments say, writing the output to `out`.
pub fn run_scenario(
    sc: &Scenario,
    base: &Path,
    args: &SimArgs,
    out: &mut dyn Write,
) -> Result<(), SimError> {
    let sets = overrides(args, &sc.clients)?;
    let stdout_err = io_err(Path::new("<stdout>"));
    let effective = sc.with_overrides(&sets).map_err(SimError::Scenario)?;
    let seed = args.seed.unwrap_or(effective.seed);
    if let Some(p) = &args.save_scenario {
        let text = effective.to_toml().map_err(SimError::Scenario)?;
        std::fs::write(p, text).map_err(io_err(p))?;
    }
    if let Some(sw) = &args.sweep {
        let (param, values) = sweep::parse_sweep(sw).map_err(SimError::Scenario)?;
        let mut write_err = None;
        if !args.json {
            let _ = writeln!(
                out,
                "strata sim: {} (seed {seed}), sweep of {param}; {} measured per run",
                effective.name, effective.duration
            );
            if let Err(e) = writeln!(out, "{}", sweep::header(&param)) {
                return Err(stdout_err(e));
            }
        }
        let json = args.json;
        let rows = sweep::sweep(sc, base, seed, &sets, &param, &values, &mut |r| {
            if !json {
                if let Err(e) = writeln!(out, "{}", sweep::line(r)) {
                    write_err.get_or_insert(e);
                }
                let _ = out.flush();
            }
        })
        .map_err(SimError::Scenario)?;
        if let Some(e) = write_err {
            return Err(stdout_err(e));
        }
        let svg = sweep::svg(&effective.name, &param, &rows).map_err(SimError::Scenario)?;
        std::fs::create_dir_all(&args.out).map_err(io_err(&args.out))?;
        let file = args.out.join(format!(
            "sim-sweep-{}-{}.svg",
            slug(&effective.name),
            slug(&param)
        ));
        std::fs::write(&file, svg).map_err(io_err(&file))?;
        let events: u64 = rows.iter().map(|r| r.events).sum();
        let wall: f64 = rows.iter().map(|r| r.wall_s).sum();
        let text = if args.json {
            serde_json::to_string_pretty(&serde_json::json!({
                "scenario": effective.name,
                "seed": seed,
                "param": param,
                "rows": rows,
                "chart": file,
                "perf": { "events": events, "wall_s": wall, "events_per_s": events as f64 / wall.max(1e-9) },
            }))
            .expect("serializable")
        } else {
            format!(
                "chart: {}\nsimulated {} runs in {:.3} s of wall time: {} events, {:.1} M events/s",
                file.display(),
                rows.len(),
                wall,
                units::grouped(events as i64),
                events as f64 / wall.max(1e-9) / 1e6
            )
        };
        writeln!(out, "{text}").map_err(stdout_err)?;
        return Ok(());
    }
    let run = Sim::new(&effective, base, seed)
        .map_err(SimError::Scenario)?
        .run();
    let a = analyse(&run);
    let text = if args.json {
        report::json(&run, &a)
    } else {
        report::text(&run, &a, true)
    };
    write!(out, "{text}").map_err(stdout_err)?;
    if args.json {
        writeln!(out).map_err(io_err(Path::new("<stdout>")))?;
    }
    Ok(())
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
