//! A soak judged: nothing lost, errors within budget, every node's RSS
//! and descriptors flat over the second half, flushes and compactions
//! seen, the p99 of the last ten minutes against the first ten's, no
//! stall over 100 ms; and `soak.md`, the figures and the criteria. Owns
//! the criteria; must not compute the trends (`trend`).

use serde::Serialize;

use super::{NodeTrend, Soak, REST_LEVEL_BAND_MIB};

#[derive(Clone, Debug, Serialize)]
pub struct Criterion {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// RSS may rise this much over the second half (or 10 % of the node's
/// mean RSS there, if more) and still count as flat: a memtable filling
/// and the block cache warming move it by tens of MiB without a leak.
pub const RSS_RISE_MIB: f64 = 32.0;
/// Open descriptors may rise this many over the second half (a few client
/// or peer connections more at the end is not a leak).
pub const FDS_RISE: f64 = 8.0;
/// The last ten minutes' p99 may be this many times the first ten's, plus
/// [`P99_FLOOR_MS`], and count as without drift.
pub const P99_DRIFT: f64 = 1.5;
pub const P99_FLOOR_MS: f64 = 1.0;

/// The span compared at each end of the run for drift (or a quarter of the
/// run, if shorter), seconds.
pub const COMPARED_S: f64 = 600.0;
/// No window's p99, and no second of the engine holding writes back, may
/// pass this (a stall, as flushes landing together made one).
pub const STALL_MS: f64 = 100.0;

/// The criteria of a soak, from its figures.
pub fn judge(s: &Soak, max_error_pct: f64) -> Vec<Criterion> {
    let mut out = Vec::new();
    let mut c = |name: &str, passed: bool, detail: String| {
        out.push(Criterion {
            name: name.into(),
            passed,
            detail,
        })
    };
    match &s.check {
        Some(k) => c(
            "nothing lost",
            k.passed,
            format!(
                "{} lost, {} stale, {} impossible of {} acknowledged writes and {} checked reads",
                k.lost, k.stale, k.impossible, k.writes_acknowledged, k.reads_checked
            ),
        ),
        None => c("nothing lost", false, "the checker did not run".into()),
    }
    c(
        "errors within budget",
        s.error_pct <= max_error_pct,
        format!(
            "{} errors of {} requests ({:.3}%; budget {max_error_pct}%)",
            s.errors, s.requests, s.error_pct
        ),
    );
    for n in &s.nodes {
        let allowed = RSS_RISE_MIB.max(0.1 * n.rss_half_mean_mib);
        // What the block cache and the memtables hold is bounded by the
        // node's settings: the rest must be flat. A node that does not say
        // what they hold is judged on its whole RSS.
        let (judged, what) = match (n.other_rise_mib, n.other_slope_mib_per_hour) {
            (Some(r), Some(sl)) => (
                r,
                format!("RSS less block cache and memtables {r:+.1} MiB fitted over the second half ({sl:+.1} MiB/h; allowed {allowed:.0} MiB); the RSS itself {:+.1} MiB", n.rss_rise_mib),
            ),
            _ => (
                n.rss_rise_mib,
                format!("{:+.1} MiB fitted over the second half ({:+.1} MiB/h; allowed {allowed:.0} MiB)", n.rss_rise_mib, n.rss_slope_mib_per_hour),
            ),
        };
        c(
            &format!("RSS flat on {}", n.url),
            judged <= allowed,
            format!(
                "{what}, {:.0} → {:.0} MiB, max {:.0}, level by {}{}{}",
                n.rss_first_mib,
                n.rss_last_mib,
                n.rss_max_mib,
                n.level_by_s
                    .map_or("never".to_string(), |t| format!("{t:.0} s")),
                held(n),
                n.anon_slope_mib_per_hour
                    .map_or(String::new(), |a| format!("; heap alone {a:+.1} MiB/h"))
            ),
        );
        c(
            &format!("open files flat on {}", n.url),
            n.fds_rise <= FDS_RISE,
            format!(
                "own descriptors {:+.1} fitted over the second half ({:+.1}/h; allowed {FDS_RISE}), {:.0}–{:.0}; client connections {:.0}–{:.0}",
                n.fds_rise, n.fds_slope_per_hour, n.fds_min, n.fds_max, n.connections_min, n.connections_max
            ),
        );
        c(
            &format!("flushes and compactions ran on {}", n.url),
            n.flushes > 0.0 && n.compactions > 0.0,
            format!(
                "{:.0} flushes, {:.0} compactions, {:.0} write stalls",
                n.flushes, n.compactions, n.stalls
            ),
        );
    }
    let allowed = P99_DRIFT * s.p99_first_ms + P99_FLOOR_MS;
    c(
        "p99 without drift",
        s.p99_last_ms <= allowed,
        format!(
            "last {:.0} s {:.2} ms against first {:.0} s {:.2} ms (allowed {allowed:.2}); {:+.2} ms/h fitted over {} windows",
            s.compared_s,
            s.p99_last_ms,
            s.compared_s,
            s.p99_first_ms,
            s.p99_slope_ms_per_hour,
            s.windows.len()
        ),
    );
    let worst = s
        .windows
        .iter()
        .max_by(|a, b| a.p99_ms.total_cmp(&b.p99_ms));
    let stalled = s.nodes.iter().map(|n| n.stall_max_ms).fold(0.0, f64::max);
    c(
        "no stall over 100 ms",
        worst.is_none_or(|w| w.p99_ms <= STALL_MS) && stalled <= STALL_MS,
        format!(
            "worst window p99 {} ; engine held writes back at most {stalled:.0} ms in a second; latest thread wake-up {:.0} ms (not judged)",
            worst.map_or("none".into(), |w| format!("{:.2} ms at {:.0} s", w.p99_ms, w.t_s)),
            s.nodes.iter().map(|n| n.pause_max_ms).fold(0.0, f64::max)
        ),
    );
    out
}

/// `soak.md`: the figures and the criteria.
pub fn markdown(s: &Soak) -> String {
    let mut m = String::from("# Soak\n\n");
    m += &format!(
        "{:.0} req/s{} for {:.0} s: {} requests, {} errors ({:.3}%).\n\n",
        s.rate,
        s.breaking_point.map_or(String::new(), |bp| format!(
            " ({:.0}% of the breaking point, {bp:.0} req/s)",
            100.0 * s.rate / bp
        )),
        s.duration_s,
        s.requests,
        s.errors,
        s.error_pct
    );
    m += &format!(
        "Verdict: **{}**\n\n| criterion | | figures |\n| --- | --- | --- |\n",
        if s.passed { "PASSED" } else { "FAILED" }
    );
    for c in &s.criteria {
        m += &format!(
            "| {} | {} | {} |\n",
            c.name,
            if c.passed { "ok" } else { "FAILED" },
            c.detail
        );
    }
    m += "\n| node | RSS first → last (MiB) | level by | of it at the end: heap, cache, memtables (MiB) | RSS slope, 2nd half (MiB/h) | own fds min–max | own fds slope (/h) | client connections | flushes | compactions | stalls |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    let mib = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.0}"));
    for n in &s.nodes {
        m += &format!(
            "| {} | {:.0} → {:.0} | {} | {}, {}, {} | {:+.1} | {:.0}–{:.0} | {:+.1} | {:.0}–{:.0} | {:.0} | {:.0} | {:.0} |\n",
            n.url,
            n.rss_first_mib,
            n.rss_last_mib,
            n.level_by_s.map_or("never".to_string(), |t| format!("{:.0} s", t))
                + &n.other_level_by_s.map_or(String::new(), |t| format!(" ({t:.0} s less cache and memtables)")),
            mib(n.anon_last_mib),
            mib(n.cache_last_mib),
            mib(n.memtables_last_mib),
            n.rss_slope_mib_per_hour,
            n.fds_min,
            n.fds_max,
            n.fds_slope_per_hour,
            n.connections_min,
            n.connections_max,
            n.flushes,
            n.compactions,
            n.stalls
        );
    }
    m += "\n| window start (s) | requests | p50 (ms) | p99 (ms) | max (ms) |\n| ---: | ---: | ---: | ---: | ---: |\n";
    for w in &s.windows {
        m += &format!(
            "| {:.0} | {} | {:.2} | {:.2} | {:.1} |\n",
            w.t_s, w.requests, w.p50_ms, w.p99_ms, w.max_ms
        );
    }
    m += "\nCharts: soak-rss.svg, soak-fds.svg, soak-p99.svg; the load's own report is in report/.\n";
    m
}

/// Of a node's RSS: when the part judged levelled off, and the most the
/// block cache and the memtables held (bounded by the node's settings).
fn held(n: &NodeTrend) -> String {
    let mut out = String::new();
    if let Some(t) = n.other_level_by_s {
        out += &format!(
            " (less cache and memtables by {t:.0} s, within {REST_LEVEL_BAND_MIB:.0} MiB or a tenth)"
        );
    }
    if let (Some(c), Some(m)) = (n.cache_max_mib, n.memtables_max_mib) {
        out += &format!("; the cache held at most {c:.0} MiB, the memtables {m:.0}");
    }
    out
}
