//! HdrHistogram interval logs: a load run writes one histogram per interval
//! and operation (the tag), V2-compressed, in the format HdrHistogram's own
//! tools read; `strata report merge` adds the logs of several load machines
//! (say, the pods of a Kubernetes Job) into one distribution. Owns the log
//! format and the merge; must not run load or render reports.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;

use super::model::{spectrum_from_hist, Percentiles, SpectrumPoint};

/// The comment that heads every log this module writes.
const HEADER: &str = "strata lab interval log: latency in microseconds from intended send \
                      times; one histogram per interval and operation (the tag); \
                      the max column is in microseconds too";

/// The comment that names a share of a run: this, then `I/N`.
const SHARE_COMMENT: &str = "strata share ";

/// Writes an interval log as a run goes, so a run cut short keeps what it
/// measured.
pub struct HdrLogWriter {
    out: BufWriter<File>,
    serializer: V2DeflateSerializer,
    line: Vec<u8>,
}

impl HdrLogWriter {
    /// Create (truncate) the log at `path`; interval offsets are relative
    /// to `start_time`, which is written as both StartTime and BaseTime.
    pub fn create(path: &Path, start_time: SystemTime) -> io::Result<Self> {
        Self::create_share(path, start_time, None)
    }

    /// [`create`](Self::create) for a share of a run (`I/N`, `--segment`),
    /// said in a comment that `merge` reads to tell which shares it got.
    pub fn create_share(
        path: &Path,
        start_time: SystemTime,
        segment: Option<&str>,
    ) -> io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        let mut serializer = V2DeflateSerializer::new();
        let share = segment.map(|s| format!("{SHARE_COMMENT}{s}"));
        let mut b = IntervalLogWriterBuilder::new();
        b.add_comment(HEADER);
        if let Some(c) = &share {
            b.add_comment(c);
        }
        b.with_start_time(start_time)
            .with_base_time(start_time)
            .begin_log_with(&mut out, &mut serializer)?;
        out.write_all(
            b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
        )?;
        Ok(HdrLogWriter {
            out,
            serializer,
            line: Vec::new(),
        })
    }

    /// Append one interval's histogram (microseconds) for operation `tag`
    /// (no commas, spaces or line breaks), starting `start_offset_s` after
    /// the log's start time and lasting `duration_s`.
    pub fn interval(
        &mut self,
        start_offset_s: f64,
        duration_s: f64,
        tag: &str,
        h: &Histogram<u64>,
    ) -> io::Result<()> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let tag = Tag::new(tag)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| invalid(format!("bad interval log tag {tag:?}")))?;
        let start = Duration::try_from_secs_f64(start_offset_s)
            .map_err(|e| invalid(format!("interval start {start_offset_s}: {e}")))?;
        let duration = Duration::try_from_secs_f64(duration_s)
            .map_err(|e| invalid(format!("interval duration {duration_s}: {e}")))?;
        // A builder with no headers writes nothing but the interval line.
        self.line.clear();
        IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.line, &mut self.serializer)?
            .write_histogram(h, start, duration, Some(tag))
            .map_err(io::Error::other)?;
        self.out.write_all(&self.line)
    }

    /// Flush the log to its file.
    pub fn finish(mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}

/// The sum of several interval logs.
pub struct MergeResult {
    pub files: usize,
    pub intervals: usize,
    /// Per operation (interval tag; untagged intervals count as "untagged").
    pub per_tag: BTreeMap<String, Histogram<u64>>,
    /// All operations.
    pub total: Histogram<u64>,
    /// From the earliest interval start to the latest interval end, over
    /// all files, in seconds (0 if the logs carry no absolute time).
    pub span_s: f64,
    /// Each file's StartTime (seconds since the epoch), where it has one.
    pub starts: Vec<Option<f64>>,
    /// Each file's share of a run (`I/N`), where it says one.
    pub shares: Vec<Option<String>>,
}

/// Which shares of a run cut in `count` the merged logs hold.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub struct Shares {
    pub count: u64,
    /// Shares (from 1) no log holds.
    pub missing: Vec<u64>,
    /// Shares more than one log holds.
    pub repeated: Vec<u64>,
    /// Logs that say no share, or a share of another count.
    pub others: usize,
}

