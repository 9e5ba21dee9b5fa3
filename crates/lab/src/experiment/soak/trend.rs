//! A soak's trends: per-window latency from the run's interval log, and
//! each node's resources over the run (least-squares slopes over the
//! second half, when the RSS levelled off, what the heap, the cache and
//! the memtables held, the longest stall). Owns that arithmetic; must not
//! judge it (`judge`).

use std::path::Path;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::report::hdrlog::{empty_hist, for_each_interval};
use crate::report::model::ServerSample;

#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// Start, seconds after the run started (warm-up included).
    pub t_s: f64,
    pub requests: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// One node's resources over the run.
#[derive(Clone, Debug, Serialize)]
pub struct NodeTrend {
    pub url: String,
    pub rss_first_mib: f64,
    pub rss_last_mib: f64,
    pub rss_max_mib: f64,
    /// Least-squares slope over the second half, MiB per hour, and the
    /// rise it fits over that half.
    pub rss_slope_mib_per_hour: f64,
    pub rss_rise_mib: f64,
    /// Mean RSS over the second half, MiB.
    pub rss_half_mean_mib: f64,
    /// Of the RSS, the heap (anonymous memory): its slope over the second
    /// half, MiB per hour (None when the node does not say).
    pub anon_slope_mib_per_hour: Option<f64>,
    /// The RSS less what the block cache and the memtables hold (both
    /// bounded by the node's settings): its fitted rise over the second
    /// half, MiB, and the slope, MiB per hour. A leak shows here; a cache
    /// still filling does not. None when the node does not report both.
    pub other_rise_mib: Option<f64>,
    pub other_slope_mib_per_hour: Option<f64>,
    /// The node's own descriptors (files, WAL, tables, listeners, peer
    /// connections): open descriptors less client connections, which are
    /// the client's to open and close.
    pub fds_min: f64,
    pub fds_max: f64,
    pub fds_slope_per_hour: f64,
    pub fds_rise: f64,
    /// Client connections the node held, least and most.
    pub connections_min: f64,
    pub connections_max: f64,
    pub flushes: f64,
    pub compactions: f64,
    pub stalls: f64,
    /// The longest the engine held writes back in one second, ms.
    pub stall_max_ms: f64,
    /// The latest the node's pause detector saw a thread wake, ms.
    pub pause_max_ms: f64,
    /// When the RSS came within [`LEVEL_BAND_MIB`] (or a tenth) of its
    /// last value and stayed there, seconds after the run started; `None`
    /// if it never settled.
    pub level_by_s: Option<f64>,
    /// The same for the RSS less the block cache and the memtables (the
    /// part judged), within [`REST_LEVEL_BAND_MIB`] (or a tenth): with a
    /// memtable's sawtooth of tens of MiB, the whole RSS settles within its
    /// band only when it happens to end near its mean, and the rest has
    /// no sawtooth to absorb; `None` if the node does not report the two.
    pub other_level_by_s: Option<f64>,
    /// The most the block cache and the memtables held at once, MiB.
    pub cache_max_mib: Option<f64>,
    pub memtables_max_mib: Option<f64>,
    /// What the RSS held at the end: the heap (anonymous memory), and of
    /// it the block cache and the memtables, MiB.
    pub anon_last_mib: Option<f64>,
    pub cache_last_mib: Option<f64>,
    pub memtables_last_mib: Option<f64>,
}

/// Least-squares fit of `pts`: (slope per unit of x, value of the line at
/// the first x). None with fewer than two distinct x.
pub fn fit(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    Some((slope, my + slope * (pts[0].0 - mx)))
}

/// The points of `pick` at or after `from_s`.
pub(super) fn series(
    samples: &[ServerSample],
    from_s: f64,
    pick: fn(&ServerSample) -> Option<f64>,
) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter(|s| s.t_s >= from_s)
        .filter_map(|s| pick(s).map(|v| (s.t_s, v)))
        .collect()
}

