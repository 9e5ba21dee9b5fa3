//! The controller's side of the workers: their addresses and token (the
//! workers', never the node's: that stays the controller's and each
//! worker's own), a check that each answers and is idle, and one trial
//! split among them, its workload file's contents sent along:
//! each worker sends its share (`load::segment`) from one instant a moment
//! ahead, and their parts are merged into one outcome as the driver merges
//! its threads (`load::driver::merge`), with each worker's own evidence
//! (its lateness, its CPU, its run-queue wait) kept apart for the report
//! and the verdict. Owns the controller's calls; must not judge a run.

use std::time::{Duration, Instant, SystemTime};

use super::{RunRequest, Status, RUN_ROUTE, STATUS_ROUTE};
use crate::experiment::target::TargetArgs;
use crate::load::driver::merge::{merge, Part};
use crate::load::driver::wire::PartWire;
use crate::load::driver::{Outcome, Plan, Second};
pub use crate::report::model::WorkerReport;
use strata_client::conn::{Conn, Target};

/// How far ahead of the request the workers' first send is due: time
/// for the request to reach every worker and each to set up its run.
pub const LEAD: Duration = Duration::from_millis(1500);

/// The most workers a run may be split among.
pub const MAX_WORKERS: usize = 256;

/// The workers of a run.
#[derive(Clone, Debug)]
pub struct Workers {
    pub urls: Vec<String>,
    targets: Vec<Target>,
}

/// `--workers` and their token, for the commands that run trials.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct WorkersArgs {
    /// Split each trial among these workers (`strata worker`), each
    /// sending its share of the rate from one instant, their latencies
    /// merged exactly: for rates one generator cannot send. The target's
    /// credentials and TLS are each worker's own.
    /// `dns+http://NAME:PORT`: every address NAME resolves to (a
    /// Kubernetes headless Service's pods).
    #[arg(long, value_name = "URL[,URL...]")]
    pub workers: Option<String>,
    /// A file holding the bearer token the workers want (the one their
    /// --worker-token-file holds). Not the node's token (--token).
    #[arg(long, env = "STRATA_WORKER_TOKEN_FILE", value_name = "FILE")]
    pub worker_token_file: Option<std::path::PathBuf>,
    /// The workers' bearer token itself (--worker-token-file wins over
    /// it; prefer the file).
    #[arg(long, env = "STRATA_WORKER_TOKEN", hide_env_values = true)]
    pub worker_token: Option<String>,
}

impl WorkersArgs {
    /// The workers given, checked (each answers, takes the token, is
    /// idle); `None` when none were.
    pub fn connect(&self) -> Result<Option<Workers>, String> {
        let Some(list) = &self.workers else {
            return Ok(None);
        };
        let token = match super::given_token(&self.worker_token, &self.worker_token_file)? {
            Some(t) => t,
            None => {
                return Err(
                    "--workers: a worker takes orders only from a controller showing its token: give the file its --worker-token-file holds (--worker-token-file FILE, or STRATA_WORKER_TOKEN)"
                        .into(),
                )
            }
        };
        let w = Workers::parse(list, Some(&token))?;
        w.check()?;
        Ok(Some(w))
    }
}

impl Workers {
    /// `http://HOST:PORT[,...]`, each sent `token` (none: no
    /// `Authorization`; the target's own credentials never go to a worker).
    /// `dns+http://NAME:PORT` stands for every address NAME resolves to
    /// (a Kubernetes headless Service's pods), resolved now.
    pub fn parse(list: &str, token: Option<&str>) -> Result<Workers, String> {
        let mut urls: Vec<String> = Vec::new();
        for u in list.split(',').map(|u| u.trim().trim_end_matches('/')) {
            if u.is_empty() {
                return Err(format!("--workers {list:?}: an empty worker URL"));
            }
            match u.strip_prefix("dns+") {
                Some(url) => urls.extend(resolve_all(url)?),
                None => urls.push(u.to_string()),
            }
        }
        if urls.len() > MAX_WORKERS {
            return Err(format!(
                "{} workers given; at most {MAX_WORKERS}",
                urls.len()
            ));
        }
        let mut targets = Vec::with_capacity(urls.len());
        for (i, u) in urls.iter().enumerate() {
            if urls[..i].contains(u) {
                return Err(format!("--workers: {u} is listed twice"));
            }
            let mut t = Target::parse(u).map_err(|e| format!("--workers {u}: {e}"))?;
            t.token = token.map(std::sync::Arc::from);
            targets.push(t);
        }
        Ok(Workers { urls, targets })
    }