/// A tag's merged distribution, for `--json`.
#[derive(Serialize)]
pub struct TagSummary {
    pub tag: String,
    pub count: u64,
    pub latency: Percentiles,
    pub spectrum: Vec<SpectrumPoint>,
}

/// `strata report merge --json`'s output.
#[derive(Serialize)]
pub struct MergeSummary {
    pub files: usize,
    pub intervals: usize,
    pub span_s: f64,
    pub rate: Option<f64>,
    /// How far apart the logs' runs started (latest StartTime − earliest).
    pub start_spread_ms: Option<f64>,
    /// With logs of shares of a run (`strata load --segment`): which.
    pub shares: Option<Shares>,
    pub total: TagSummary,
    pub per_tag: Vec<TagSummary>,
}

fn tag_summary(tag: &str, h: &Histogram<u64>) -> TagSummary {
    TagSummary {
        tag: tag.to_string(),
        count: h.len(),
        latency: Percentiles::from_hist(h),
        spectrum: spectrum_from_hist(h),
    }
}

impl MergeResult {
    /// Values in all histograms together.
    pub fn count(&self) -> u64 {
        self.total.len()
    }

    /// Requests per second over the span, when the span is known.
    pub fn rate(&self) -> Option<f64> {
        (self.span_s > 0.0).then(|| self.count() as f64 / self.span_s)
    }

    /// How far apart the logs' runs started, in seconds, when every log
    /// has a StartTime and there are several.
    pub fn start_spread_s(&self) -> Option<f64> {
        let starts: Option<Vec<f64>> = self.starts.iter().copied().collect();
        let starts = starts.filter(|s| s.len() > 1)?;
        let lo = starts.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = starts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(hi - lo)
    }

    /// Which shares of a run the logs hold, when any says it is a share
    /// (of the count most of them say).
    pub fn shares(&self) -> Option<Shares> {
        // (index from 0, count) of each log that says one.
        let parsed: Vec<Option<(u64, u64)>> = self
            .shares
            .iter()
            .map(|s| s.as_deref().and_then(|s| crate::units::share(s).ok()))
            .collect();
        let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
        for (_, n) in parsed.iter().flatten() {
            *counts.entry(*n).or_default() += 1;
        }
        let (&count, _) = counts.iter().max_by_key(|(_, n)| **n)?;
        let mut held = vec![0usize; count as usize];
        let mut others = 0;
        for s in &parsed {
            match s {
                Some((i, n)) if *n == count => held[*i as usize] += 1,
                _ => others += 1,
            }
        }
        let which = |f: &dyn Fn(usize) -> bool| -> Vec<u64> {
            (0..count)
                .filter(|i| f(held[*i as usize]))
                .map(|i| i + 1)
                .collect()
        };
        Some(Shares {
            count,
            missing: which(&|n| n == 0),
            repeated: which(&|n| n > 1),
            others,
        })
    }

