//! The server's side of a run on the same time axis: a thread that reads
//! the target's Prometheus `/metrics` every second and turns the counters
//! it cares about (CPU, memory, admission, flushes, compactions, stalls)
//! into per-interval samples. Owns the scraping and the text parsing; must
//! not judge the numbers (the verdict does).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::report::model::ServerSample;

/// Sum of every sample of each metric name (labels ignored), from the
/// Prometheus text format.
pub fn parse_metrics(text: &str) -> HashMap<String, f64> {
    let mut m = HashMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = &line[..name_end];
        let rest = match line[name_end..].find('}') {
            Some(i) if line[name_end..].starts_with('{') => &line[name_end + i + 1..],
            _ => &line[name_end..],
        };
        if let Some(v) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            *m.entry(name.to_string()).or_insert(0.0) += v;
        }
    }
    m
}

/// The `/metrics` text of the node at `url` (`http://HOST:PORT`).
pub fn fetch_metrics(url: &str) -> Result<String, String> {
    let t = crate::client::Target::parse(url)?;
    http_get(t.addr, &t.host, "/metrics", Duration::from_secs(10))
}

/// GET `path` from `addr` (HTTP/1.1, connection closed after), the body.
pub fn http_get(
    addr: SocketAddr,
    host: &str,
    path: &str,
    timeout: Duration,
) -> Result<String, String> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| e.to_string())?;
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    let n = match resp.parse(&buf) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return Err(format!("{path}: malformed answer")),
    };
    if resp.code != Some(200) {
        return Err(format!("{path}: status {}", resp.code.unwrap_or(0)));
    }
    let chunked = resp.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding") && h.value.eq_ignore_ascii_case(b"chunked")
    });
    let body = if chunked {
        dechunk(&buf[n..])?
    } else {
        buf[n..].to_vec()
    };
    String::from_utf8(body).map_err(|e| e.to_string())
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        match httparse::parse_chunk_size(b) {
            Ok(httparse::Status::Complete((used, 0))) => {
                let _ = used;
                return Ok(out);
            }
            Ok(httparse::Status::Complete((used, size))) => {
                let end = used + size as usize;
                if b.len() < end + 2 {
                    return Err("truncated chunk".into());
                }
                out.extend_from_slice(&b[used..end]);
                b = &b[end + 2..];
            }
            _ => return Err("bad chunked body".into()),
        }
    }
}

/// Counter names whose per-interval increase a sample carries.
const CPU: &str = "process_cpu_seconds_total";
const RSS: &str = "process_resident_memory_bytes";

fn sample(
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
        in_service: get("strata_admission_in_service"),
        waiting: get("strata_admission_waiting"),
        limit: get("strata_admission_limit"),
        admitted_at_once: delta("strata_admission_admitted_at_once_total"),
        admitted_after_wait: delta("strata_admission_admitted_after_wait_total"),
        refused: delta("strata_admission_refused_queue_full_total")
            .map(|a| a + delta("strata_admission_refused_timeout_total").unwrap_or(0.0)),
        flushes: delta("strata_engine_flushes_total"),
        compactions: delta("strata_engine_compactions_total"),
        stalls: delta("strata_engine_write_stalls_total"),
    }
}

/// The first and the last `/metrics` text a sampler read, as served: the
/// node's state before and after the run, kept with the report so that
/// `strata sim --from-report` can model the node from their difference.
#[derive(Clone, Debug, Default)]
pub struct Scrapes {
    pub first: Option<String>,
    pub last: Option<String>,
}

/// A running sampler; `stop` returns the first and last texts it read.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<ServerSample>>>,
    texts: Arc<Mutex<Scrapes>>,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Start sampling `addr`'s `/metrics` every `every`, with times
    /// relative to `origin`. If the target has no `/metrics`, the sampler
    /// quietly gathers nothing.
    pub fn start(addr: SocketAddr, host: String, origin: Instant, every: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let texts = Arc::new(Mutex::new(Scrapes::default()));
        let (st, sa, tx) = (stop.clone(), samples.clone(), texts.clone());
        let handle = std::thread::Builder::new()
            .name("strata-scrape".into())
            .spawn(move || {
                let mut prev: Option<(Instant, HashMap<String, f64>)> = None;
                let mut next = Instant::now();
                while !st.load(Ordering::Acquire) {
                    let now = Instant::now();
                    if let Ok(text) = http_get(addr, &host, "/metrics", Duration::from_secs(2)) {
                        let m = parse_metrics(&text);
                        if !m.is_empty() {
                            let mut t = tx.lock().unwrap();
                            if t.first.is_none() {
                                t.first = Some(text.clone());
                            }
                            t.last = Some(text);
                        }
                        let t_s = now.saturating_duration_since(origin).as_secs_f64()
                            - origin.saturating_duration_since(now).as_secs_f64();
                        if prev.is_some() {
                            sa.lock().unwrap().push(sample(prev.as_ref(), now, &m, t_s));
                        }
                        prev = Some((now, m));
                    }
                    next += every;
                    while Instant::now() < next && !st.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(20).min(every));
                    }
                }
            })
            .ok();
        Sampler {
            stop,
            samples,
            texts,
            handle,
        }
    }

    /// Samples so far.
    pub fn snapshot(&self) -> Vec<ServerSample> {
        self.samples.lock().unwrap().clone()
    }

    /// Stop sampling; the first and last texts read.
    pub fn stop(mut self) -> Scrapes {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        std::mem::take(&mut *self.texts.lock().unwrap())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_labels_and_sums_families() {
        let text = "# HELP x y\n# TYPE a counter\na_total 3\nb{level=\"0\"} 2\nb{level=\"1\"} 5.5\nc 1e3\n";
        let m = parse_metrics(text);
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
    fn dechunks() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert!(dechunk(b"zz\r\n").is_err());
    }
}
