//! The text a load run prints: a wrk2-style summary of one trial, the
//! spread over several nodes, what the cluster's client did. Owns that
//! text; must not measure anything.

use crate::load::driver::Outcome;
use crate::report::model::Trial;

/// A wrk2-style summary of one trial.
pub fn summary(t: &Trial, o: &Outcome) -> String {
    let h = &o.all;
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let mut s = String::new();
    let (how, basis) = match (t.offered_rate, t.clients) {
        (Some(r), _) => (format!("offered {r:.0} req/s"), "intended send time"),
        (_, c) => (
            format!("closed loop, {} clients", c.unwrap_or(0)),
            "each actual send (closed loop: stalls hide here)",
        ),
    };
    s += &format!(
        "  {} requests in {:.2}s: {how}, achieved {:.0} req/s\n",
        o.counted,
        o.elapsed.as_secs_f64(),
        o.achieved_rate()
    );
    s += &format!("  Latency from {basis} (ms):\n");
    for q in [0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 0.99999] {
        s += &format!("    {:>8.3}%  {:>10.3}\n", q * 100.0, ms(q));
    }
    s += &format!("    {:>9}  {:>10.3}\n", "max", h.max() as f64 / 1000.0);
    if o.per_op.len() > 1 {
        s += "  Per operation (ms; failed answers of any operation on their own lines: 5xx, 401/403 the node refused the credentials, other 4xx but 404):\n";
        s += "                           count      p50      p99    p99.9      max  errors\n";
        for p in &t.per_op {
            s += &format!(
                "    {:<18} {:>9} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>7}\n",
                p.op,
                p.requests,
                p.latency.p50_ms,
                p.latency.p99_ms,
                p.latency.p999_ms,
                p.latency.max_ms,
                p.errors
            );
        }
    }
    let codes: Vec<String> = o
        .statuses
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    s += &format!(
        "  Status codes: {}; connection errors: {}{}; errors (5xx, 401/403, other 4xx but 404, none or dropped): {} ({:.3}%)\n",
        codes.join(", "),
        o.conn_errors,
        match (o.unfinished, &o.first_conn_error) {
            (0, None) => String::new(),
            (0, Some(e)) => format!(" (the first: {e})"),
            (n, None) => format!(" ({n} unanswered at the end)"),
            (n, Some(e)) => format!(" ({n} unanswered at the end; the first: {e})"),
        },
        t.errors,
        t.error_pct
    );
    s += &format!(
        "  Schedule: {} sends more than 1 ms late, worst lag {:.3} ms; {} dropped (not started within --drop-after); {} connections opened{}{}\n",
        o.late,
        o.max_lag.as_secs_f64() * 1000.0,
        o.dropped,
        o.connections,
        if o.retired > 0 {
            format!(", {} closed again after the burst that opened them", o.retired)
        } else {
            String::new()
        },
        if (o.late + o.dropped) * 100 > (o.counted + o.dropped).max(1) {
            " (the generator could not keep the schedule: more --threads, a higher --max-connections, another machine, or a lower rate)"
        } else {
            ""
        }
    );
    s += &format!(
        "  Distinct keys touched: {}{}\n",
        o.distinct_keys,
        if o.distinct_exact { "" } else { " (estimate)" }
    );
    if let (Some(cpu), Some(rss)) = (t.server_cpu_cores, t.server_rss_bytes) {
        s += &format!(
            "  Server{}: {cpu:.2} cores of CPU on average, {:.0} MiB resident at most\n",
            if t.per_node.len() > 1 {
                " (all nodes together)"
            } else {
                ""
            },
            rss / (1024.0 * 1024.0)
        );
    }
    if t.per_node.len() > 1 {
        s += &per_node_lines(t);
    }
    if let Some(c) = &t.client {
        s += &client_line(c);
    }
    if !t.workers.is_empty() {
        s += &worker_lines(t);
    }
    s
}

/// One line per worker of a run split among workers: its share, its
/// lateness, its CPU.
pub fn worker_lines(t: &Trial) -> String {
    let width = t.workers.iter().map(|w| w.url.len()).max().unwrap_or(0);
    let mut s = format!(
        "  Workers ({}; their latencies merged above):\n",
        t.workers.len()
    );
    for w in &t.workers {
        s += &format!(
            "    {:<width$}  {:>9} requests  {:>7} late  {:>7} dropped  worst lag {:.3} ms  cpu {:.2}{}{}\n",
            w.url,
            w.requests,
            w.late_sends,
            w.dropped_sends,
            w.max_lag_ms,
            w.cpu_cores,
            w.run_queue_share
                .map(|q| format!("  waited for a CPU {:.0}%", q * 100.0))
                .unwrap_or_default(),
            if w.started_late_ms > 0.0 {
                format!("  started {:.0} ms late", w.started_late_ms)
            } else {
                String::new()
            }
        );
    }
    s
}

/// What the cluster's client did: its retries and why some failures were
/// not retried, its hedges.
pub fn client_line(c: &std::collections::BTreeMap<String, u64>) -> String {
    let g = |k: &str| c.get(k).copied().unwrap_or(0);
    format!(
        "  Client: {} retried on another node ({} not retried: the budget was spent; {} not: a write that may have been applied), {} GETs hedged ({} won by the hedge), {} probes of nodes marked down\n",
        g("retries"),
        g("budget_refused"),
        g("unsafe_to_retry"),
        g("hedges"),
        g("hedge_wins"),
        g("probes")
    )
}

/// The spread over several nodes, one line per node: connections that
/// chose it, its share of the requests, errors, its CPU and memory.
pub fn per_node_lines(t: &Trial) -> String {
    let total = t.per_node.iter().map(|n| n.requests).sum::<u64>().max(1);
    let width = t.per_node.iter().map(|n| n.url.len()).max().unwrap_or(0);
    let mut s =
        String::from("  Per node (the node that answered; conns: the connections homed on it, each chose it from --seed and its index):\n");
    for n in &t.per_node {
        s += &format!(
            "    {:<width$}  {:>4} conns  {:>9} requests ({:>5.1}%)  {:>7} errors",
            n.url,
            n.connections,
            n.requests,
            100.0 * n.requests as f64 / total as f64,
            n.errors,
        );
        if let Some(cpu) = n.server_cpu_cores {
            s += &format!("  cpu {cpu:.2}");
        }
        if let Some(rss) = n.server_rss_bytes {
            s += &format!("  rss {:.0} MiB", rss / (1024.0 * 1024.0));
        }
        s += "\n";
    }
    s
}