/// The least value of `pts`, 0 for none.
fn least(pts: &[(f64, f64)]) -> f64 {
    let v = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// The node's own open descriptors: all less its client connections.
pub(super) fn own_fds(s: &ServerSample) -> Option<f64> {
    s.open_fds.map(|f| f - s.client_connections.unwrap_or(0.0))
}

/// (slope per hour, rise over the span) of `pts`.
fn slope_and_rise(pts: &[(f64, f64)]) -> (f64, f64) {
    match (fit(pts), pts.first(), pts.last()) {
        (Some((slope, _)), Some(a), Some(b)) => (slope * 3600.0, slope * (b.0 - a.0)),
        _ => (0.0, 0.0),
    }
}

/// Judge one node's samples; `half_s` is where the second half starts.
pub fn node_trend(url: &str, samples: &[ServerSample], half_s: f64) -> NodeTrend {
    const MIB: f64 = 1024.0 * 1024.0;
    let rss = series(samples, 0.0, |s| s.rss_bytes.map(|b| b / MIB));
    let fds = series(samples, 0.0, own_fds);
    let conns = series(samples, 0.0, |s| s.client_connections);
    let rss_half = series(samples, half_s, |s| s.rss_bytes.map(|b| b / MIB));
    let (rss_slope, rss_rise) = slope_and_rise(&rss_half);
    let rss_half_mean = rss_half.iter().map(|p| p.1).sum::<f64>() / rss_half.len().max(1) as f64;
    let other_of =
        |s: &ServerSample| Some((s.rss_bytes? - s.block_cache_bytes? - s.memtable_bytes?) / MIB);
    let other_all = series(samples, 0.0, other_of);
    let other_half: Vec<(f64, f64)> = other_all
        .iter()
        .copied()
        .filter(|p| p.0 >= half_s)
        .collect();
    let other = (other_half.len() >= 2).then(|| slope_and_rise(&other_half));
    let (fds_slope, fds_rise) = slope_and_rise(&series(samples, half_s, own_fds));
    let total = |pick: fn(&ServerSample) -> Option<f64>| samples.iter().filter_map(pick).sum();
    NodeTrend {
        url: url.to_string(),
        rss_first_mib: rss.first().map_or(0.0, |p| p.1),
        rss_last_mib: rss.last().map_or(0.0, |p| p.1),
        rss_max_mib: rss.iter().map(|p| p.1).fold(0.0, f64::max),
        rss_slope_mib_per_hour: rss_slope,
        rss_rise_mib: rss_rise,
        rss_half_mean_mib: rss_half_mean,
        other_rise_mib: other.map(|o| o.1),
        other_slope_mib_per_hour: other.map(|o| o.0),
        anon_slope_mib_per_hour: {
            let a = series(samples, half_s, |s| s.rss_anon_bytes.map(|b| b / MIB));
            (a.len() >= 2).then(|| slope_and_rise(&a).0)
        },
        fds_min: least(&fds),
        fds_max: fds.iter().map(|p| p.1).fold(0.0, f64::max),
        fds_slope_per_hour: fds_slope,
        fds_rise,
        connections_min: least(&conns),
        connections_max: conns.iter().map(|p| p.1).fold(0.0, f64::max),
        flushes: total(|s| s.flushes),
        compactions: total(|s| s.compactions),
        stalls: total(|s| s.stalls),
        // A sample a second: the share of it stalled is seconds.
        stall_max_ms: most(samples, |s| s.stall_share).unwrap_or(0.0) * 1000.0,
        pause_max_ms: most(samples, |s| s.pause_max_ms).unwrap_or(0.0),
        level_by_s: level_by(&rss, LEVEL_BAND_MIB),
        other_level_by_s: level_by(&other_all, REST_LEVEL_BAND_MIB),
        cache_max_mib: most(samples, |s| s.block_cache_bytes.map(|b| b / MIB)),
        memtables_max_mib: most(samples, |s| s.memtable_bytes.map(|b| b / MIB)),
        anon_last_mib: last(samples, |s| s.rss_anon_bytes.map(|b| b / MIB)),
        cache_last_mib: last(samples, |s| s.block_cache_bytes.map(|b| b / MIB)),
        memtables_last_mib: last(samples, |s| s.memtable_bytes.map(|b| b / MIB)),
    }
}

/// How near its last value the RSS must stay to count as level: this many
/// MiB, or a tenth of the value if more.
pub const LEVEL_BAND_MIB: f64 = 32.0;

/// The same for the RSS less the block cache and the memtables.
pub const REST_LEVEL_BAND_MIB: f64 = 4.0;

/// Over how many seconds a series is smoothed (a running median) before
/// [`level_by`] looks at it: the RSS and the cache and memtable gauges are
/// read a few milliseconds apart, so in the second a flush lands the
/// memtable is gone from the gauge and not yet from the RSS, one sample
/// 64 MiB off the level. A level is what holds for longer than that.
pub const LEVEL_SMOOTH_S: f64 = 30.0;

/// The time from which every point of `pts`, smoothed over
/// [`LEVEL_SMOOTH_S`], is within `band_mib` (or a tenth) of the smoothed
/// last one.
fn level_by(pts: &[(f64, f64)], band_mib: f64) -> Option<f64> {
    let pts = running_median(pts, LEVEL_SMOOTH_S);
    let &(_, end) = pts.last()?;
    let band = band_mib.max(0.1 * end);
    let outside = pts.iter().rposition(|p| (p.1 - end).abs() > band);
    match outside {
        None => pts.first().map(|p| p.0),
        Some(i) => pts.get(i + 1).map(|p| p.0),
    }
}

/// Each point replaced by the median of the points within `width_s / 2`
/// of it (fewer at the ends); `pts` in time order.
fn running_median(pts: &[(f64, f64)], width_s: f64) -> Vec<(f64, f64)> {
    let half = width_s / 2.0;
    let (mut lo, mut hi) = (0, 0);
    let mut window = Vec::new();
    pts.iter()
        .map(|&(t, _)| {
            while pts[lo].0 < t - half {
                lo += 1;
            }
            while hi < pts.len() && pts[hi].0 <= t + half {
                hi += 1;
            }
            window.clear();
            window.extend(pts[lo..hi].iter().map(|p| p.1));
            window.sort_by(f64::total_cmp);
            (t, window[window.len() / 2])
        })
        .collect()
}

/// The largest value of `pick`, `None` if no sample has one.
fn most(samples: &[ServerSample], pick: fn(&ServerSample) -> Option<f64>) -> Option<f64> {
    samples.iter().filter_map(pick).reduce(f64::max)
}

/// The last value of `pick`.
fn last(samples: &[ServerSample], pick: fn(&ServerSample) -> Option<f64>) -> Option<f64> {
    samples.iter().rev().find_map(pick)
}

/// Per-window latency from the interval log at `path` (all operations
/// together), windows of `window_s` starting at `from_s` (the end of the
/// warm-up; earlier intervals are left out), and the merged p99 (ms) of the
/// first and the last `compare_s` of the windows that saw requests (a
/// quarter of them if that is less; at least one window each); one pass
/// over the log. The last value is how many windows each side merged.
pub fn windows(
    path: &Path,
    from_s: f64,
    window_s: f64,
    compare_s: f64,
) -> Result<(Vec<Window>, f64, f64, usize), String> {
    let mut hists: Vec<Histogram<u64>> = Vec::new();
    for_each_interval(path, |iv| {
        if iv.offset_s + 1e-6 < from_s {
            return Ok(());
        }
        let i = ((iv.offset_s - from_s + 1e-6) / window_s).floor() as usize;
        while hists.len() <= i {
            hists.push(empty_hist());
        }
        hists[i].add(iv.hist).map_err(|e| format!("{e:?}"))
    })?;
    let seen: Vec<(usize, &Histogram<u64>)> = hists
        .iter()
        .enumerate()
        .filter(|(_, h)| !h.is_empty())
        .collect();
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let ws = seen
        .iter()
        .map(|&(i, h)| Window {
            t_s: from_s + i as f64 * window_s,
            requests: h.len(),
            p50_ms: ms(h, 0.5),
            p99_ms: ms(h, 0.99),
            max_ms: h.max() as f64 / 1000.0,
        })
        .collect();
    if seen.is_empty() {
        return Ok((ws, 0.0, 0.0, 0));
    }
    let q = ((compare_s / window_s).round() as usize)
        .min(seen.len() / 4)
        .max(1);
    let merged = |part: &[(usize, &Histogram<u64>)]| -> Result<f64, String> {
        let mut m = empty_hist();
        for (_, h) in part {
            m.add(*h).map_err(|e| format!("{e:?}"))?;
        }
        Ok(ms(&m, 0.99))
    };
    let first = merged(&seen[..q])?;
    let last = merged(&seen[seen.len() - q..])?;
    Ok((ws, first, last, q))
}
