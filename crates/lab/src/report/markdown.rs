//! The words of a report: its header facts, trial table, per-operation
//! table, per-node table (several nodes), notes and result, as plain cells and sentences, and their
//! rendering as Markdown (`report.md`). The HTML page reuses the same cells
//! and sentences so both say the same thing. Must not draw charts or touch
//! files.

use super::model::{Report, RunKind, Trial};

/// A table as text cells; renderers escape them for their format.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// "–" for a value that was not measured.
pub const MISSING: &str = "–";

/// A latency in milliseconds with about three significant digits; seconds
/// from 1 s on.
pub fn fmt_ms(ms: f64) -> String {
    if !ms.is_finite() {
        return MISSING.into();
    }
    if ms >= 1000.0 {
        let s = ms / 1000.0;
        let digits = if s >= 100.0 {
            0
        } else if s >= 10.0 {
            1
        } else {
            2
        };
        return format!("{s:.digits$} s");
    }
    let digits = if ms >= 100.0 {
        0
    } else if ms >= 10.0 {
        1
    } else if ms >= 1.0 {
        2
    } else {
        3
    };
    format!("{ms:.digits$} ms")
}

/// A rate in requests per second, thousands separated.
pub fn fmt_rate(r: f64) -> String {
    format!("{}/s", group(r.round() as u64))
}

/// An integer with thousands separated by commas.
pub fn group(n: u64) -> String {
    let digits = n.to_string().into_bytes();
    let groups: Vec<&str> = digits
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).expect("ASCII digits"))
        .collect();
    groups.join(",")
}

fn fmt_pct(p: f64) -> String {
    if p > 0.0 && p < 0.01 {
        format!("{p:.3}%")
    } else {
        format!("{p:.2}%")
    }
}

fn fmt_opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| MISSING.into())
}

/// What was offered in a trial: a rate, or a number of closed-loop clients.
pub fn offered(t: &Trial) -> String {
    match (t.offered_rate, t.clients) {
        (Some(r), _) => fmt_rate(r),
        (None, Some(c)) => format!("{c} clients"),
        (None, None) => MISSING.into(),
    }
}

/// The trial table: one row per trial, like a lab notebook's experiment
/// table.
pub fn trial_table(r: &Report) -> Table {
    let keys = r.trials.iter().any(|t| t.distinct_keys.is_some());
    let mut header: Vec<String> = [
        "trial",
        "offered",
        "achieved",
        "p50",
        "p95",
        "p99",
        "p99.9",
        "max",
        "errors",
        "server CPU",
        "server RSS",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if keys {
        header.push("distinct keys".into());
    }
    header.push("SLO met".into());
    let rows = r
        .trials
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let l = &t.latency;
            let mut row = vec![
                (i + 1).to_string(),
                offered(t),
                fmt_rate(t.achieved_rate),
                fmt_ms(l.p50_ms),
                fmt_ms(l.p95_ms),
                fmt_ms(l.p99_ms),
                fmt_ms(l.p999_ms),
                fmt_ms(l.max_ms),
                fmt_pct(t.error_pct),
                fmt_opt(t.server_cpu_cores, |c| format!("{c:.2} cores")),
                fmt_opt(t.server_rss_bytes, |b| {
                    format!("{:.0} MiB", b / (1024.0 * 1024.0))
                }),
            ];
            if keys {
                row.push(t.distinct_keys.map(group).unwrap_or_else(|| MISSING.into()));
            }
            row.push(
                match t.meets_slo {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => MISSING,
                }
                .into(),
            );
            row
        })
        .collect();
    Table { header, rows }
}

