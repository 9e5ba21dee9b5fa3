//! What a benchmark run reports: each benchmark's result (ops/s,
//! latencies from its histogram, bytes) and the run's report (write and
//! space amplification, the table `db_bench` prints, JSON). Owns the
//! figures' shape and wording; must not run anything.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::args::BenchArgs;

/// What one benchmark measured.
#[derive(Clone, Debug)]
pub struct BenchResult {
    pub name: &'static str,
    /// Operations done, summed over threads.
    pub ops: u64,
    /// Wall time from the first thread's start to the last thread's end.
    pub elapsed: Duration,
    /// Summed per-thread busy time (db_bench's micros/op uses it).
    pub thread_time: Duration,
    /// Key and value bytes written or read.
    pub bytes: u64,
    /// For point reads and seeks: how many found their key.
    pub found: Option<u64>,
    /// Per-operation latency in nanoseconds.
    pub latency: Histogram<u64>,
}

impl BenchResult {
    pub fn ops_per_sec(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.ops as f64 / s
        } else {
            0.0
        }
    }

    pub fn micros_per_op(&self) -> f64 {
        if self.ops == 0 {
            return 0.0;
        }
        self.thread_time.as_secs_f64() * 1e6 / self.ops as f64
    }

    pub fn mb_per_sec(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.bytes as f64 / 1_048_576.0 / s
        } else {
            0.0
        }
    }

    /// Latency at quantile `q` in microseconds.
    pub fn latency_us(&self, q: f64) -> f64 {
        if self.latency.is_empty() {
            return 0.0;
        }
        self.latency.value_at_quantile(q) as f64 / 1000.0
    }

    /// db_bench's report line, e.g.
    /// `fillrandom   :       2.345 micros/op 426439 ops/sec;   47.2 MB/s`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{:<12} : {:>11.3} micros/op {} ops/sec;",
            self.name,
            self.micros_per_op(),
            self.ops_per_sec().round() as u64
        );
        if self.bytes > 0 {
            let _ = write!(s, " {:>6.1} MB/s", self.mb_per_sec());
        }
        if let Some(f) = self.found {
            let _ = write!(s, " (found {f} of {})", self.ops);
        }
        s
    }

    /// The percentile line printed under [`BenchResult::line`].
    pub fn latency_line(&self) -> String {
        format!(
            "{:<12}   latency p50 / p99 / p99.9: {:.2} / {:.2} / {:.2} us (max {:.2})",
            "",
            self.latency_us(0.5),
            self.latency_us(0.99),
            self.latency_us(0.999),
            self.latency.max() as f64 / 1000.0,
        )
    }
}

/// Everything a run measured.
#[derive(Clone, Debug)]
pub struct Report {
    pub engine: &'static str,
    pub seed: u64,
    pub results: Vec<BenchResult>,
    /// Key and value bytes the fill benchmarks wrote.
    pub user_bytes_written: u64,
    /// Keys present after the final compaction (full-scan count).
    pub live_keys: u64,
    /// Key and value bytes of the live keys.
    pub live_bytes: u64,
    /// Disk bytes after the final compaction.
    pub disk_bytes: u64,
    /// Write amplification by the engine's own counters (Strata only).
    pub engine_write_amplification: Option<f64>,
    /// Bytes this process wrote to storage (`/proc/self/io` write_bytes)
    /// per user byte; the same measure for every engine.
    pub io_write_amplification: Option<f64>,
    /// Time of the final compaction.
    pub compaction_time: Duration,
}

impl Report {
    pub fn space_amplification(&self) -> Option<f64> {
        (self.live_bytes > 0).then(|| self.disk_bytes as f64 / self.live_bytes as f64)
    }

    pub fn result(&self, name: &str) -> Option<&BenchResult> {
        self.results.iter().find(|r| r.name == name)
    }

    /// A JSON object (hand-formatted; no serde).
    pub fn to_json(&self, args: &BenchArgs) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{{\"engine\":\"{}\",\"num\":{},\"key_size\":{},\"value_size\":{},\"threads\":{},\
             \"sync\":{},\"cache_size\":{},\"bloom_bits\":{},\"write_buffer_size\":{},\"seed\":{},\
             \"benchmarks\":[",
            self.engine,
            args.num,
            args.key_size,
            args.value_size,
            args.threads,
            args.sync,
            args.cache_size,
            args.bloom_bits,
            args.write_buffer_size,
            self.seed
        );
        for (i, r) in self.results.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(
                s,
                "{{\"name\":\"{}\",\"ops\":{},\"seconds\":{},\"ops_per_sec\":{},\
                 \"micros_per_op\":{},\"mb_per_sec\":{},\"found\":{},\"p50_us\":{},\
                 \"p99_us\":{},\"p999_us\":{},\"max_us\":{}}}",
                r.name,
                r.ops,
                json_f64(r.elapsed.as_secs_f64()),
                json_f64(r.ops_per_sec()),
                json_f64(r.micros_per_op()),
                json_f64(r.mb_per_sec()),
                r.found.map_or("null".to_string(), |f| f.to_string()),
                json_f64(r.latency_us(0.5)),
                json_f64(r.latency_us(0.99)),
                json_f64(r.latency_us(0.999)),
                json_f64(r.latency.max() as f64 / 1000.0),
            );
        }
        let _ = write!(
            s,
            "],\"user_bytes_written\":{},\"live_keys\":{},\"live_bytes\":{},\"disk_bytes\":{},\
             \"write_amplification\":{},\"io_write_amplification\":{},\
             \"space_amplification\":{},\"compaction_seconds\":{}}}",
            self.user_bytes_written,
            self.live_keys,
            self.live_bytes,
            self.disk_bytes,
            json_opt(self.engine_write_amplification),
            json_opt(self.io_write_amplification),
            json_opt(self.space_amplification()),
            json_f64(self.compaction_time.as_secs_f64()),
        );
        s
    }
}

pub(super) fn json_f64(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

pub(super) fn json_opt(v: Option<f64>) -> String {
    v.map_or("null".into(), json_f64)
}

/// Bytes this process has caused to be written to storage, from
/// `/proc/self/io` (Linux only; counted when pages are dirtied).
pub(super) fn process_write_bytes() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    let field = |name: &str| -> Option<u64> {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
    };
    let written = field("write_bytes:")?;
    let cancelled = field("cancelled_write_bytes:").unwrap_or(0);
    Some(written.saturating_sub(cancelled))
}

/// Bytes allocated on disk to the files under `dir` (`st_blocks` x 512, so
/// sparse or preallocated-but-unwritten space does not count).
pub fn dir_allocated_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            total += dir_allocated_bytes(&entry.path())?;
        } else {
            total += meta.blocks() * 512;
        }
    }
    Ok(total)
}
