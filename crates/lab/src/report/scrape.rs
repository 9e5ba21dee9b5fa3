//! The server's side of a run on the same time axis: one thread per node
//! that reads its Prometheus `/metrics` every second (one scrape per node
//! per interval, each with a timeout; all nodes on the same ticks) and
//! turns the counters it cares about (CPU, memory, admission, flushes,
//! compactions, stalls) into per-interval samples, per node and summed over
//! the nodes. Owns the scraping and the text parsing; must not judge the
//! numbers (the verdict does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use strata_api::routes;

use strata_api::metrics as M;

use crate::report::model::ServerSample;
use crate::report::threads::{thread_times, ThreadLog};
use strata_api::threads::ThreadRate;
use strata_client::conn::Target;

/// Sum of every sample of each metric name (labels ignored), from the
/// Prometheus text format (`strata_api::exposition`'s parser; a line it
/// cannot read is skipped, as a scrape must not fail on one). The buckets
/// of the WAL fsync histogram are also kept one by one, as `NAME|LE` (see
/// `bucket_key`), and level 0's tables as `L0_KEY`.
pub fn metric_sums(text: &str) -> HashMap<String, f64> {
    let mut m = HashMap::new();
    for line in text.lines() {
        let Ok(parsed) = strata_api::exposition::parse_metrics(line) else {
            continue;
        };
        for x in parsed.samples {
            let label = |k: &str| {
                x.labels
                    .iter()
                    .find(|(l, _)| l == k)
                    .map(|(_, v)| v.as_str())
            };
            if x.name == M::TABLES && x.labels.len() == 1 && label("level") == Some("0") {
                m.insert(L0_KEY.to_string(), x.value);
            }
            if x.name == M::FSYNC_BUCKET {
                if let Some(le) = label("le") {
                    m.insert(bucket_key(&x.name, le), x.value);
                }
            }
            *m.entry(x.name).or_insert(0.0) += x.value;
        }
    }
    m
}

/// Level 0's tables in `metric_sums`'s map.
const L0_KEY: &str = "strata_engine_tables|level0";

/// The key of one bucket of a histogram in `metric_sums`'s map.
fn bucket_key(name: &str, le: &str) -> String {
    format!("{name}|{le}")
}

/// The p99 of a histogram's observations between two scrapes, from its
/// buckets: the upper bound of the bucket that holds it, in the unit of
/// the histogram (`None` without observations).
fn interval_p99(prev: &HashMap<String, f64>, m: &HashMap<String, f64>, name: &str) -> Option<f64> {
    let prefix = format!("{name}|");
    let mut buckets: Vec<(f64, f64)> = m
        .iter()
        .filter_map(|(k, v)| {
            let le = k.strip_prefix(&prefix)?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, v - prev.get(k).copied().unwrap_or(0.0)))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let (le, _) = buckets.iter().find(|(_, c)| *c >= 0.99 * total)?;
    // Past the last finite bound: say the last finite bound.
    Some(if le.is_finite() {
        *le
    } else {
        buckets
            .iter()
            .rev()
            .find(|(l, _)| l.is_finite())
            .map_or(0.0, |b| b.0)
    })
}

/// The bearer token the lab reads `/metrics` with, when it is not the
/// one it sends data requests with (`--metrics-token`): a monitor token
/// beside a readwrite one, so that the lab needs no operator token.
static METRICS_TOKEN: std::sync::RwLock<Option<Arc<str>>> = std::sync::RwLock::new(None);

/// Read `/metrics` with `token` from now on (`None`: the data requests'
/// token).
pub fn set_metrics_token(token: Option<&str>) {
    *METRICS_TOKEN.write().unwrap_or_else(|e| e.into_inner()) = token.map(|t| Arc::from(t.trim()));
}

/// `target` as the lab scrapes it: with the metrics token if one is set.
fn for_metrics(target: &Target) -> Target {
    let mut t = target.clone();
    if let Some(m) = METRICS_TOKEN
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
    {
        t.token = Some(m);
    }
    t
}

/// The `/metrics` text of the node at `url` (`http://HOST:PORT`).
pub fn fetch_metrics(url: &str) -> Result<String, String> {
    let t = for_metrics(&strata_client::conn::Target::parse(url)?);
    http_get(&t, routes::METRICS, Duration::from_secs(10))
}

