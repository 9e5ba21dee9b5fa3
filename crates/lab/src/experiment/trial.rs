//! `strata load URL[,URL...]`: one run of the driver (open loop at a
//! constant or Poisson rate, or closed-loop clients) against one node or
//! several, with a live progress line, a wrk2-style summary (per node when
//! there are several), every node's metrics sampled on the same time axis,
//! and a report directory. Also the pieces a sweep shares: the target and
//! workload arguments and turning a driver outcome into a report trial.
//! Owns the command's behaviour; must not pace or time requests itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::experiment::slo::{load_ending, Ending};
use crate::load::driver::{self, Outcome, Pace, Plan};
use crate::load::nodes::Nodes;
use crate::load::schedule::Arrivals;
use crate::load::workload::Workload;
use crate::report::model::{self, NodeSummary, Percentiles, Report, RunKind, ServerSample, Trial};
use crate::report::scrape::{Sampler, Scrapes};

/// The default of `--max-connections` (each thread its share).
pub const MAX_CONNECTIONS: usize = 256;

/// Arguments shared by `load` and `sweep`: where, what, how.
#[derive(clap::Args, Clone, Debug)]
pub struct TargetArgs {
    /// Base URL of the node, e.g. http://127.0.0.1:8080, or several
    /// nodes' URLs comma-separated (load and sweep): each connection talks
    /// to one, chosen from its own stream seeded by --seed and its index.
    #[arg(value_name = "URL[,URL...]")]
    pub url: String,
    /// A built-in workload (put, get, ...; see docs/workloads.md) or a
    /// workload TOML file.
    #[arg(long, default_value = "put")]
    pub workload: String,
    /// Size of the key space of built-in workloads.
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    /// Value size of built-in workloads, in bytes.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Open loop: keep-alive connections opened at the start. When a send
    /// finds none idle, the generator opens another, up to
    /// --max-connections, so it keeps its schedule by itself.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Open loop: the most connections the generator may open (each
    /// thread its share). Sends that find every one held wait (their
    /// latency still counts from their intended time); opening hundreds
    /// more into a stalled target would only turn a stall into a collapse
    /// that the target's cores spend accepting connections.
    #[arg(long, default_value_t = MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// A send that cannot start within this of its intended time (every
    /// connection busy, up to the cap, or the generator short of CPU) is
    /// dropped and counted as an error; requests still unanswered this
    /// long after the end are abandoned as errors, so a run ends at its
    /// duration (1s, 500ms; a bare number is seconds).
    #[arg(long, default_value_t = 1.0, value_parser = crate::units::seconds)]
    pub drop_after: f64,
    /// Generator threads (each at most one core).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Open loop: constant or poisson arrivals.
    #[arg(long, default_value = "constant", value_parser = ["constant", "poisson"])]
    pub arrivals: String,
    /// Seed of the key streams and of the connections' choice of node;
    /// each connection derives its own from it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Warm-up (30s, 1m, 500ms; a bare number is seconds): requests sent
    /// on schedule but not counted.
    #[arg(long, default_value_t = 0.0, value_parser = crate::units::seconds)]
    pub warmup: f64,
    /// Report directory (default: strata-reports/KIND-TIMESTAMP).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// First write every key the workload reads (YCSB's load phase),
    /// through every node given.
    #[arg(long)]
    pub preload: bool,
    /// Print the report as JSON on stdout instead of the text summary.
    #[arg(long)]
    pub json: bool,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
    /// Replicas that must answer each single-key request (`&ack=`; the
    /// nodes' default: a majority of `from`).
    #[arg(long)]
    pub ack: Option<u32>,
    /// Replicas each single-key request goes to (`&from=`; the nodes'
    /// default: the replication factor).
    #[arg(long)]
    pub from: Option<u32>,
    #[command(flatten)]
    pub client: crate::load::nodes::ClientArgs,
}

impl TargetArgs {
    /// The nodes of the URL argument, validated.
    pub fn nodes(&self) -> Result<Nodes, String> {
        Nodes::discover(&self.url, &self.client)
    }

    /// The one node of a command that models a single node (`calibrate`).
    pub fn single_node(&self, command: &str) -> Result<Nodes, String> {
        let n = self.nodes()?;
        if n.len() > 1 {
            return Err(format!(
                "{command} works on one node: give one URL ({} given)",
                n.len()
            ));
        }
        Ok(n)
    }