/// The per-operation table, or None when no trial split its operations.
pub fn op_table(r: &Report) -> Option<Table> {
    if r.trials.iter().all(|t| t.per_op.is_empty()) {
        return None;
    }
    let header = [
        "trial", "offered", "op", "requests", "errors", "p50", "p95", "p99", "p99.9", "max",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rows = Vec::new();
    for (i, t) in r.trials.iter().enumerate() {
        for o in &t.per_op {
            let l = &o.latency;
            rows.push(vec![
                (i + 1).to_string(),
                offered(t),
                o.op.clone(),
                group(o.requests),
                group(o.errors),
                fmt_ms(l.p50_ms),
                fmt_ms(l.p95_ms),
                fmt_ms(l.p99_ms),
                fmt_ms(l.p999_ms),
                fmt_ms(l.max_ms),
            ]);
        }
    }
    Some(Table { header, rows })
}

/// The per-node table, or None when no trial ran against several nodes:
/// each node's connections, requests (and share), errors, CPU and RSS.
pub fn node_table(r: &Report) -> Option<Table> {
    if r.trials.iter().all(|t| t.per_node.len() <= 1) {
        return None;
    }
    let header = [
        "trial",
        "offered",
        "node",
        "connections",
        "requests",
        "share",
        "errors",
        "server CPU",
        "server RSS",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rows = Vec::new();
    for (i, t) in r.trials.iter().enumerate() {
        let total = t.per_node.iter().map(|n| n.requests).sum::<u64>().max(1);
        for n in &t.per_node {
            rows.push(vec![
                (i + 1).to_string(),
                offered(t),
                n.url.clone(),
                group(n.connections),
                group(n.requests),
                format!("{:.1}%", 100.0 * n.requests as f64 / total as f64),
                group(n.errors),
                fmt_opt(n.server_cpu_cores, |c| format!("{c:.2} cores")),
                fmt_opt(n.server_rss_bytes, |b| {
                    format!("{:.0} MiB", b / (1024.0 * 1024.0))
                }),
            ]);
        }
    }
    Some(Table { header, rows })
}

/// A node with more than this many times its even share of the requests
/// is noted: the spread was uneven.
const SKEW: f64 = 1.5;

/// A generator that sent more than this share of its requests late fell
/// behind its schedule (the same rule as `strata load`'s summary).
const LATE_SHARE: f64 = 0.01;

/// Notes on trials whose numbers need a caveat: a generator that fell
/// behind its schedule, errors.
pub fn notes(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for (i, t) in r.trials.iter().enumerate() {
        let n = i + 1;
        if t.late_sends as f64 > LATE_SHARE * t.requests.max(1) as f64 {
            out.push(format!(
                "Trial {n} ({}): the load generator fell behind its schedule: {} of {} sends \
                 ({:.1}%) left more than 1 ms late, the worst by {}. Latency is still measured \
                 from the intended send times, but the offered load was not what was asked for: \
                 use more connections or spread the load over more machines.",
                offered(t),
                group(t.late_sends),
                group(t.requests),
                100.0 * t.late_sends as f64 / t.requests.max(1) as f64,
                fmt_ms(t.max_lag_ms),
            ));
        }
        let total: u64 = t.per_node.iter().map(|n| n.requests).sum();
        let nodes = t.per_node.len();
        if let Some(n) = t.per_node.iter().max_by_key(|n| n.requests) {
            let share = n.requests as f64 / total.max(1) as f64;
            if nodes > 1 && total > 0 && share > SKEW / nodes as f64 {
                out.push(format!(
                    "Trial {n_} ({}): the spread over the nodes was uneven: {} got {:.1}% of \
                     the requests ({} of {} connections), an even share being {:.1}%. Each \
                     connection draws its node at random (seeded by --seed), so few \
                     connections per node spread unevenly: use more connections.",
                    offered(t),
                    n.url,
                    100.0 * share,
                    n.connections,
                    t.per_node.iter().map(|n| n.connections).sum::<u64>(),
                    100.0 / nodes as f64,
                    n_ = i + 1,
                ));
            }
        }
        if t.errors > 0 {
            out.push(format!(
                "Trial {n} ({}): {} errors (connection errors and 5xx answers), {} of requests.",
                offered(t),
                group(t.errors),
                fmt_pct(t.error_pct),
            ));
        }
    }
    out
}

/// The header facts: label and value.
pub fn facts(r: &Report) -> Vec<(&'static str, String)> {
    let mut out = vec![
        (
            "Kind",
            match r.kind {
                RunKind::Load => "load run".to_string(),
                RunKind::Sweep => format!("sweep of {} trials", r.trials.len()),
            },
        ),
        ("Started", r.started_at.clone()),
        ("Command", r.command.clone()),
        ("Target", r.target.clone()),
        ("Workload", r.workload.clone()),
        ("SLO", r.slo.clone().unwrap_or_else(|| "none".into())),
    ];
    if !r.trials.is_empty() {
        let total: f64 = r.trials.iter().map(|t| t.duration_s).sum();
        let requests: u64 = r.trials.iter().map(|t| t.requests).sum();
        out.push((
            "Measured",
            format!("{} requests in {total:.1} s", group(requests)),
        ));
    }
    out
}

/// The result in plain words: the breaking point and the verdict.
pub fn result(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    match (r.kind, r.breaking_point, &r.slo) {
        (_, Some(bp), slo) => out.push(format!(
            "Breaking point: {} is the highest offered rate that met the SLO{}.",
            fmt_rate(bp),
            slo.as_ref().map(|s| format!(" ({s})")).unwrap_or_default()
        )),
        (RunKind::Sweep, None, Some(slo)) => out.push(format!(
            "Breaking point: none; no offered rate met the SLO ({slo})."
        )),
        _ => {}
    }
    if r.kind == RunKind::Load {
        if let Some(t) = r.trials.first() {
            match t.meets_slo {
                Some(true) => out.push("The run met the SLO.".into()),
                Some(false) => out.push("The run did not meet the SLO.".into()),
                None => {}
            }
        }
    }
    if let Some(v) = &r.verdict {
        out.push(format!("Verdict: {v}"));
    }
    out
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// A Markdown table with its columns padded to one width, so it reads as a
/// table in plain text too.
pub fn md_table(t: &Table) -> String {
    let cells = |row: &[String]| row.iter().map(|c| md_cell(c)).collect::<Vec<_>>();
    let header = cells(&t.header);
    let rows: Vec<Vec<String>> = t.rows.iter().map(|r| cells(r)).collect();
    let mut width: Vec<usize> = header.iter().map(|c| c.chars().count().max(3)).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &[String]| {
        let mut s = String::from("|");
        for (c, w) in row.iter().zip(&width) {
            let pad = w - c.chars().count();
            s += &format!(" {c}{} |", " ".repeat(pad));
        }
        s + "\n"
    };
    let mut s = line(&header);
    s += "|";
    for w in &width {
        s += &format!(" {} |", "-".repeat(*w));
    }
    s += "\n";
    for r in &rows {
        s += &line(r);
    }
    s
}

/// What the per-node table shows.
pub const NODE_INTRO: &str = "Each connection chose its node from its own random stream, seeded \
     by the run's seed and the connection's index. Requests and errors are those counted; \
     server CPU is the node's mean over the trial, server RSS its maximum (the trial table \
     sums them over the nodes).";

/// The whole `report.md`.
pub fn render(r: &Report) -> String {
    let mut s = format!("# {}\n\n", r.title);
    for (k, v) in facts(r) {
        if k == "Command" || k == "Target" {
            s += &format!("- {k}: `{v}`\n");
        } else {
            s += &format!("- {k}: {v}\n");
        }
    }
    s += "\n## Trials\n\n";
    s += "Latency is measured from each request's intended send time (open loop) \
          or from its actual send (closed loop). Server CPU is the mean over the trial, \
          server RSS the maximum.\n\n";
    s += &md_table(&trial_table(r));
    if let Some(t) = op_table(r) {
        s += "\n## Per operation\n\n";
        s += &md_table(&t);
    }
    if let Some(t) = node_table(r) {
        s += "\n## Per node\n\n";
        s += NODE_INTRO;
        s += "\n\n";
        s += &md_table(&t);
    }
    let notes = notes(r);
    if !notes.is_empty() {
        s += "\n## Notes\n\n";
        for n in notes {
            s += &format!("- {n}\n");
        }
    }
    let result = result(r);
    if !result.is_empty() {
        s += "\n## Result\n\n";
        s += &result.join("\n\n");
        s += "\n";
    }
    s
}