/// What the lab needs to see a node's metrics, for a refusal.
pub const METRICS_ROLE: &str = "reading /metrics needs the monitor or operator role: give the lab a monitor token with --metrics-token (beside a readwrite --token), or an operator token (docs/lab.md, \"Credentials\")";

/// Why a node refused the lab's scrape, if it did (401 or 403): the
/// status and the node's reason, and what would let the lab see.
pub fn refusal(status: u16, body: &[u8]) -> Option<String> {
    if status != 401 && status != 403 {
        return None;
    }
    let why = String::from_utf8_lossy(body);
    Some(format!(
        "GET /metrics answered {status} ({}): {METRICS_ROLE}",
        why.trim()
    ))
}

/// GET `path` from `target` (connection closed after), the body.
pub fn http_get(target: &Target, path: &str, timeout: Duration) -> Result<String, String> {
    let r = strata_client::control::request_to("GET", target, path, timeout)?;
    if r.status != 200 {
        return Err(format!("{path}: status {}", r.status));
    }
    String::from_utf8(r.body).map_err(|e| e.to_string())
}

/// Counter names whose per-interval increase a sample carries.
const CPU: &str = M::CPU_SECONDS;
const RSS: &str = M::RESIDENT_BYTES;

fn sample(
    prev: Option<&(Instant, HashMap<String, f64>)>,
    now: Instant,
    m: &HashMap<String, f64>,
    t_s: f64,
) -> ServerSample {
    let base = sample_base(prev, now, m, t_s);
    let Some((t0, p)) = prev else { return base };
    let secs = now.duration_since(*t0).as_secs_f64().max(1e-3);
    let get = |k: &str| m.get(k).copied();
    let delta = |k: &str| Some((m.get(k)? - p.get(k).copied().unwrap_or(0.0)).max(0.0));
    let per_sec = |k: &str| delta(k).map(|d| d / secs);
    let fsyncs = delta(M::FSYNC_COUNT);
    ServerSample {
        run_queue_cores: per_sec(M::RUN_QUEUE_WAIT_SECONDS),
        throttled_share: per_sec(M::CPU_THROTTLED_SECONDS),
        allowed_cpus_busy: per_sec(M::ALLOWED_CPUS_BUSY_SECONDS)
            .zip(get(M::PROCESS_CPUS))
            .map(|(b, n)| b / n.max(1.0)),
        allowed_cpus_stolen: per_sec(M::ALLOWED_CPUS_STOLEN_SECONDS)
            .zip(get(M::PROCESS_CPUS))
            .map(|(b, n)| b / n.max(1.0)),
        wal_bytes_per_s: per_sec(M::WAL_WRITTEN_BYTES),
        flush_bytes_per_s: per_sec(M::FLUSH_BYTES),
        compaction_bytes_per_s: per_sec(M::COMPACTION_WRITTEN_BYTES),
        pressure_cpu: per_sec(M::PRESSURE_CPU_SECONDS),
        pressure_io: per_sec(M::PRESSURE_IO_SECONDS),
        pressure_memory: per_sec(M::PRESSURE_MEMORY_SECONDS),
        paused_share: per_sec(M::PAUSE_LATENESS_SUM),
        pause_max_ms: get(M::PAUSE_MAX_SECONDS).map(|s| s * 1000.0),
        writers_waiting: get(M::WAL_WRITERS_WAITING),
        fsyncs,
        fsync_p99_ms: interval_p99(p, m, M::FSYNC_BUCKET).map(|s| s * 1000.0),
        writes_per_fsync: delta(M::COMMIT_GROUP_SUM)
            .zip(delta(M::COMMIT_GROUP_COUNT))
            .and_then(|(w, g)| (g > 0.0).then(|| w / g)),
        stall_share: per_sec(M::WRITE_STALL_SECONDS),
        wal_lock_wait: per_sec(M::WAL_LOCK_WAIT_SECONDS),
        memtable_bytes: get(M::MEMTABLE_BYTES),
        block_cache_bytes: get(M::BLOCK_CACHE_BYTES),
        immutables: get(M::IMMUTABLE_MEMTABLES),
        l0_tables: get(L0_KEY),
        shed: delta(M::CONNECTIONS_SHED),
        ..base
    }
}

