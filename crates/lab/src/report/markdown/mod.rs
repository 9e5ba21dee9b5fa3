//! The words of a report: its header facts, trial table, per-operation
//! table, per-node table (several nodes), faults (table and a sentence
//! each), the consistency check, notes and result, as plain cells and
//! sentences, and their rendering as Markdown (`report.md`). The HTML page
//! reuses the same cells and sentences so both say the same thing. Must
//! not draw charts or touch files. `faults` holds the words for faults and
//! the consistency check.

use super::model::{Report, RunKind, Trial};

mod faults;
pub use faults::{check_headline, check_table, fault_sentences, fault_table, FAULT_INTRO};

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

pub use crate::units::group;

pub(crate) fn fmt_pct(p: f64) -> String {
    if p > 0.0 && p < 0.01 {
        format!("{p:.3}%")
    } else {
        format!("{p:.2}%")
    }
}

pub(crate) fn fmt_opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| MISSING.into())
}

fn fmt_cores(c: f64) -> String {
    format!("{c:.2} cores")
}

/// Seconds on the report's time axis, or a duration.
pub fn fmt_s(s: f64) -> String {
    format!("{s:.1} s")
}

/// What the rest of the machine used in a trial: its busy cores less the
/// nodes' and the generator's (when the nodes run on it and their CPU was
/// sampled).
pub fn other_cores(t: &Trial) -> Option<f64> {
    let m = t.machine_cpu_cores?;
    let nodes = t.server_cpu_cores?;
    Some((m - nodes - t.generator_cpu_cores.unwrap_or(0.0)).max(0.0))
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
    let gen = r.trials.iter().any(|t| t.generator_cpu_cores.is_some());
    let other = r.trials.iter().any(|t| t.machine_cpu_cores.is_some());
    let conns = r.trials.iter().any(|t| t.connections_opened.is_some());
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
    for (on, name) in [
        (gen, "generator CPU"),
        (other, "other CPU"),
        (conns, "connections"),
        (keys, "distinct keys"),
    ] {
        if on {
            header.push(name.into());
        }
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
                fmt_opt(t.server_cpu_cores, fmt_cores),
                fmt_opt(t.server_rss_bytes, |b| {
                    format!("{:.0} MiB", b / (1024.0 * 1024.0))
                }),
            ];
            if gen {
                row.push(fmt_opt(t.generator_cpu_cores, fmt_cores));
            }
            if other {
                row.push(fmt_opt(other_cores(t), fmt_cores));
            }
            if conns {
                row.push(
                    t.connections_opened
                        .map(group)
                        .unwrap_or_else(|| MISSING.into()),
                );
            }
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

/// The verdict's ranking as a table (report.json's `ranking`, the
/// figures its words give), or None without one.
pub fn ranking_table(r: &Report) -> Option<Table> {
    if r.ranking.is_empty() {
        return None;
    }
    let header = [
        "rank",
        "cause",
        "node",
        "share of the slowest time",
        "its reading, of its threshold",
        "the reading",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let dash = || "–".to_string();
    let rows = r
        .ranking
        .iter()
        .enumerate()
        .map(|(i, c)| {
            vec![
                (i + 1).to_string(),
                c.cause.clone(),
                c.node.clone().unwrap_or_else(dash),
                c.share_words().unwrap_or_else(dash),
                c.reading_words().unwrap_or_else(dash),
                c.quote.clone().unwrap_or_else(dash),
            ]
        })
        .collect();
    Some(Table { header, rows })
}

/// The model's stages at the failing rate beside the sweep's, when its
/// prediction was off by more than a fifth.
pub fn model_table(r: &Report) -> Option<Table> {
    let m = r.model_check.as_ref().filter(|m| !m.stages.is_empty())?;
    let header = ["stage", "what", "the model", "the sweep"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows = m
        .stages
        .iter()
        .map(|c| {
            vec![
                c.stage.clone(),
                c.what.clone(),
                crate::units::fmt_num(c.predicted),
                c.measured
                    .map(crate::units::fmt_num)
                    .unwrap_or_else(|| "–".into()),
            ]
        })
        .collect();
    Some(Table { header, rows })
}

/// What the model table shows.
pub const MODEL_INTRO: &str = "The capacity model, fitted from the trials below half the breaking point, run at the failing rate: each stage beside what the sweep measured there, the one the model had most wrong first.";

/// What the ranking table shows.
pub const RANKING_INTRO: &str = "Every cause the verdict weighed, in its order (its cause first): each one's share of the slowest requests' time (not counting the wait for a free connection) and its reading against its threshold, the same figures as the verdict's words and the ranked-causes chart.";

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
        if !t.workers.is_empty() {
            let each: Vec<String> = t
                .workers
                .iter()
                .map(|w| {
                    format!(
                        "{} sent {} ({} late by more than 1 ms, {} dropped; {} cores{})",
                        w.url,
                        group(w.requests),
                        group(w.late_sends),
                        group(w.dropped_sends),
                        fmt_cores(w.cpu_cores),
                        w.run_queue_share
                            .map(|q| format!(
                                ", waited for a CPU {:.0}% of its runnable time",
                                q * 100.0
                            ))
                            .unwrap_or_default()
                    )
                })
                .collect();
            out.push(format!(
                "Trial {n} ({}): split among {} workers, their latencies merged: {}.",
                offered(t),
                t.workers.len(),
                each.join("; ")
            ));
        }
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
        if t.dropped_sends > 0 {
            out.push(format!(
                "Trial {n} ({}): {} sends dropped (could not start within --drop-after of their \
                 intended time), counted as errors.",
                offered(t),
                group(t.dropped_sends),
            ));
        }
        if t.unfinished > 0 {
            out.push(format!(
                "Trial {n} ({}): {} requests still unanswered after the end were abandoned, \
                 counted as errors.",
                offered(t),
                group(t.unfinished),
            ));
        }
        if t.errors > 0 {
            let what = match (t.dropped_sends > 0, t.unfinished > 0) {
                (false, false) => "connection errors and failed answers",
                (true, false) => "connection errors, failed answers and dropped sends",
                (false, true) => "connection errors, failed answers and abandoned requests",
                (true, true) => {
                    "connection errors, failed answers, dropped sends and abandoned requests"
                }
            };
            // The failed answers by status (401 and 403: the node refused
            // the run's credentials), as the per-operation table times
            // them apart: 5xx, 401/403, other 4xx.
            let codes: Vec<String> = t
                .failed_statuses
                .iter()
                .map(|(c, n)| format!("{c}: {}", group(*n)))
                .collect();
            let what = if codes.is_empty() {
                what.to_string()
            } else {
                format!("{what}; failed answers by status: {}", codes.join(", "))
            };
            out.push(format!(
                "Trial {n} ({}): {} errors ({what}), {} of requests.",
                offered(t),
                group(t.errors),
                fmt_pct(t.error_pct),
            ));
        }
    }
    out
}

/// A load run's share of a run cut over several generators, and its start
/// against the instant asked for.
pub fn share_words(s: &crate::report::model::ShareSummary) -> String {
    let mut w = if s.segment == "1/1" {
        "the whole run".to_string()
    } else {
        format!(
            "segment {} of the run (its share of the rate, the connections and the new keys)",
            s.segment
        )
    };
    w += &format!("; first send due {}", s.started);
    match (&s.start_at, s.late_ms) {
        (Some(at), Some(l)) if l > 0.0 => {
            w += &format!(", {l:.1} ms after --start-at {at} (it reached that instant late)")
        }
        (Some(at), _) => w += &format!(", as --start-at asked ({at})"),
        _ => {}
    }
    w
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
    if let Some(s) = &r.share {
        out.push(("Share", share_words(s)));
    }
    if !r.trials.is_empty() {
        let total: f64 = r.trials.iter().map(|t| t.duration_s).sum();
        let requests: u64 = r.trials.iter().map(|t| t.requests).sum();
        out.push((
            "Measured",
            format!("{} requests in {total:.1} s", group(requests)),
        ));
    }
    if let (RunKind::Load, [t]) = (r.kind, r.trials.as_slice()) {
        let mut gen = Vec::new();
        if let Some(c) = t.connections_opened {
            gen.push(format!("{} connections opened", group(c)));
        }
        if let Some(c) = t.generator_cpu_cores {
            gen.push(format!("{} used", fmt_cores(c)));
        }
        if !gen.is_empty() {
            out.push(("Generator", gen.join(", ")));
        }
        if let Some(m) = t.machine_cpu_cores {
            out.push(("Machine CPU", cpu_split(t, m)));
        }
    }
    out
}

/// How a machine's busy cores `m` were split between the nodes, the
/// generator and other processes.
fn cpu_split(t: &Trial, m: f64) -> String {
    let mut parts = Vec::new();
    if let Some(n) = t.server_cpu_cores {
        parts.push(format!("nodes {n:.2}"));
    }
    if let Some(g) = t.generator_cpu_cores {
        parts.push(format!("generator {g:.2}"));
    }
    match other_cores(t) {
        Some(o) => parts.push(format!("other processes {o:.2}")),
        None => parts.push("the rest not told apart (the nodes' CPU was not sampled)".into()),
    }
    format!("{} busy: {}", fmt_cores(m), parts.join(", "))
}

/// The sentences under the trial table's title: what its columns mean.
pub fn trials_intro(r: &Report) -> String {
    let mut s = String::from(
        "Latency is measured from each request's intended send time (open loop) or from its \
         actual send (closed loop). Server CPU is the mean over the trial, server RSS the \
         maximum.",
    );
    if r.trials.iter().any(|t| t.generator_cpu_cores.is_some()) {
        s += " Generator CPU is the cores the load generator itself used.";
    }
    if r.trials.iter().any(|t| t.machine_cpu_cores.is_some()) {
        s += " Other CPU is what the rest of the machine used: its busy cores less the \
              nodes' and the generator's.";
    }
    if r.trials.iter().any(|t| t.connections_opened.is_some()) {
        s += " Connections are those the generator opened.";
    }
    s
}

/// The result in plain words: the breaking point and the verdict.
pub fn result(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    match (r.kind, r.breaking_point, &r.slo) {
        (_, Some(bp), slo) => out.push(format!(
            "Breaking point: {} is the highest offered rate that met the SLO{}{}.",
            fmt_rate(bp),
            slo.as_ref().map(|s| format!(" ({s})")).unwrap_or_default(),
            r.breaking_range
                .map(|(lo, hi, n)| format!(
                    "; over {n} repeats of the deciding rates, {}–{}",
                    fmt_rate(lo),
                    fmt_rate(hi)
                ))
                .unwrap_or_default()
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
    if let Some(c) = &r.check {
        out.push(check_headline(c));
    }
    let said = r
        .verdict
        .as_ref()
        .is_some_and(|v| v.contains("could not be seen"));
    if !r.unseen.is_empty() && !said {
        out.push(format!(
            "The servers could not be seen (their figures show -): {}.",
            r.unseen.join("; ")
        ));
    }
    if let Some(v) = &r.verdict {
        out.push(format!("Verdict: {v}"));
    }
    if let Some(m) = &r.model_check {
        out.push(m.words());
    }
    out
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
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

/// A code fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

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
    s += &trials_intro(r);
    s += "\n\n";
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
    s += &super::threads::markdown(r);
    if let Some(t) = fault_table(r) {
        s += "\n## Faults\n\n";
        s += FAULT_INTRO;
        s += "\n\n";
        s += &(md_table(&t) + "\n");
        for f in fault_sentences(r) {
            s += &format!("- {f}\n");
        }
    }
    if let Some(c) = &r.check {
        s += "\n## Consistency check\n\n";
        s += &check_headline(c);
        s += "\n\n";
        s += &md_table(&check_table(c));
        if !c.method.trim().is_empty() {
            s += &format!("\nMethod: {}\n", c.method.trim());
        }
        if !c.text.trim().is_empty() {
            let fence = fence(&c.text);
            s += &format!(
                "\nThe checker's report:\n\n{fence}text\n{}\n{fence}\n",
                c.text.trim_end()
            );
        }
        if let Some(l) = &c.linear {
            s += &super::linear::markdown(l);
        }
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
    if let Some(t) = ranking_table(r) {
        s += "\n### The causes ranked\n\n";
        s += RANKING_INTRO;
        s += "\n\n";
        s += &md_table(&t);
    }
    if let Some(t) = model_table(r) {
        s += "\n### The model against the sweep\n\n";
        s += MODEL_INTRO;
        s += "\n\n";
        s += &md_table(&t);
    }
    s
}