    pub fn workload(&self) -> Result<Arc<Workload>, String> {
        let w = if self.workload.ends_with(".toml") || Path::new(&self.workload).is_file() {
            Workload::from_toml_file(Path::new(&self.workload))?
        } else {
            Workload::builtin(&self.workload, self.keys, self.value_size)?
        };
        Ok(Arc::new(w))
    }

    /// Run the preload phase if asked, through every node (separate nodes
    /// each need the keys; a cluster takes the same writes again); says
    /// what it did on stderr.
    pub fn maybe_preload(&self, nodes: &Nodes, w: &Workload) -> Result<(), String> {
        if !self.preload {
            return Ok(());
        }
        for (url, target) in nodes.urls.iter().zip(&nodes.targets) {
            let (n, took) = crate::load::preload::preload(target, w, self.connections.min(64))?;
            if n > 0 && nodes.len() == 1 {
                eprintln!("Preloaded {n} keys in {:.1}s", took.as_secs_f64());
            } else if n > 0 {
                eprintln!(
                    "Preloaded {n} keys in {:.1}s through {url}",
                    took.as_secs_f64()
                );
            }
        }
        Ok(())
    }

    /// A trial of `pace` for `duration` seconds after this target's
    /// warm-up, its keys (and each connection's node) drawn from `seed`.
    pub fn plan(
        &self,
        nodes: &Nodes,
        workload: &Arc<Workload>,
        pace: Pace,
        duration: f64,
        seed: u64,
    ) -> Plan {
        Plan {
            nodes: nodes.clone(),
            pace,
            threads: self.threads.max(1),
            warmup: Duration::from_secs_f64(self.warmup),
            duration: Duration::from_secs_f64(duration),
            drop_after: Duration::from_secs_f64(self.drop_after),
            workload: workload.clone(),
            seed,
            query: self.query(),
        }
    }

    /// `--ack` and `--from` as a query suffix.
    pub fn query(&self) -> String {
        let mut q = String::new();
        if let Some(a) = self.ack {
            q += &format!("&ack={a}");
        }
        if let Some(f) = self.from {
            q += &format!("&from={f}");
        }
        q
    }

    /// Open loop at `rate` over this target's connections and arrivals.
    pub fn open(&self, rate: f64) -> Pace {
        Pace::Open {
            rate,
            arrivals: self.arrivals(),
            connections: self.connections,
            max_connections: self.max_connections,
        }
    }

    pub fn arrivals(&self) -> Arrivals {
        if self.arrivals == "poisson" {
            Arrivals::Poisson
        } else {
            Arrivals::Constant
        }
    }

    /// The report directory: `--out`, or a new one named after the time.
    pub fn out_dir(&self, kind: &str) -> PathBuf {
        self.out.clone().unwrap_or_else(|| {
            let stamp = rfc3339(SystemTime::now())
                .replace([':', '-'], "")
                .replace('T', "-")
                .trim_end_matches('Z')
                .to_string();
            PathBuf::from("strata-reports").join(format!("{kind}-{stamp}"))
        })
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct LoadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Requests per second to offer (open loop).
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// libri: the rate as uploads per day (8 requests each), instead of
    /// --rate.
    #[arg(long)]
    pub uploads_per_day: Option<f64>,
    /// How long to run after the warm-up (30s, 1m, 500ms; a bare number
    /// is seconds).
    #[arg(long, default_value_t = 10.0, value_parser = crate::units::seconds)]
    pub duration: f64,
    /// Closed loop instead: this many clients, each sending a request,
    /// waiting for its answer, then thinking. Latency is then measured from
    /// the actual send, as such clients do (and a stall hides in it).
    #[arg(long, default_value_t = 0)]
    pub clients: usize,
    /// Closed loop: how long each client thinks between requests (500ms,
    /// 1s; a bare number is seconds).
    #[arg(long, default_value_t = 0.0, value_parser = crate::units::seconds)]
    pub think: f64,
    /// Also write the latency histograms, one per operation per second, in
    /// HdrHistogram's interval log format (merge several with
    /// `strata report merge`).
    #[arg(long)]
    pub hdr: Option<PathBuf>,
    /// Faults and the consistency checker alongside the load.
    #[command(flatten)]
    pub during: crate::nemesis::during::DuringArgs,
    #[command(flatten)]
    pub objective: crate::experiment::slo::LoadObjective,
}

/// A load run: the driver's outcome, the report trial, the whole report.
pub struct LoadRun {
    pub outcome: Outcome,
    pub report: Report,
    /// The nodes' `/metrics` before and after the run.
    pub scrapes: Scrapes,
}

impl LoadRun {
    pub fn trial(&self) -> &Trial {
        &self.report.trials[0]
    }
}

/// The progress line: elapsed, sent, achieved rate, p50 and p99, errors.
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        if quiet {
            return Progress(None);
        }
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_style(indicatif::ProgressStyle::with_template("{spinner} {msg}").expect("template"));
        Progress(Some(pb))
    }

    pub fn show(&self, prefix: &str, s: &driver::Snapshot) {
        let Some(pb) = &self.0 else { return };
        let secs = s.elapsed.as_secs_f64();
        let msg = if s.warming {
            format!("{prefix}warming up: sent {}", s.sent)
        } else {
            format!(
                "{prefix}{secs:>5.1}s  sent {}  {:.0} req/s  p50 {:.2} ms  p99 {:.2} ms  errors {}",
                s.sent,
                s.done as f64 / secs.max(1e-3),
                s.p50_us as f64 / 1000.0,
                s.p99_us as f64 / 1000.0,
                s.errors
            )
        };
        pb.set_message(msg);
        pb.tick();
    }

    pub fn finish(&self) {
        if let Some(pb) = &self.0 {
            pb.finish_and_clear();
        }
    }
}

