//! `strata load URL`: open-loop load at a fixed schedule. Every request has
//! an intended send time from the schedule; its latency is measured from
//! that time, not from when a connection was free to send it, so a stalled
//! server cannot hide its stall (coordinated omission). When the generator
//! itself falls behind its schedule it says so: how many sends were late by
//! more than 1 ms and the worst lag. Owns the driver and its summary; must
//! not know the node's internals.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use rand::{Rng, SeedableRng};
use tokio::net::TcpStream;

use crate::schedule::{Arrivals, Schedule};

/// What each request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// PUT a random key of the key space with a value of `--value-size` bytes.
    Put,
    /// GET a random key of the key space.
    Get,
}

#[derive(clap::Args, Clone, Debug)]
pub struct LoadArgs {
    /// Base URL of the node, e.g. http://127.0.0.1:8080
    pub url: String,
    /// Requests per second to offer.
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// Seconds to run (after the warm-up).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of warm-up: requests sent on schedule but not counted.
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
    /// Connections (keep-alive) to spread the requests over.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// constant or poisson.
    #[arg(long, default_value = "constant", value_parser = ["constant", "poisson"])]
    pub arrivals: String,
    #[arg(long, value_enum, default_value_t = Workload::Put)]
    pub workload: Workload,
    /// Keys are 16-digit numbers below this.
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u64,
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Closed loop instead: this many clients, each sending a request,
    /// waiting for its answer, then thinking. Latency is then measured from
    /// the actual send, as such clients do (and a stall hides in it).
    #[arg(long, default_value_t = 0)]
    pub clients: usize,
    /// Closed loop: seconds each client thinks between requests.
    #[arg(long, default_value_t = 0.0)]
    pub think: f64,
    /// Seed of the key streams; each connection derives its own from it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// What a run measured.
pub struct LoadResult {
    /// 0 for a closed-loop run.
    pub offered_rate: f64,
    /// Closed loop: the number of clients.
    pub clients: usize,
    pub counted: u64,
    pub elapsed: Duration,
    /// Latency from intended send time to the full answer, in microseconds.
    pub latency_us: Histogram<u64>,
    pub statuses: BTreeMap<u16, u64>,
    pub errors: u64,
    /// Sends more than 1 ms after their intended time, and the worst lag.
    pub late_sends: u64,
    pub max_lag: Duration,
}

impl LoadResult {
    pub fn achieved_rate(&self) -> f64 {
        self.counted as f64 / self.elapsed.as_secs_f64()
    }