    /// One line on the shares and the starts, if there is anything to say.
    pub fn shares_line(&self) -> Option<String> {
        let mut words = Vec::new();
        if let Some(s) = self.shares() {
            let list = |v: &[u64]| {
                v.iter()
                    .map(|i| format!("{i}/{}", s.count))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if s.missing.is_empty() && s.repeated.is_empty() && s.others == 0 {
                words.push(format!("all {} shares of the run", s.count));
            } else {
                let mut w = format!("shares of a run cut in {}", s.count);
                if !s.missing.is_empty() {
                    w += &format!(
                        "; MISSING {} (the merge is not the whole run)",
                        list(&s.missing)
                    );
                }
                if !s.repeated.is_empty() {
                    w += &format!("; given more than once: {}", list(&s.repeated));
                }
                if s.others > 0 {
                    w += &format!("; {} logs of no share or of another count", s.others);
                }
                words.push(w);
            }
        }
        if let Some(d) = self.start_spread_s() {
            words.push(format!(
                "the runs started within {:.1} ms of each other",
                d * 1000.0
            ));
        }
        (!words.is_empty()).then(|| words.join("; "))
    }

    pub fn to_summary(&self) -> MergeSummary {
        MergeSummary {
            files: self.files,
            intervals: self.intervals,
            span_s: self.span_s,
            rate: self.rate(),
            start_spread_ms: self.start_spread_s().map(|s| s * 1000.0),
            shares: self.shares(),
            total: tag_summary("all", &self.total),
            per_tag: self
                .per_tag
                .iter()
                .map(|(t, h)| tag_summary(t, h))
                .collect(),
        }
    }

    /// A wrk2-style summary: the latency distribution of all operations,
    /// each operation's percentiles, and the detailed percentile spectrum.
    pub fn summary(&self) -> String {
        let ms = |v: u64| v as f64 / 1000.0;
        let h = &self.total;
        let mut s = format!(
            "  {} requests from {} interval logs ({} intervals)",
            self.count(),
            self.files,
            self.intervals
        );
        match self.rate() {
            Some(r) => s += &format!(" over {:.2}s: {r:.0} req/s\n", self.span_s),
            None => s += "\n",
        }
        if let Some(l) = self.shares_line() {
            s += &format!("  {l}\n");
        }
        s += "  Latency Distribution (HdrHistogram - Recorded Latency, ms)\n";
        for q in [0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1.0] {
            s += &format!(
                " {:>8.3}%  {:>10.3}\n",
                q * 100.0,
                ms(h.value_at_quantile(q))
            );
        }
        if self.per_tag.len() > 1 || !self.per_tag.contains_key("all") {
            s += "\n  Per operation (ms):\n";
            s += &format!(
                "  {:<12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
                "op", "count", "p50", "p90", "p99", "p99.9", "max"
            );
            for (tag, h) in &self.per_tag {
                let p = Percentiles::from_hist(h);
                s += &format!(
                    "  {:<12} {:>10} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3}\n",
                    tag,
                    h.len(),
                    p.p50_ms,
                    p.p90_ms,
                    p.p99_ms,
                    p.p999_ms,
                    p.max_ms
                );
            }
        }
        s += "\n  Detailed Percentile spectrum:\n";
        s += &format!(
            "  {:>12} {:>14} {:>10} {:>16}\n\n",
            "Value(ms)", "Percentile", "TotalCount", "1/(1-Percentile)"
        );
        let total = h.len() as f64;
        for p in spectrum_from_hist(h) {
            let inv = if p.quantile < 1.0 {
                format!("{:>16.2}", 1.0 / (1.0 - p.quantile))
            } else {
                format!("{:>16}", "inf")
            };
            s += &format!(
                "  {:>12.3} {:>14.12} {:>10} {inv}\n",
                p.latency_ms,
                p.quantile,
                (p.quantile * total).round() as u64
            );
        }
        s += &format!(
            "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]\n",
            h.mean() / 1000.0,
            h.stdev() / 1000.0
        );
        s += &format!(
            "#[Max     = {:>12.3}, Total count    = {:>12}]\n",
            ms(h.max()),
            h.len()
        );
        s
    }
}

pub(crate) fn empty_hist() -> Histogram<u64> {
    // Auto-resizing, so any interval's range fits; 3 significant digits,
    // as the load driver records.
    Histogram::new(3).expect("3 significant digits is valid")
}

/// One interval of a log, as [`for_each_interval`] reads it.
pub struct Interval<'a> {
    /// Its start as written: seconds after the log's BaseTime (or
    /// StartTime) when the log has one, else absolute.
    pub offset_s: f64,
    /// The log's BaseTime (or StartTime), seconds since the epoch.
    pub origin_s: Option<f64>,
    pub duration_s: f64,
    /// The operation; `untagged` for an interval without one.
    pub tag: &'a str,
    pub hist: &'a Histogram<u64>,
}