/// Run one trial of `plan`, with the samples `sampler` (of the plan's
/// nodes) takes meanwhile (`origin` is the run's time zero for the
/// report's axes).
pub fn run_trial(
    plan: &Plan,
    origin: Instant,
    progress: &Progress,
    prefix: &str,
    on_second: &mut dyn FnMut(&driver::Second),
    sampler: &Sampler,
) -> Result<(Outcome, Trial), String> {
    let started = Instant::now();
    let client_before = plan.nodes.client.as_ref().map(|c| c.stats().snapshot());
    // The generator's threads from the end of the warm-up on.
    let mut own = crate::load::cpu::OwnThreads::default();
    let outcome = driver::run(plan, on_second, &mut |s| {
        if !s.warming {
            own.mark();
        }
        progress.show(prefix, s)
    })?;
    let own = own.since(&outcome.generator_threads);
    progress.finish();
    let started_s = started.duration_since(origin).as_secs_f64() + plan.warmup.as_secs_f64();
    let end_s = started_s + outcome.elapsed.as_secs_f64();
    let during = |v: Vec<ServerSample>| -> Vec<ServerSample> {
        v.into_iter()
            .filter(|s| s.t_s > started_s && s.t_s <= end_s + 0.5)
            .collect()
    };
    let server = during(sampler.snapshot());
    let per_node = sampler.snapshot_nodes().into_iter().map(during).collect();
    let mut trial = to_trial(plan, &outcome, started_s, server, per_node);
    trial.generator_threads = own;
    for (n, threads) in trial
        .per_node
        .iter_mut()
        .zip(sampler.threads_between(started_s, end_s + 0.5))
    {
        n.threads = threads;
    }
    trial.client = plan
        .nodes
        .client
        .as_ref()
        .zip(client_before)
        .map(|(c, before)| {
            c.stats()
                .snapshot()
                .into_iter()
                .zip(before)
                .map(|((name, after), (_, b))| (name.to_string(), after.saturating_sub(b)))
                .collect()
        });
    Ok((outcome, trial))
}

