//! The target of a run and how it is loaded, as `strata load`, `sweep`,
//! `calibrate` and a worker's run all take it (`TargetArgs`): the nodes'
//! URLs, the workload, the connections and threads, the seed, the
//! replication asked for, the client's switches; and turning them into a
//! driver plan. Owns those arguments; must not run anything.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::load::driver::{Pace, Plan};
use crate::load::nodes::Nodes;
use crate::load::schedule::Arrivals;
use crate::load::segment::Segment;
use crate::load::workload::Workload;
use crate::units::rfc3339;

/// The default of `--max-connections` (each thread its share).
pub const MAX_CONNECTIONS: usize = 256;

/// The preload's connections at most: enough writers to fill commit groups
/// on a quick disk, few enough that a slow node's admission queue (its
/// `max_wait`, 100 ms) does not fill with the preload's own PUTs and
/// refuse them over and over (64 connections against a debug node on one
/// thread kept one key refused for 30 s).
pub const PRELOAD_CONNECTIONS: usize = 16;

/// Arguments shared by `load` and `sweep`: where, what, how.
#[derive(clap::Args, Clone, Debug, serde::Serialize, serde::Deserialize)]
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
        self.workload_share(Segment::default())
    }

    /// The workload with its writes' values `bytes` long, when it is a
    /// built-in whose writes take `--value-size` (`put`, `mixed`); None
    /// for the others, whose values are their own.
    pub fn with_value_size(&self, bytes: usize) -> Option<Result<Arc<Workload>, String>> {
        matches!(self.workload.as_str(), "put" | "mixed")
            .then(|| Workload::builtin(&self.workload, self.keys, bytes).map(Arc::new))
    }

    /// Whether `--workload` names a file (its keys and values its own)
    /// rather than a built-in.
    pub fn workload_is_file(&self) -> bool {
        self.workload.ends_with(".toml") || Path::new(&self.workload).is_file()
    }

    /// The workload as `segment`'s share of the run.
    pub fn workload_share(&self, segment: Segment) -> Result<Arc<Workload>, String> {
        let w = if self.workload_is_file() {
            Workload::from_toml_file(Path::new(&self.workload))?
        } else {
            Workload::builtin(&self.workload, self.keys, self.value_size)?
        };
        Ok(Arc::new(w.with_segment(segment)?))
    }

    /// Run the preload phase if asked, through every node (separate nodes
    /// each need the keys; a cluster takes the same writes again); says
    /// what it did on stderr.
    pub fn maybe_preload(&self, nodes: &Nodes, w: &Workload) -> Result<(), String> {
        if !self.preload {
            return Ok(());
        }
        for (url, target) in nodes.urls.iter().zip(&nodes.targets) {
            if crate::load::preload::already_loaded(target, w)? {
                eprintln!(
                    "{url} already holds the workload's keys ({} sampled, each with its value): not preloaded again",
                    crate::load::preload::SAMPLED
                );
                continue;
            }
            let (n, took) = crate::load::preload::preload(
                target,
                w,
                self.connections.min(PRELOAD_CONNECTIONS),
            )?;
            if n > 0 && nodes.len() == 1 {
                eprintln!("Preloaded {n} keys in {:.1}s", took.as_secs_f64());
            } else if n > 0 {
                eprintln!(
                    "Preloaded {n} keys in {:.1}s through {url}",
                    took.as_secs_f64()
                );
            }
        }
        let waited = wait_quiet(&nodes.urls);
        if waited >= Duration::from_millis(1100) {
            eprintln!(
                "Waited {:.1}s for the nodes to finish what the preload left (flushes, compactions)",
                waited.as_secs_f64()
            );
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
            start_at: None,
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

/// A node is quiet when it used less than this share of a core over
/// `QUIET_OVER`.
pub const QUIET_CORES: f64 = 0.05;
const QUIET_OVER: Duration = Duration::from_secs(1);
/// At most this long is waited for quiet.
pub const QUIET_WAIT: Duration = Duration::from_secs(30);

/// Waits until every node is quiet (its `process_cpu_seconds_total` grew
/// by less than `QUIET_CORES` of a core over a second), at most
/// `QUIET_WAIT`; how long it waited. A preload leaves memtables to flush
/// and tables to compact, and the first trial after it would measure that
/// work as the node's (a calibration test's first steps failed at 2,000
/// req/s while a later sweep met it). A node whose metrics cannot be read
/// is not waited for.
pub fn wait_quiet(urls: &[String]) -> Duration {
    let start = std::time::Instant::now();
    let cpu = |url: &str| {
        crate::report::scrape::fetch_metrics(url)
            .ok()
            .and_then(|t| {
                crate::report::scrape::metric_sums(&t)
                    .get(strata_api::metrics::CPU_SECONDS)
                    .copied()
            })
    };
    while start.elapsed() < QUIET_WAIT {
        let before: Vec<Option<f64>> = urls.iter().map(|u| cpu(u)).collect();
        std::thread::sleep(QUIET_OVER);
        let busy = urls.iter().zip(&before).any(|(u, b)| match (b, cpu(u)) {
            (Some(b), Some(a)) => a - b > QUIET_CORES * QUIET_OVER.as_secs_f64(),
            _ => false,
        });
        if !busy {
            break;
        }
    }
    start.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A `/metrics` endpoint whose CPU counter grows by 0.5 s a second
    /// until `busy_for` has passed, then stays.
    fn busy_node(busy_for: Duration) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let start = std::time::Instant::now();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let mut s = s;
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let t = start.elapsed().min(busy_for).as_secs_f64();
                let body = format!("process_cpu_seconds_total {}\n", 0.5 * t);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        url
    }

    #[test]
    fn a_busy_node_is_waited_for_until_it_is_quiet() {
        let url = busy_node(Duration::from_millis(2500));
        let waited = wait_quiet(&[url]);
        assert!(
            waited >= Duration::from_millis(2500) && waited < QUIET_WAIT,
            "{waited:?}"
        );
        // A node whose metrics cannot be read is not waited for.
        let waited = wait_quiet(&["http://127.0.0.1:9".into()]);
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    }
}