fn sample_base(
    prev: Option<&(Instant, HashMap<String, f64>)>,
    now: Instant,
    m: &HashMap<String, f64>,
    t_s: f64,
) -> ServerSample {
    let get = |k: &str| m.get(k).copied();
    let delta = |k: &str| -> Option<f64> {
        let (_, p) = prev?;
        Some((m.get(k)? - p.get(k).copied().unwrap_or(0.0)).max(0.0))
    };
    let secs = prev.map(|(t, _)| now.duration_since(*t).as_secs_f64());
    ServerSample {
        t_s,
        cpu_cores: delta(CPU).zip(secs).map(|(d, s)| d / s.max(1e-3)),
        rss_bytes: get(RSS),
        in_service: get(M::ADMISSION_IN_SERVICE),
        waiting: get(M::ADMISSION_WAITING),
        limit: get(M::ADMISSION_LIMIT),
        admitted_at_once: delta(M::ADMITTED_AT_ONCE),
        admitted_after_wait: delta(M::ADMITTED_AFTER_WAIT),
        refused: delta(M::REFUSED_QUEUE_FULL).map(|a| a + delta(M::REFUSED_TIMEOUT).unwrap_or(0.0)),
        flushes: delta(M::FLUSHES),
        compactions: delta(M::COMPACTIONS),
        stalls: delta(M::WRITE_STALLS),
        fsync_busy: delta(M::FSYNC_SUM).zip(secs).map(|(d, s)| d / s.max(1e-3)),
        replica_errors: delta(M::REPLICA_ERRORS),
        replica_mean_ms: delta(M::REPLICA_SUM)
            .zip(delta(M::REPLICA_COUNT))
            .and_then(|(s, n)| (n > 0.0).then(|| 1000.0 * s / n)),
        not_enough: delta(M::NOT_ENOUGH_REPLICAS),
        hints_pending: get(M::HINTS_PENDING),
        cpus: get(M::PROCESS_CPUS),
        open_fds: get(M::OPEN_FDS),
        client_connections: get(M::CONNECTIONS_OPEN),
        rss_anon_bytes: get(M::RESIDENT_ANON_BYTES),
        ..Default::default()
    }
}

/// The first and the last `/metrics` text a sampler read, as served: the
/// node's state before and after the run, kept with the report so that
/// `strata sim --from-report` can model the node from their difference.
/// With several nodes these are the first node's, and `more` holds the
/// others', in the order given.
#[derive(Clone, Debug, Default)]
pub struct Scrapes {
    pub first: Option<String>,
    pub last: Option<String>,
    pub more: Vec<Scrapes>,
    /// Why this node refused the scrapes, if it did (`refusal`).
    pub refused: Option<String>,
}

impl Scrapes {
    /// Every node that refused the lab's scrapes (`node-N: why`), in the
    /// order given.
    pub fn refusals(&self) -> Vec<String> {
        std::iter::once(self)
            .chain(&self.more)
            .enumerate()
            .filter_map(|(i, s)| Some(format!("node-{}: {}", i + 1, s.refused.as_ref()?)))
            .collect()
    }
}

/// A scrape longer than this is given up (the node then has no sample at
/// that tick).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);

/// One node's samples, each with the tick it was taken at.
type Ticked = Vec<(u64, ServerSample)>;

/// A running sampler of one or more nodes; `stop` returns the first and
/// last texts it read from each.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Vec<Arc<Mutex<Ticked>>>,
    texts: Vec<Arc<Mutex<Scrapes>>>,
    threads: Vec<Arc<Mutex<ThreadLog>>>,
    handles: Vec<JoinHandle<()>>,
}