/// The report's view of one outcome: `server` holds the samples summed
/// over the nodes, `node_server` each node's own (in the plan's order).
pub fn to_trial(
    plan: &Plan,
    o: &Outcome,
    started_s: f64,
    server: Vec<ServerSample>,
    mut node_server: Vec<Vec<ServerSample>>,
) -> Trial {
    let (offered_rate, clients) = match plan.pace {
        Pace::Open { rate, .. } => (Some(rate), None),
        Pace::Closed { clients, .. } => (None, Some(clients)),
    };
    let (cpu, rss) = crate::report::model::cpu_and_rss(&server);
    node_server.resize(plan.nodes.len(), Vec::new());
    let per_node = plan
        .nodes
        .urls
        .iter()
        .zip(node_server)
        .enumerate()
        .map(|(i, (url, samples))| {
            let totals = o.per_node.get(i).copied().unwrap_or_default();
            let (cpu, rss) = crate::report::model::cpu_and_rss(&samples);
            NodeSummary {
                url: url.clone(),
                connections: totals.connections,
                requests: totals.requests,
                errors: totals.errors,
                server: samples,
                server_cpu_cores: cpu,
                server_rss_bytes: rss,
                threads: Vec::new(),
            }
        })
        .collect();
    Trial {
        offered_rate,
        clients,
        started_s,
        duration_s: o.elapsed.as_secs_f64(),
        // Dropped sends count as requests that failed: dropping must never
        // make a saturated target look healthy.
        requests: o.counted + o.dropped,
        achieved_rate: o.achieved_rate(),
        errors: o.errors + o.dropped,
        error_pct: 100.0 * (o.errors + o.dropped) as f64 / (o.counted + o.dropped).max(1) as f64,
        latency: Percentiles::from_hist(&o.all),
        per_op: o
            .per_op
            .iter()
            .map(|p| model::OpSummary {
                op: p.op.to_string(),
                requests: p.requests,
                errors: p.errors,
                latency: Percentiles::from_hist(&p.hist),
            })
            .collect(),
        spectrum: model::spectrum_from_hist(&o.all),
        timeline: o
            .timeline
            .iter()
            .map(|s| model::Second {
                t_s: started_s + s.index as f64,
                requests: s.requests,
                errors: s.errors,
                p50_ms: s.p50_us as f64 / 1000.0,
                p99_ms: s.p99_us as f64 / 1000.0,
                max_ms: s.max_us as f64 / 1000.0,
                per_node: s
                    .per_node
                    .iter()
                    .map(|&(requests, errors, p99_us)| model::NodeSecond {
                        requests,
                        errors,
                        p99_ms: p99_us as f64 / 1000.0,
                    })
                    .collect(),
            })
            .collect(),
        meets_slo: None,
        late_sends: o.late,
        max_lag_ms: o.max_lag.as_secs_f64() * 1000.0,
        dropped_sends: o.dropped,
        unfinished: o.unfinished,
        connections_opened: Some(o.connections),
        capped_sends: o.capped,
        generator_cpu_cores: None,
        machine_cpu_cores: None,
        distinct_keys: Some(o.distinct_keys),
        server_cpu_cores: cpu,
        server_rss_bytes: rss,
        server,
        per_node,
        slowest: crate::load::slowest::breakdown(&o.slowest, &plan.nodes.urls),
        generator_late_sends: o.generator_late,
        resources: Vec::new(),
        repeat: None,
        // Of each thread's wall time, waiting for a CPU.
        client: None,
        generator_threads: Vec::new(),
        failed_statuses: o.failed_statuses(),
        first_failure: o.first_failure_words(&plan.nodes.urls),
        generator_run_queue_share: (!(o.generator_on_cpu + o.generator_run_queue).is_zero()).then(
            || {
                o.generator_run_queue.as_secs_f64()
                    / (o.elapsed.as_secs_f64() * plan.threads.max(1) as f64).max(1e-3)
            },
        ),
    }
}

impl LoadArgs {
    pub fn plan(&self) -> Result<Plan, String> {
        let t = &self.target;
        if !crate::experiment::slo::positive(self.duration) || t.warmup < 0.0 {
            return Err("--duration must be positive and --warmup not negative".into());
        }
        let pace = if self.clients > 0 {
            Pace::Closed {
                clients: self.clients,
                think: Duration::from_secs_f64(self.think.max(0.0)),
            }
        } else {
            t.open(match self.uploads_per_day {
                Some(u) => crate::load::workload::libri_rate_from_uploads_per_day(u),
                None => self.rate,
            })
        };
        Ok(t.plan(&t.nodes()?, &t.workload()?, pace, self.duration, t.seed))
    }
}

/// Run the load and build its report (nothing is written or printed).
/// With `--fault`, the faults go to the cluster `strata cluster up` runs
/// in `--cluster-dir`, through its control socket.
pub fn run(a: &LoadArgs) -> Result<LoadRun, String> {
    if a.during.faults.is_empty() {
        return run_on::<crate::nemesis::control::Control>(a, None);
    }
    let mut c = crate::nemesis::control::Control::connect(&a.during.cluster_dir)?;
    run_on(a, Some(&mut c))
}