    pub fn len(&self) -> usize {
        self.urls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }

    /// Every worker answers, takes the token, and is idle; else which
    /// does not, and why.
    pub fn check(&self) -> Result<Vec<Status>, String> {
        let answers = self.call_all(
            |_| ("GET", STATUS_ROUTE, Vec::new()),
            Duration::from_secs(5),
        );
        let mut out = Vec::new();
        for (url, a) in self.urls.iter().zip(answers) {
            let (status, body) = a.map_err(|e| format!("worker {url}: {e}"))?;
            if status != 200 {
                return Err(format!(
                    "worker {url}: {status} {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            let s: Status = serde_json::from_slice(&body)
                .map_err(|e| format!("worker {url}: not a Strata worker's status: {e}"))?;
            if s.busy {
                return Err(format!("worker {url} is busy with another run"));
            }
            out.push(s);
        }
        Ok(out)
    }

    /// One trial of `plan` (whose target is `target`), each worker sending
    /// its share of it; their parts merged (`on_second` sees each merged
    /// second), and each worker's own figures.
    pub fn run(
        &self,
        target: &TargetArgs,
        plan: &Plan,
        on_second: &mut dyn FnMut(&Second),
    ) -> Result<(Outcome, Vec<WorkerReport>), String> {
        // The plan's start if it leaves the workers time enough, else one
        // that does.
        let now = (Instant::now(), SystemTime::now());
        let at = plan
            .start_at
            .filter(|t| t.duration_since(now.1).is_ok_and(|d| d >= LEAD / 2))
            .unwrap_or(now.1 + LEAD);
        let start = now.0 + at.duration_since(now.1).unwrap_or(LEAD);
        let at_ms = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_millis() as u64;
        // A workload file goes to the workers as its contents: they read
        // no file a request names (but under their --workloads).
        let workload_toml = if target.workload_is_file() {
            Some(
                std::fs::read_to_string(&target.workload)
                    .map_err(|e| format!("--workload {}: {e}", target.workload))?,
            )
        } else {
            None
        };
        let n = self.len() as u64;
        let bodies: Result<Vec<Vec<u8>>, String> = (0..n)
            .map(|i| {
                serde_json::to_vec(&RunRequest {
                    target: target.clone(),
                    workload_toml: workload_toml.clone(),
                    pace: plan.pace.clone(),
                    duration_s: plan.duration.as_secs_f64(),
                    seed: plan.seed,
                    segment: (i, n),
                    start_at_ms: at_ms,
                })
                .map_err(|e| e.to_string())
            })
            .collect();
        let bodies = bodies?;
        // Long enough for the run and a slow answer, never for ever.
        let timeout =
            LEAD + plan.warmup + plan.duration * 4 + plan.drop_after + Duration::from_secs(30);
        let answers = self.call_all(|i| ("POST", RUN_ROUTE, bodies[i].clone()), timeout);
        let mut parts = Vec::with_capacity(self.len());
        let mut reports = Vec::with_capacity(self.len());
        for (url, a) in self.urls.iter().zip(answers) {
            let (status, body) = a.map_err(|e| format!("worker {url}: {e}"))?;
            if status != 200 {
                return Err(format!(
                    "worker {url}: {status} {}",
                    String::from_utf8_lossy(&body).trim()
                ));
            }
            let wire: PartWire = serde_json::from_slice(&body)
                .map_err(|e| format!("worker {url}: its answer: {e}"))?;
            let started_late_ms = wire.started_ms.saturating_sub(at_ms) as f64;
            let part: Part = wire
                .into_part(start)
                .map_err(|e| format!("worker {url}: {e}"))?;
            reports.push(report(url, &part.outcome, started_late_ms));
            parts.push(part);
        }
        let outcome = merge(parts, plan.workload.key_space(), on_second)?;
        Ok((outcome, reports))
    }

    /// The same call to every worker at once, each on its own thread;
    /// (status, body) or the error, in the workers' order.
    fn call_all(
        &self,
        req: impl Fn(usize) -> (&'static str, &'static str, Vec<u8>) + Sync,
        timeout: Duration,
    ) -> Vec<Result<(u16, Vec<u8>), String>> {
        std::thread::scope(|s| {
            let handles: Vec<_> = self
                .targets
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let (method, path, body) = req(i);
                    s.spawn(move || call(t, method, path, &body, timeout))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("the call panicked".into())))
                .collect()
        })
    }
}

/// `SCHEME://NAME:PORT` as one URL per address NAME resolves to, in
/// address order.
fn resolve_all(url: &str) -> Result<Vec<String>, String> {
    use std::net::ToSocketAddrs;
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("--workers dns+{url}: expected dns+http://NAME:PORT"))?;
    let host_port = rest.split('/').next().unwrap_or(rest);
    let mut addrs: Vec<std::net::SocketAddr> = host_port
        .to_socket_addrs()
        .map_err(|e| format!("--workers dns+{url}: {host_port}: {e}"))?
        .filter(|a| a.is_ipv4())
        .collect();
    addrs.sort();
    addrs.dedup();
    if addrs.is_empty() {
        return Err(format!(
            "--workers dns+{url}: {host_port} has no IPv4 address"
        ));
    }
    Ok(addrs.iter().map(|a| format!("{scheme}://{a}")).collect())
}