impl Sampler {
    /// Start sampling each node's `/metrics` every `every`, with times
    /// relative to `origin`: one thread per node, all on the same ticks,
    /// each scrape bounded by `SCRAPE_TIMEOUT`. A node without `/metrics`
    /// gives nothing; one that refuses the lab's credentials (401, 403) is
    /// named on stderr at once and in the scrapes (`Scrapes::refusals`).
    pub fn start(nodes: &[Target], origin: Instant, every: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let first_tick = Instant::now();
        let mut s = Sampler {
            stop: stop.clone(),
            samples: Vec::new(),
            texts: Vec::new(),
            threads: Vec::new(),
            handles: Vec::new(),
        };
        for (i, node) in nodes.iter().enumerate() {
            let samples = Arc::new(Mutex::new(Vec::new()));
            let texts = Arc::new(Mutex::new(Scrapes::default()));
            let threads = Arc::new(Mutex::new(ThreadLog::default()));
            let (st, sa, tx) = (stop.clone(), samples.clone(), texts.clone());
            let logs = Logs {
                samples: sa,
                texts: tx,
                threads: threads.clone(),
            };
            let node = for_metrics(node);
            let spawned = std::thread::Builder::new()
                .name(strata_api::threads::names::numbered(
                    strata_api::threads::names::SCRAPE,
                    i,
                ))
                .spawn(move || scrape_loop(&node, origin, first_tick, every, &st, &logs));
            if let Ok(h) = spawned {
                s.handles.push(h);
            }
            s.samples.push(samples);
            s.texts.push(texts);
            s.threads.push(threads);
        }
        s
    }

    /// Samples so far, summed over the nodes tick by tick (for one node,
    /// its own samples).
    pub fn snapshot(&self) -> Vec<ServerSample> {
        combine(&self.snapshot_ticked())
    }

    /// Samples so far, per node in the order given.
    pub fn snapshot_nodes(&self) -> Vec<Vec<ServerSample>> {
        self.snapshot_ticked()
            .into_iter()
            .map(|v| v.into_iter().map(|(_, s)| s).collect())
            .collect()
    }

    /// Each node's threads between two instants of the run (seconds from
    /// its origin), in the order given, busiest first.
    pub fn threads_between(&self, from_s: f64, to_s: f64) -> Vec<Vec<ThreadRate>> {
        self.threads
            .iter()
            .map(|t| t.lock().unwrap().between(from_s, to_s))
            .collect()
    }

    fn snapshot_ticked(&self) -> Vec<Ticked> {
        self.samples
            .iter()
            .map(|s| s.lock().unwrap().clone())
            .collect()
    }

    /// Stop sampling; the first and last texts read (the first node's,
    /// the others' in `more`).
    pub fn stop(mut self) -> Scrapes {
        self.stop.store(true, Ordering::Release);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        let mut all = self
            .texts
            .iter()
            .map(|t| std::mem::take(&mut *t.lock().unwrap()));
        let mut out = all.next().unwrap_or_default();
        out.more = all.collect();
        out
    }
}

/// Where one node's sampling thread keeps what it reads.
struct Logs {
    samples: Arc<Mutex<Ticked>>,
    texts: Arc<Mutex<Scrapes>>,
    threads: Arc<Mutex<ThreadLog>>,
}

/// One node's sampling thread: scrape at every tick until told to stop.
fn scrape_loop(
    node: &Target,
    origin: Instant,
    first_tick: Instant,
    every: Duration,
    stop: &AtomicBool,
    logs: &Logs,
) {
    let (samples, texts) = (&*logs.samples, &*logs.texts);
    let mut prev: Option<(Instant, HashMap<String, f64>)> = None;
    let mut next = first_tick;
    let mut tick = 0u64;
    while !stop.load(Ordering::Acquire) {
        let now = Instant::now();
        let answer =
            strata_client::control::request_to("GET", node, routes::METRICS, SCRAPE_TIMEOUT);
        if let Some(why) = answer
            .as_ref()
            .ok()
            .and_then(|r| refusal(r.status, &r.body))
        {
            let mut t = texts.lock().unwrap();
            if t.refused.is_none() {
                eprintln!(
                    "warning: the lab cannot see {}: {why}; the report and the verdict go without its metrics",
                    node.addr
                );
                t.refused = Some(why);
            }
        }
        let text = answer.and_then(|r| {
            if r.status != 200 {
                return Err(format!("/metrics: status {}", r.status));
            }
            String::from_utf8(r.body).map_err(|e| e.to_string())
        });
        if let Ok(text) = text {
            let took = now.elapsed();
            let m = metric_sums(&text);
            let threads = thread_times(&text);
            if !m.is_empty() {
                let mut t = texts.lock().unwrap();
                if t.first.is_none() {
                    t.first = Some(text.clone());
                }
                t.last = Some(text);
            }
            let t_s = now.saturating_duration_since(origin).as_secs_f64()
                - origin.saturating_duration_since(now).as_secs_f64();
            logs.threads.lock().unwrap().push(t_s, threads);
            if prev.is_some() {
                let mut s = sample(prev.as_ref(), now, &m, t_s);
                s.scrape_ms = Some(took.as_secs_f64() * 1000.0);
                samples.lock().unwrap().push((tick, s));
            }
            prev = Some((now, m));
        }
        // The next tick not yet passed: a slow scrape skips ticks rather
        // than scraping twice in a row.
        next += every;
        tick += 1;
        while next + every <= Instant::now() {
            next += every;
            tick += 1;
        }
        while Instant::now() < next && !stop.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(20).min(every));
        }
    }
}