/// [`run`], with the faults of `--fault` injected into `target` (a
/// cluster the lab started).
pub fn run_on<T: crate::nemesis::schedule::Target + Send>(
    a: &LoadArgs,
    target: Option<&mut T>,
) -> Result<LoadRun, String> {
    let plan = a.plan()?;
    a.target.maybe_preload(&plan.nodes, &plan.workload)?;
    let origin = Instant::now();
    let started_at = rfc3339(SystemTime::now());
    let sampler = Sampler::start(&plan.nodes.targets, origin, Duration::from_secs(1));
    let progress = Progress::new(a.target.quiet || a.target.json);
    let mut hdr = match &a.hdr {
        Some(p) => Some(
            crate::report::hdrlog::HdrLogWriter::create(p, SystemTime::now())
                .map_err(|e| format!("{}: {e}", p.display()))?,
        ),
        None => None,
    };
    let mut hdr_err = None;
    let warm = plan.warmup.as_secs_f64();
    let mut on_second = |s: &driver::Second| {
        if let Some(w) = hdr.as_mut() {
            for (op, h) in &s.per_op {
                if let Err(e) = w.interval(warm + s.index as f64, 1.0, op, h) {
                    hdr_err.get_or_insert(e.to_string());
                }
            }
        }
    };
    let expected = plan.warmup + plan.duration + plan.drop_after;
    let (r, found) = crate::nemesis::during::around(
        &a.during,
        &plan.nodes.urls,
        plan.nodes.client.as_ref(),
        target,
        origin,
        expected,
        || run_trial(&plan, origin, &progress, "", &mut on_second, &sampler),
    )?;
    let scrapes = sampler.stop();
    let (outcome, trial) = r?;
    let faults = crate::report::alongside::with_recovery(found.faults, &trial);
    let check = found
        .checked
        .as_ref()
        .map(|c| crate::report::alongside::check_summary(c, found.linear.as_ref()));
    if let Some(w) = hdr {
        w.finish().map_err(|e| e.to_string())?;
    }
    if let Some(e) = hdr_err {
        return Err(format!("writing the HDR log: {e}"));
    }
    let how = match plan.pace {
        Pace::Open { rate, .. } => format!("{rate} req/s offered"),
        Pace::Closed { clients, .. } => format!("{clients} closed-loop clients"),
    };
    let report = Report {
        faults,
        check,
        kind: RunKind::Load,
        title: format!("load of {}: {how}", a.target.url),
        started_at,
        command: command_line(),
        target: a.target.url.clone(),
        workload: plan.workload.describe(),
        slo: None,
        trials: vec![trial],
        breaking_point: None,
        verdict: None,
        cause: None,
        cause_node: None,
        verdict_trial_rate: None,
        breaking_range: None,
        unseen: scrapes.refusals(),
    };
    Ok(LoadRun {
        outcome,
        report,
        scrapes,
    })
}

/// `strata load`: run, print, write the report directory.
/// `strata load`: run, print the summary, write the report, and say how
/// the run ended against its objective (`slo::load_ending`).
pub fn main(a: &LoadArgs) -> Result<Ending, String> {
    let objective = a.objective.parse()?;
    let r = run(a)?;
    let dir = a.target.out_dir("load");
    crate::report::write_dir(&dir, &r.report, &r.scrapes)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    if a.target.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r.report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", summary(r.trial(), &r.outcome));
        print!(
            "{}",
            crate::report::alongside::summary(&r.report.faults, r.report.check.as_ref())
        );
        println!("  Report: {}", dir.join("report.html").display());
    }
    Ok(load_ending(
        objective.as_ref(),
        r.trial(),
        &|q| r.outcome.all.value_at_quantile(q) as f64 / 1000.0,
        r.report.check.as_ref().is_some_and(|c| !c.passed),
    ))
}