    /// A wrk2-style summary.
    pub fn summary(&self) -> String {
        let h = &self.latency_us;
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        let mut s = String::new();
        let (how, basis) = if self.clients > 0 {
            (
                format!("closed loop, {} clients", self.clients),
                "each actual send (closed loop: stalls hide here)",
            )
        } else {
            (
                format!("offered {:.0} req/s", self.offered_rate),
                "intended send time",
            )
        };
        s += &format!(
            "  {} requests in {:.2}s: {how}, achieved {:.0} req/s\n",
            self.counted,
            self.elapsed.as_secs_f64(),
            self.achieved_rate()
        );
        s += &format!("  Latency from {basis} (ms):\n");
        for q in [0.5, 0.75, 0.9, 0.99, 0.999, 0.9999] {
            s += &format!("    {:>7.3}%  {:>10.3}\n", q * 100.0, ms(q));
        }
        s += &format!("    {:>8}  {:>10.3}\n", "max", h.max() as f64 / 1000.0);
        let codes: Vec<String> = self
            .statuses
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect();
        s += &format!(
            "  Status codes: {}; connection errors: {}\n",
            codes.join(", "),
            self.errors
        );
        s += &format!(
            "  Schedule: {} sends more than 1 ms late, worst lag {:.3} ms{}\n",
            self.late_sends,
            self.max_lag.as_secs_f64() * 1000.0,
            if self.late_sends * 100 > self.counted.max(1) {
                " (the generator or its connections could not keep the schedule: more connections, or a lower rate)"
            } else {
                ""
            }
        );
        s
    }
}

fn parse_addr(url: &str) -> Result<(SocketAddr, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// URLs are supported"))?;
    let hostport = rest.split('/').next().unwrap_or(rest);
    let addr = std::net::ToSocketAddrs::to_socket_addrs(hostport)
        .map_err(|e| format!("{hostport}: {e}"))?
        .next()
        .ok_or_else(|| format!("{hostport}: no address"))?;
    Ok((addr, hostport.to_string()))
}

struct Shared {
    schedule: Mutex<(Schedule, u64)>,
    total: u64,
    warm: u64,
    start: Instant,
}

struct PerConn {
    hist: Histogram<u64>,
    statuses: BTreeMap<u16, u64>,
    errors: u64,
    late: u64,
    max_lag: Duration,
    counted: u64,
}

/// Run the load. Blocks on its own runtime.
pub fn run(a: &LoadArgs) -> Result<LoadResult, String> {
    if a.duration <= 0.0 || (a.clients == 0 && (a.rate <= 0.0 || a.connections == 0)) {
        return Err("duration, and rate and connections (or clients), must be positive".into());
    }
    let (addr, host) = parse_addr(&a.url)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let arrivals = if a.arrivals == "poisson" {
        Arrivals::Poisson
    } else {
        Arrivals::Constant
    };
    let warm = (a.warmup * a.rate) as u64;
    let total = warm + (a.duration * a.rate) as u64;
    rt.block_on(async move {
        let shared = Arc::new(Shared {
            schedule: Mutex::new((Schedule::new(a.rate, arrivals, a.seed), 0)),
            total,
            warm,
            start: Instant::now() + Duration::from_millis(50),
        });
        let mut tasks = Vec::new();
        let closed = a.clients > 0;
        for c in 0..if closed { a.clients } else { a.connections } {
            let shared = shared.clone();
            let a = a.clone();
            let host = host.clone();
            tasks.push(tokio::spawn(async move {
                if closed {
                    client(addr, host, c, a, shared).await
                } else {
                    connection(addr, host, c, a, shared).await
                }
            }));
        }
        let mut out = new_per_conn();
        for t in tasks {
            let p = t.await.map_err(|e| e.to_string())?;
            out.hist.add(&p.hist).map_err(|e| e.to_string())?;
            for (k, v) in p.statuses {
                *out.statuses.entry(k).or_default() += v;
            }
            out.errors += p.errors;
            out.late += p.late;
            out.max_lag = out.max_lag.max(p.max_lag);
            out.counted += p.counted;
        }
        let elapsed = shared
            .start
            .elapsed()
            .saturating_sub(Duration::from_secs_f64(a.warmup));
        Ok(LoadResult {
            offered_rate: if a.clients > 0 { 0.0 } else { a.rate },
            clients: a.clients,
            counted: out.counted,
            elapsed,
            latency_us: out.hist,
            statuses: out.statuses,
            errors: out.errors,
            late_sends: out.late,
            max_lag: out.max_lag,
        })
    })
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Wait for `t` more precisely than tokio's timer (1 ms granularity, which
/// alone would make most sends "late"): sleep to within 2 ms, then yield
/// until the moment comes.
async fn wait_until(t: Instant) {
    let coarse = t.checked_sub(Duration::from_millis(2));
    if let Some(c) = coarse {
        if c > Instant::now() {
            tokio::time::sleep_until(c.into()).await;
        }
    }
    while Instant::now() < t {
        tokio::task::yield_now().await;
    }
}

async fn connect(addr: SocketAddr) -> Option<Sender> {
    let stream = TcpStream::connect(addr).await.ok()?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(conn);
    Some(sender)
}

fn request(
    a: &LoadArgs,
    host: &str,
    rng: &mut rand::rngs::StdRng,
    value: &Bytes,
) -> Request<Full<Bytes>> {
    let key = format!("{:016}", rng.random_range(0..a.keys.max(1)));
    let (method, body) = match a.workload {
        Workload::Put => (Method::PUT, value.clone()),
        Workload::Get => (Method::GET, Bytes::new()),
    };
    Request::builder()
        .method(method)
        .uri(format!("/v0/entity?id={key}"))
        .header("host", host)
        .body(Full::new(body))
        .expect("request")
}

/// Send one request on the connection (reconnecting once if it broke) and
/// read the whole answer; the status, or `None` on a connection error.
async fn send_one(
    sender: &mut Option<Sender>,
    addr: SocketAddr,
    req: Request<Full<Bytes>>,
) -> Option<u16> {
    for _attempt in 0..2 {
        if sender.is_none() {
            *sender = connect(addr).await;
        }
        let s = sender.as_mut()?;
        if s.ready().await.is_err() {
            *sender = None;
            continue;
        }
        match s.send_request(req.clone()).await {
            Ok(resp) => {
                let code = resp.status().as_u16();
                if resp.into_body().collect().await.is_ok() {
                    return Some(code);
                }
                *sender = None;
                return None;
            }
            Err(_) => *sender = None,
        }
    }
    None
}

/// Latencies are recorded in microseconds, up to an hour.
const MAX_LATENCY_US: u64 = 3_600_000_000;

impl PerConn {
    /// Count one answered (or failed) request whose latency runs from
    /// `since`: the intended send time in open loop, the actual send in
    /// closed loop.
    fn record(&mut self, status: Option<u16>, since: Instant) {
        self.counted += 1;
        match status {
            Some(code) => {
                *self.statuses.entry(code).or_default() += 1;
                let us = (since.elapsed().as_micros() as u64).clamp(1, MAX_LATENCY_US);
                let _ = self.hist.record(us);
            }
            None => self.errors += 1,
        }
    }
}

fn new_per_conn() -> PerConn {
    PerConn {
        hist: Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).unwrap(),
        statuses: BTreeMap::new(),
        errors: 0,
        late: 0,
        max_lag: Duration::ZERO,
        counted: 0,
    }
}

/// What one connection or client owns: its key stream (seeded from the
/// run's seed and its index, lesson 5), its value, its connection.
struct Worker {
    addr: SocketAddr,
    host: String,
    rng: rand::rngs::StdRng,
    value: Bytes,
    sender: Option<Sender>,
    out: PerConn,
}

impl Worker {
    async fn new(addr: SocketAddr, host: String, index: usize, a: &LoadArgs) -> Worker {
        Worker {
            addr,
            host,
            rng: rand::rngs::StdRng::seed_from_u64(
                a.seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            value: Bytes::from(vec![b'v'; a.value_size]),
            sender: connect(addr).await,
            out: new_per_conn(),
        }
    }

    /// Send the workload's next request and read its answer.
    async fn send(&mut self, a: &LoadArgs) -> Option<u16> {
        let req = request(a, &self.host, &mut self.rng, &self.value);
        send_one(&mut self.sender, self.addr, req).await
    }
}

/// A closed-loop client: send, wait for the answer, think, again, until the
/// run's time is up. Latency is from the actual send.
async fn client(
    addr: SocketAddr,
    host: String,
    index: usize,
    a: LoadArgs,
    shared: Arc<Shared>,
) -> PerConn {
    let mut w = Worker::new(addr, host, index, &a).await;
    wait_until(shared.start).await;
    let warm_until = shared.start + Duration::from_secs_f64(a.warmup);
    let end = warm_until + Duration::from_secs_f64(a.duration);
    while Instant::now() < end {
        let sent = Instant::now();
        let status = w.send(&a).await;
        if sent >= warm_until {
            w.out.record(status, sent);
        }
        if a.think > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(a.think)).await;
        }
    }
    w.out
}

async fn connection(
    addr: SocketAddr,
    host: String,
    index: usize,
    a: LoadArgs,
    shared: Arc<Shared>,
) -> PerConn {
    let mut w = Worker::new(addr, host, index, &a).await;
    loop {
        let (i, offset) = {
            let mut g = shared.schedule.lock().unwrap();
            if g.1 >= shared.total {
                break;
            }
            g.1 += 1;
            (g.1 - 1, g.0.next_offset())
        };
        let intended = shared.start + offset;
        wait_until(intended).await;
        let lag = Instant::now().saturating_duration_since(intended);
        let counted = i >= shared.warm;
        if counted && lag > Duration::from_millis(1) {
            w.out.late += 1;
            w.out.max_lag = w.out.max_lag.max(lag);
        }
        let status = w.send(&a).await;
        if counted {
            w.out.record(status, intended);
        }
    }
    w.out
}