/// Samples of several nodes summed tick by tick, over the nodes that
/// answered at that tick: CPU, memory, admission gauges and counter deltas
/// are all additive across nodes. The time is the earliest of the tick's.
fn combine(nodes: &[Ticked]) -> Vec<ServerSample> {
    if let [one] = nodes {
        return one.iter().map(|(_, s)| *s).collect();
    }
    let mut by_tick: std::collections::BTreeMap<u64, ServerSample> = Default::default();
    for (tick, s) in nodes.iter().flatten() {
        by_tick
            .entry(*tick)
            .and_modify(|acc| *acc = add(acc, s))
            .or_insert(*s);
    }
    by_tick.into_values().collect()
}

fn add(a: &ServerSample, b: &ServerSample) -> ServerSample {
    let sum = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    };
    let max = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    ServerSample {
        t_s: a.t_s.min(b.t_s),
        cpu_cores: sum(a.cpu_cores, b.cpu_cores),
        rss_bytes: sum(a.rss_bytes, b.rss_bytes),
        in_service: sum(a.in_service, b.in_service),
        waiting: sum(a.waiting, b.waiting),
        limit: sum(a.limit, b.limit),
        admitted_at_once: sum(a.admitted_at_once, b.admitted_at_once),
        admitted_after_wait: sum(a.admitted_after_wait, b.admitted_after_wait),
        refused: sum(a.refused, b.refused),
        flushes: sum(a.flushes, b.flushes),
        compactions: sum(a.compactions, b.compactions),
        stalls: sum(a.stalls, b.stalls),
        fsync_busy: sum(a.fsync_busy, b.fsync_busy),
        replica_errors: sum(a.replica_errors, b.replica_errors),
        replica_mean_ms: match (a.replica_mean_ms, b.replica_mean_ms) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        },
        not_enough: sum(a.not_enough, b.not_enough),
        hints_pending: sum(a.hints_pending, b.hints_pending),
        cpus: sum(a.cpus, b.cpus),
        open_fds: sum(a.open_fds, b.open_fds),
        client_connections: sum(a.client_connections, b.client_connections),
        rss_anon_bytes: sum(a.rss_anon_bytes, b.rss_anon_bytes),
        run_queue_cores: sum(a.run_queue_cores, b.run_queue_cores),
        throttled_share: max(a.throttled_share, b.throttled_share),
        allowed_cpus_busy: max(a.allowed_cpus_busy, b.allowed_cpus_busy),
        allowed_cpus_stolen: max(a.allowed_cpus_stolen, b.allowed_cpus_stolen),
        wal_bytes_per_s: sum(a.wal_bytes_per_s, b.wal_bytes_per_s),
        flush_bytes_per_s: sum(a.flush_bytes_per_s, b.flush_bytes_per_s),
        compaction_bytes_per_s: sum(a.compaction_bytes_per_s, b.compaction_bytes_per_s),
        // The machine's, and the worst node's.
        pressure_cpu: max(a.pressure_cpu, b.pressure_cpu),
        pressure_io: max(a.pressure_io, b.pressure_io),
        pressure_memory: max(a.pressure_memory, b.pressure_memory),
        paused_share: max(a.paused_share, b.paused_share),
        pause_max_ms: max(a.pause_max_ms, b.pause_max_ms),
        writers_waiting: sum(a.writers_waiting, b.writers_waiting),
        fsyncs: sum(a.fsyncs, b.fsyncs),
        fsync_p99_ms: max(a.fsync_p99_ms, b.fsync_p99_ms),
        writes_per_fsync: max(a.writes_per_fsync, b.writes_per_fsync),
        stall_share: max(a.stall_share, b.stall_share),
        wal_lock_wait: max(a.wal_lock_wait, b.wal_lock_wait),
        memtable_bytes: sum(a.memtable_bytes, b.memtable_bytes),
        block_cache_bytes: sum(a.block_cache_bytes, b.block_cache_bytes),
        immutables: sum(a.immutables, b.immutables),
        l0_tables: max(a.l0_tables, b.l0_tables),
        shed: sum(a.shed, b.shed),
        scrape_ms: max(a.scrape_ms, b.scrape_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_labels_and_sums_families() {
        let text = "# HELP x y\n# TYPE a counter\na_total 3\nb{level=\"0\"} 2\nb{level=\"1\"} 5.5\nc 1e3\n";
        let m = metric_sums(text);
        assert_eq!(m["a_total"], 3.0);
        assert_eq!(m["b"], 7.5);
        assert_eq!(m["c"], 1000.0);
    }

    #[test]
    fn samples_are_rates_and_deltas() {
        let t0 = Instant::now();
        let p: HashMap<String, f64> = [(CPU, 10.0), ("strata_engine_flushes_total", 2.0)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let m: HashMap<String, f64> = [
            (CPU, 11.5),
            ("strata_engine_flushes_total", 5.0),
            (RSS, 1e6),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
        let s = sample(Some(&(t0, p)), t0 + Duration::from_secs(1), &m, 1.0);
        assert!((s.cpu_cores.unwrap() - 1.5).abs() < 1e-9);
        assert_eq!(s.flushes, Some(3.0));
        assert_eq!(s.rss_bytes, Some(1e6));
        assert_eq!(s.stalls, None);
    }

    #[test]
    fn the_fsync_tail_of_an_interval_comes_from_its_buckets() {
        let text = |fast: u64, slow: u64| {
            let b = M::FSYNC_BUCKET;
            format!(
                "{b}{{le=\"0.001024\"}} {fast}\n{b}{{le=\"0.016384\"}} {}\n{b}{{le=\"+Inf\"}} {}\n{} {}\n",
                fast + slow,
                fast + slow,
                M::FSYNC_COUNT,
                fast + slow
            )
        };
        let t0 = Instant::now();
        let p = metric_sums(&text(1000, 0));
        // 980 fast and 20 slow ones since: the p99 is in the slow bucket.
        let m = metric_sums(&text(1980, 20));
        let s = sample(Some(&(t0, p.clone())), t0 + Duration::from_secs(1), &m, 1.0);
        assert_eq!(s.fsyncs, Some(1000.0));
        assert!((s.fsync_p99_ms.unwrap() - 16.384).abs() < 1e-9, "{s:?}");
        // 995 fast and 5 slow: the p99 is fast.
        let m = metric_sums(&text(1995, 5));
        let s = sample(Some(&(t0, p)), t0 + Duration::from_secs(1), &m, 1.0);
        assert!((s.fsync_p99_ms.unwrap() - 1.024).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn nodes_are_summed_tick_by_tick() {
        let s = |t_s: f64, cpu: f64, waiting: Option<f64>| ServerSample {
            t_s,
            cpu_cores: Some(cpu),
            waiting,
            flushes: Some(1.0),
            ..Default::default()
        };
        let a = vec![(1, s(1.0, 0.5, Some(2.0))), (2, s(2.0, 0.25, None))];
        let b = vec![(1, s(1.01, 1.0, Some(1.0))), (3, s(3.0, 2.0, None))];
        let c = combine(&[a.clone(), b]);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].t_s, 1.0);
        assert_eq!(c[0].cpu_cores, Some(1.5));
        assert_eq!(c[0].waiting, Some(3.0));
        assert_eq!(c[0].flushes, Some(2.0));
        assert_eq!(c[1].cpu_cores, Some(0.25));
        assert_eq!(c[1].waiting, None);
        assert_eq!(c[2].cpu_cores, Some(2.0));
        // One node: its own samples, unchanged.
        assert_eq!(
            combine(&[a]),
            vec![s(1.0, 0.5, Some(2.0)), s(2.0, 0.25, None)]
        );
    }
}