/// Read the interval log at `path`, one interval at a time (a long run's
/// log need not fit in memory); the number of intervals. Errors name the
/// file (and where in it).
pub fn for_each_interval(
    path: &Path,
    mut f: impl FnMut(&Interval<'_>) -> Result<(), String>,
) -> Result<usize, String> {
    let p = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("{p}: {e}"))?;
    let mut deserializer = Deserializer::new();
    let (mut base, mut start) = (None, None);
    let mut n = 0;
    for entry in IntervalLogIterator::new(&bytes) {
        let entry = entry.map_err(|e| match e {
            hdrhistogram::serialization::interval_log::LogIteratorError::ParseError { offset } => {
                format!("{p}: not an HdrHistogram interval log: cannot parse at byte {offset}")
            }
        })?;
        let iv = match entry {
            LogEntry::BaseTime(t) => {
                base = Some(t.as_secs_f64());
                continue;
            }
            LogEntry::StartTime(t) => {
                start = Some(t.as_secs_f64());
                continue;
            }
            LogEntry::Interval(iv) => iv,
        };
        n += 1;
        let at = || {
            format!(
                "{p}: interval {n} (at {:.3}s)",
                iv.start_timestamp().as_secs_f64()
            )
        };
        let raw = base64::engine::general_purpose::STANDARD
            .decode(iv.encoded_histogram())
            .map_err(|e| format!("{}: bad base64: {e}", at()))?;
        let h: Histogram<u64> = deserializer
            .deserialize(&mut &raw[..])
            .map_err(|e| format!("{}: bad histogram: {e:?}", at()))?;
        f(&Interval {
            offset_s: iv.start_timestamp().as_secs_f64(),
            origin_s: base.or(start),
            duration_s: iv.duration().as_secs_f64(),
            tag: iv.tag().map(|t| t.as_str()).unwrap_or("untagged"),
            hist: &h,
        })
        .map_err(|e| format!("{}: {e}", at()))?;
    }
    Ok(n)
}

/// Add up interval logs. Errors name the file (and where in it).
pub fn merge(paths: &[PathBuf]) -> Result<MergeResult, String> {
    if paths.is_empty() {
        return Err("no interval logs given".into());
    }
    let mut out = MergeResult {
        files: paths.len(),
        intervals: 0,
        per_tag: BTreeMap::new(),
        total: empty_hist(),
        span_s: 0.0,
        starts: Vec::new(),
        shares: Vec::new(),
    };
    let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut absolute = true;
    for path in paths {
        let mut origin = None;
        let n = for_each_interval(path, |iv| {
            origin = origin.or(iv.origin_s);
            out.per_tag
                .entry(iv.tag.to_string())
                .or_insert_with(empty_hist)
                .add(iv.hist)
                .map_err(|e| format!("{e:?}"))?;
            out.total.add(iv.hist).map_err(|e| format!("{e:?}"))?;
            // Interval times are relative to BaseTime when present; the
            // writer also sets StartTime; without either they are absolute.
            absolute &= iv.origin_s.is_some() || iv.offset_s > 1e9;
            let t0 = iv.origin_s.unwrap_or(0.0) + iv.offset_s;
            first = first.min(t0);
            last = last.max(t0 + iv.duration_s);
            Ok(())
        })?;
        if n == 0 {
            return Err(format!(
                "{}: no interval histograms in this file",
                path.display()
            ));
        }
        out.intervals += n;
        out.starts.push(origin);
        out.shares.push(share_in(path));
    }
    if absolute && last > first {
        out.span_s = last - first;
    }
    Ok(out)
}

/// The share of a run a log says it holds (its `strata share I/N`
/// comment, among the header lines).
fn share_in(path: &Path) -> Option<String> {
    use std::io::{BufRead, BufReader};
    let f = BufReader::new(File::open(path).ok()?);
    for line in f.lines().take(16) {
        let line = line.ok()?;
        if let Some(s) = line
            .strip_prefix('#')
            .and_then(|l| l.strip_prefix(SHARE_COMMENT))
        {
            return Some(s.trim().to_string());
        }
    }
    None
}

/// `strata report merge`: add up the interval logs of several load runs.
#[derive(clap::Args, Clone, Debug)]
pub struct MergeArgs {
    /// Interval logs written by load runs (one per load machine).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print JSON (per-operation percentiles and spectra) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run `strata report merge`: the text to print, or an error.
pub fn run_merge(a: &MergeArgs) -> Result<String, String> {
    let m = merge(&a.files)?;
    if a.json {
        serde_json::to_string_pretty(&m.to_summary())
            .map(|s| s + "\n")
            .map_err(|e| e.to_string())
    } else {
        Ok(m.summary())
    }
}