/// One call on a fresh connection, bounded by `timeout`.
fn call(
    t: &Target,
    method: &str,
    path: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let mut conn = Conn::new(t.clone());
        let mut out = Vec::new();
        match tokio::time::timeout(timeout, conn.request_into(method, path, body, &mut out)).await {
            Ok(Ok(a)) => Ok((a.status, out)),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer in {:.0}s", timeout.as_secs_f64())),
        }
    })
}

fn report(url: &str, o: &Outcome, started_late_ms: f64) -> WorkerReport {
    let wall = o.elapsed.as_secs_f64().max(1e-3);
    let busy = (o.generator_on_cpu + o.generator_run_queue).as_secs_f64();
    WorkerReport {
        url: url.to_string(),
        requests: o.counted,
        late_sends: o.late,
        generator_late_sends: o.generator_late,
        dropped_sends: o.dropped,
        max_lag_ms: o.max_lag.as_secs_f64() * 1000.0,
        cpu_cores: o.generator_on_cpu.as_secs_f64() / wall,
        run_queue_share: (busy > 0.0).then(|| o.generator_run_queue.as_secs_f64() / busy),
        started_late_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_lists_are_checked_and_dns_names_resolved() {
        let w = Workers::parse("http://127.0.0.1:7001, http://127.0.0.1:7002/", None).unwrap();
        assert_eq!(w.urls, ["http://127.0.0.1:7001", "http://127.0.0.1:7002"]);
        let w = Workers::parse("dns+http://localhost:7003", Some("t")).unwrap();
        assert_eq!(w.urls, ["http://127.0.0.1:7003"]);
        assert_eq!(w.targets[0].token.as_deref(), Some("t"));
        for bad in [
            "",
            "http://127.0.0.1:7001,",
            "http://127.0.0.1:7001,http://127.0.0.1:7001",
            "dns+localhost",
            "dns+http://no-such-host.invalid:7000",
            "ftp://127.0.0.1:1",
        ] {
            assert!(Workers::parse(bad, None).is_err(), "{bad}");
        }
    }
}
