//! A trial that failed its objective on errors, not latency: the failed
//! answers' status codes, what the first of them said and which node
//! gave them come first, as the slowest requests' stages do for latency.
//! Owns reading the failures; must not weigh latency.

use super::causes::name as cause_name;
use super::readings;
use super::Verdict;
use crate::experiment::slo::fmt_num;
use crate::report::model::{resource, RankedCause, ResourceReading, Trial};

/// Whether the objective failed on errors alone (a shortfall of the
/// achieved rate may come with them; a latency bound did not fail).
pub fn on_errors(why: &[String]) -> bool {
    why.iter().any(|w| w.starts_with("errors"))
        && why
            .iter()
            .all(|w| w.starts_with("errors") || w.starts_with("achieved"))
}

/// What a node's refusals (503: no place in service, or waited too long
/// for one) stood in front of: the work behind admission, when a reading
/// of it crossed its threshold on that node.
fn behind<'a>(rs: &'a [ResourceReading], node: Option<&str>) -> Option<&'a ResourceReading> {
    super::causes::admission::BEHIND.iter().find_map(|w| {
        rs.iter()
            .find(|r| r.crossed && r.resource == *w && r.node.as_deref() == node)
    })
}

/// A node's CPU reading when its threads were starved of CPU time beside
/// the generator's (`places::starved`; the refusals themselves are the
/// wait that mattered), though its cores were not all busy: a neighbour
/// taking them in turns leaves requests unread until they are refused.
fn starved_cpu<'a>(
    t: &Trial,
    rs: &'a [ResourceReading],
    node: &str,
) -> Option<(&'a ResourceReading, String)> {
    let ns = super::places::index(node).and_then(|i| readings::node_starvation(t, i))?;
    let gs = readings::generator_starvation(t).unwrap_or_default();
    if !super::places::starved(&ns, &gs, 0.0) {
        return None;
    }
    let r = rs
        .iter()
        .find(|r| r.resource == resource::CPU && r.node.as_deref() == Some(node))?;
    let why = format!(
        "{}; its threads waited for a CPU {:.0}% of the time they were ready to run, the generator's {:.0}%: short of CPU time though its cores were not all busy",
        r.quote,
        ns.share * 100.0,
        gs.share * 100.0
    );
    Some((r, why))
}

/// The verdict from the failures of `t`, with its readings `rs`; `head`
/// opens its text.
pub fn judge(t: &Trial, rs: &[ResourceReading], head: String) -> Verdict {
    let answered: u64 = t.failed_statuses.values().sum();
    let unanswered = t.errors.saturating_sub(answered + t.dropped_sends);
    let (code, n) = t
        .failed_statuses
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(c, n)| (Some(*c), *n))
        .unwrap_or((None, 0));
    // The largest kind of failure: an answer's status, no answer, or a
    // send the generator dropped.
    let (cause, what, next) = if t.dropped_sends > n.max(unanswered) {
        (
            resource::GENERATOR,
            format!("{} sends the generator dropped, never sent (not started within --drop-after of their time)", t.dropped_sends),
            "the generator could not keep the schedule: more --threads, a higher --max-connections, or another machine",
        )
    } else if unanswered > n {
        (
            "unreachable",
            format!("{unanswered} requests with no answer at all (refused, reset or timed out connections)"),
            "find why the node did not answer: it may have stopped, restarted or run out of connections (`strata cluster status`, its log)",
        )
    } else {
        let c = code.unwrap_or(0);
        let (cause, next) = match c {
            503 => (resource::ADMISSION, "the node refused work it had no place for: raise `--max-in-service`, try `--admission adaptive`, or offer less"),
            504 => ("replicas", "too few replicas answered in time: see which peers were down or slow (`strata cluster status`), or ask a smaller `ack`"),
            401 | 403 => ("credentials", "give the lab a token the nodes accept (docs/lab.md, \"Credentials\")"),
            507 => ("disk-full", "free space on the node's disk or give it a larger one"),
            400..=499 => ("errors", "the node would not take the requests as sent (413: a value over its limit; 400: a bad --ack or --from): see what the first failure said"),
            _ => ("errors", "read the node's log around the failures"),
        };
        (cause, format!("{n} answers {c}"), next)
    };
    let node = busiest_node(t);
    // Refusals are a queue's overflow: the work behind it, if it crossed.
    let under = (cause == resource::ADMISSION)
        .then(|| {
            let n = node.as_ref().map(|(n, _)| n.as_str());
            behind(rs, n)
                .map(|r| (r, r.quote.clone()))
                .or_else(|| starved_cpu(t, rs, n?))
        })
        .flatten();
    let (cause, next) = match &under {
        Some((r, _)) => (cause_name(&r.resource), "the refusals are the overflow of what admission stood in front of: see that resource's remedy (`strata sweep`'s verdict for it), or give the node more room there"),
        None => (cause, next),
    };
    let what = match &under {
        Some((r, why)) => format!(
            "{what}, refused by admission while behind it {} {} ({why})",
            r.resource,
            r.node.as_deref().unwrap_or(""),
        ),
        None => what,
    };
    let codes: Vec<String> = t
        .failed_statuses
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    let text = format!(
        "{head} Verdict: the objective failed on errors, not latency: {} of {} requests ({}%) failed; the most: {what}{}. Failed answers by status: {}; with no answer: {unanswered}; dropped: {}. The first failure said: {}. Next: {next}.",
        t.errors,
        t.requests,
        fmt_num(t.error_pct),
        node.as_ref()
            .map(|(n, e)| format!(", {e} of the failures from {n}"))
            .unwrap_or_default(),
        if codes.is_empty() { "none".into() } else { codes.join(", ") },
        t.dropped_sends,
        t.first_failure.as_deref().unwrap_or("nothing recorded"),
    );
    let node = node.map(|(n, _)| n);
    let mut ranking = vec![RankedCause {
        cause: cause.to_string(),
        node: node.clone(),
        share: None,
        reading: None,
        quote: t.first_failure.clone(),
    }];
    let mut over: Vec<&ResourceReading> = rs.iter().filter(|r| r.crossed).collect();
    over.sort_by(|a, b| b.ratio().total_cmp(&a.ratio()));
    for r in over {
        let c = cause_name(&r.resource).to_string();
        if !ranking.iter().any(|x| x.cause == c && x.node == r.node) {
            ranking.push(RankedCause {
                cause: c,
                node: r.node.clone(),
                share: None,
                reading: Some(r.ratio()),
                quote: Some(r.quote.clone()),
            });
        }
    }
    Verdict {
        cause: cause.into(),
        node,
        text,
        trial_rate: t.offered_rate,
        ranking,
        host_moved: Vec::new(),
        range: None,
    }
}

/// The node with the most failures, and how many.
fn busiest_node(t: &Trial) -> Option<(String, u64)> {
    t.per_node
        .iter()
        .enumerate()
        .filter(|(_, n)| n.errors > 0)
        .max_by_key(|(_, n)| n.errors)
        .map(|(i, n)| (format!("node-{}", i + 1), n.errors))
}
