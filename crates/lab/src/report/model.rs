//! The report's data: what a load run or a sweep measured, as the driver
//! fills it and the renderers read it. Owns the schema; must not render.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    Load,
    Sweep,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub kind: RunKind,
    pub title: String,
    pub started_at: String,
    pub command: String,
    pub target: String,
    pub workload: String,
    pub slo: Option<String>,
    pub trials: Vec<Trial>,
    pub breaking_point: Option<f64>,
    pub verdict: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trial {
    pub offered_rate: Option<f64>,
    pub clients: Option<usize>,
    pub started_s: f64,
    pub duration_s: f64,
    pub requests: u64,
    pub achieved_rate: f64,
    pub errors: u64,
    pub error_pct: f64,
    pub latency: Percentiles,
    pub per_op: Vec<OpSummary>,
    pub spectrum: Vec<SpectrumPoint>,
    pub timeline: Vec<Second>,
    pub server: Vec<ServerSample>,
    pub meets_slo: Option<bool>,
    pub late_sends: u64,
    pub max_lag_ms: f64,
    pub distinct_keys: Option<u64>,
    pub server_cpu_cores: Option<f64>,
    pub server_rss_bytes: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Percentiles {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    pub fn from_hist(h: &Histogram<u64>) -> Percentiles {
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Percentiles {
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(0.5),
            p90_ms: ms(0.9),
            p95_ms: ms(0.95),
            p99_ms: ms(0.99),
            p999_ms: ms(0.999),
            max_ms: h.max() as f64 / 1000.0,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpSummary {
    pub op: String,
    pub requests: u64,
    pub errors: u64,
    pub latency: Percentiles,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SpectrumPoint {
    pub quantile: f64,
    pub latency_ms: f64,
}

pub fn spectrum_from_hist(h: &Histogram<u64>) -> Vec<SpectrumPoint> {
    [
        0.0, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999, 1.0,
    ]
    .iter()
    .map(|&q| SpectrumPoint {
        quantile: q,
        latency_ms: h.value_at_quantile(q) as f64 / 1000.0,
    })
    .collect()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Second {
    pub t_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ServerSample {
    pub t_s: f64,
    pub cpu_cores: Option<f64>,
    pub rss_bytes: Option<f64>,
    pub in_service: Option<f64>,
    pub waiting: Option<f64>,
    pub limit: Option<f64>,
    pub admitted_at_once: Option<f64>,
    pub admitted_after_wait: Option<f64>,
    pub refused: Option<f64>,
    pub flushes: Option<f64>,
    pub compactions: Option<f64>,
    pub stalls: Option<f64>,
}