/// A wrk2-style summary of one trial.
pub fn summary(t: &Trial, o: &Outcome) -> String {
    let h = &o.all;
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let mut s = String::new();
    let (how, basis) = match (t.offered_rate, t.clients) {
        (Some(r), _) => (format!("offered {r:.0} req/s"), "intended send time"),
        (_, c) => (
            format!("closed loop, {} clients", c.unwrap_or(0)),
            "each actual send (closed loop: stalls hide here)",
        ),
    };
    s += &format!(
        "  {} requests in {:.2}s: {how}, achieved {:.0} req/s\n",
        o.counted,
        o.elapsed.as_secs_f64(),
        o.achieved_rate()
    );
    s += &format!("  Latency from {basis} (ms):\n");
    for q in [0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 0.99999] {
        s += &format!("    {:>8.3}%  {:>10.3}\n", q * 100.0, ms(q));
    }
    s += &format!("    {:>9}  {:>10.3}\n", "max", h.max() as f64 / 1000.0);
    if o.per_op.len() > 1 {
        s += "  Per operation (ms; 5xx answers of any operation on their own line):\n";
        s += "                           count      p50      p99    p99.9      max  errors\n";
        for p in &t.per_op {
            s += &format!(
                "    {:<18} {:>9} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>7}\n",
                p.op,
                p.requests,
                p.latency.p50_ms,
                p.latency.p99_ms,
                p.latency.p999_ms,
                p.latency.max_ms,
                p.errors
            );
        }
    }
    let codes: Vec<String> = o
        .statuses
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    s += &format!(
        "  Status codes: {}; connection errors: {}{}; errors (5xx, 401/403, none or dropped): {} ({:.3}%)\n",
        codes.join(", "),
        o.conn_errors,
        match (o.unfinished, &o.first_conn_error) {
            (0, None) => String::new(),
            (0, Some(e)) => format!(" (the first: {e})"),
            (n, None) => format!(" ({n} unanswered at the end)"),
            (n, Some(e)) => format!(" ({n} unanswered at the end; the first: {e})"),
        },
        t.errors,
        t.error_pct
    );
    s += &format!(
        "  Schedule: {} sends more than 1 ms late, worst lag {:.3} ms; {} dropped (not started within --drop-after); {} connections opened{}{}\n",
        o.late,
        o.max_lag.as_secs_f64() * 1000.0,
        o.dropped,
        o.connections,
        if o.retired > 0 {
            format!(", {} closed again after the burst that opened them", o.retired)
        } else {
            String::new()
        },
        if (o.late + o.dropped) * 100 > (o.counted + o.dropped).max(1) {
            " (the generator could not keep the schedule: more --threads, a higher --max-connections, another machine, or a lower rate)"
        } else {
            ""
        }
    );
    s += &format!(
        "  Distinct keys touched: {}{}\n",
        o.distinct_keys,
        if o.distinct_exact { "" } else { " (estimate)" }
    );
    if let (Some(cpu), Some(rss)) = (t.server_cpu_cores, t.server_rss_bytes) {
        s += &format!(
            "  Server{}: {cpu:.2} cores of CPU on average, {:.0} MiB resident at most\n",
            if t.per_node.len() > 1 {
                " (all nodes together)"
            } else {
                ""
            },
            rss / (1024.0 * 1024.0)
        );
    }
    if t.per_node.len() > 1 {
        s += &per_node_lines(t);
    }
    if let Some(c) = &t.client {
        s += &client_line(c);
    }
    s
}

/// What the cluster's client did: its retries and why some failures were
/// not retried, its hedges.
pub fn client_line(c: &std::collections::BTreeMap<String, u64>) -> String {
    let g = |k: &str| c.get(k).copied().unwrap_or(0);
    format!(
        "  Client: {} retried on another node ({} not retried: the budget was spent; {} not: a write that may have been applied), {} GETs hedged ({} won by the hedge), {} probes of nodes marked down\n",
        g("retries"),
        g("budget_refused"),
        g("unsafe_to_retry"),
        g("hedges"),
        g("hedge_wins"),
        g("probes")
    )
}

/// The spread over several nodes, one line per node: connections that
/// chose it, its share of the requests, errors, its CPU and memory.
pub fn per_node_lines(t: &Trial) -> String {
    let total = t.per_node.iter().map(|n| n.requests).sum::<u64>().max(1);
    let width = t.per_node.iter().map(|n| n.url.len()).max().unwrap_or(0);
    let mut s =
        String::from("  Per node (the node that answered; conns: the connections homed on it, each chose it from --seed and its index):\n");
    for n in &t.per_node {
        s += &format!(
            "    {:<width$}  {:>4} conns  {:>9} requests ({:>5.1}%)  {:>7} errors",
            n.url,
            n.connections,
            n.requests,
            100.0 * n.requests as f64 / total as f64,
            n.errors,
        );
        if let Some(cpu) = n.server_cpu_cores {
            s += &format!("  cpu {cpu:.2}");
        }
        if let Some(rss) = n.server_rss_bytes {
            s += &format!("  rss {:.0} MiB", rss / (1024.0 * 1024.0));
        }
        s += "\n";
    }
    s
}

/// The command line, for the report.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

/// `YYYY-MM-DDTHH:MM:SSZ` in UTC.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_350_896);
        assert_eq!(rfc3339(t), "2026-11-22T12:34:56Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }
}
