//! The sweep's verdict: why the target broke, decided from where the
//! deciding trial's slowest 1 % of requests spent their time (each
//! answer's `Server-Timing`, `load::slowest`), in this order:
//!
//! 1. the objective failed on errors, not latency: their status codes,
//!    what the first said and which node gave them (`errors`);
//! 2. the slowest requests' time split into places (a node's WAL, its
//!    stalls, admission, its own work, a replica, time in flight, the
//!    generator's lateness) and each place resolved to the cause that
//!    made it slow, busy or not (`causes`, one file per cause, and
//!    `places`): time in flight to the side starved of CPU, a queue to
//!    what drains it;
//! 3. the causes compared by the share of that time they hold: one that
//!    holds half is named on that alone; with several nodes, one node that
//!    holds half and alone has a reading over its threshold; else the
//!    largest if it holds a quarter and its own reading crossed;
//! 4. else "cannot tell", with what each piece showed.
//!
//! Readings against thresholds (each cause's file, on `readings`'
//! common parts) say why a place was slow and corroborate; they never
//! outrank the requests' own time. A trial that collapsed (most requests
//! failing or queued for seconds) is read through the trial before it.
//! Every cause weighed is ranked (`rank`), its own first. Whether the
//! host moved under the sweep is `host`'s finding, said beside the cause
//! with the range widened. Each cause in words is its file's
//! (`causes::words`); `replay` judges a sweep's report again, the verdict's only
//! door from a report. Owns the weighing of evidence; must not run load,
//! scrape or format tables.

pub mod causes;
pub mod errors;
pub mod host;
pub mod places;
pub mod rank;
pub mod readings;
pub mod replay;

use crate::experiment::slo::fmt_num;
use crate::report::model::{resource, HostMove, RankedCause, ResourceReading, Slowest, Trial};
use causes::{name as cause_name, words};
use places::{pct, Cause, Context, Place};
use rank::{key_words, rank, ranking_words};
pub use readings::Machine;

/// What the sweep learned, for the verdict.
pub struct Evidence<'a> {
    /// Every trial, in the order run.
    pub trials: &'a [Trial],
    /// The trial that decided the breaking point (at the lowest failing
    /// rate), with why it failed.
    pub deciding: Option<(&'a Trial, &'a [String])>,
    /// Highest offered rate that met the SLO, if any did, and its range
    /// over repeats (lowest, highest, repeats).
    pub breaking_point: Option<f64>,
    pub range: Option<(f64, f64, u32)>,
    pub machine: Machine,
    /// Nodes whose metrics the lab could not read, and why (`node-N:
    /// GET /metrics answered 403 (…)`): none of their resources was seen.
    pub unseen: &'a [String],
    /// The search stopped at `--max-trials` before it was done.
    pub cut_short: Option<usize>,
}

/// The verdict: the cause, machine-readable, and in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// `fsync`, `stalls`, `pause`, `cpu`, `thread`, `io`, `memory`,
    /// `admission`, `network`, `generator`, `lock`; `unknown` when it cannot tell; `none` when
    /// every trial met the SLO.
    pub cause: String,
    /// The node it happened on, `node-N`.
    pub node: Option<String>,
    pub text: String,
    /// The offered rate of the trial whose slowest requests it read (the
    /// deciding trial's, or, when that one collapsed, the trial it read
    /// instead): the report's slowest-1 % chart shows the same one.
    pub trial_rate: Option<f64>,
    /// Every cause weighed, its own first, then by its share of the
    /// slowest requests' time, then readings over their thresholds that
    /// held none of it (`rank`).
    pub ranking: Vec<RankedCause>,
    /// How the host changed under the sweep (`host`), and the breaking
    /// point's range: the repeats', widened when the host moved.
    pub host_moved: Vec<HostMove>,
    pub range: Option<(f64, f64, u32)>,
}

/// A trial collapsed when this share of its requests failed (percent),
/// or its median waited this long (ms), or this share of its sends found
/// every connection the generator may open held: a queue that never
/// drained, whatever set it off.
pub const COLLAPSE_ERRORS_PCT: f64 = 5.0;
pub const COLLAPSE_P50_MS: f64 = 100.0;
pub const COLLAPSE_CAPPED: f64 = 0.1;

/// Whether the deciding trial collapsed rather than saturated.
fn collapse(t: &Trial) -> Option<String> {
    let capped = t.capped_sends as f64 / t.requests.max(1) as f64;
    (t.error_pct >= COLLAPSE_ERRORS_PCT
        || t.latency.p50_ms >= COLLAPSE_P50_MS
        || capped >= COLLAPSE_CAPPED)
        .then(|| {
        format!(
            "collapsed rather than slowed down (p50 {} ms, {}% errors{}): a queue that did not drain",
            fmt_num(t.latency.p50_ms),
            fmt_num(t.error_pct),
            if t.capped_sends > 0 {
                format!(
                    ", every one of the generator's {} connections held by an unanswered request",
                    t.connections_opened
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "?".into())
                )
            } else {
                String::new()
            }
        )
    })
}

/// The parts of a cause's places in words, the same words merged, largest
/// first: three, then what the rest hold together, so that they add up
/// to the cause's share.
fn parts_words(ps: &[&Place]) -> String {
    let mut merged: Vec<(f64, String)> = Vec::new();
    for (share, words) in ps.iter().flat_map(|p| p.parts.iter()) {
        match merged.iter_mut().find(|(_, w)| w == words) {
            Some((s, _)) => *s += share,
            None => merged.push((*share, words.clone())),
        }
    }
    merged.sort_by(|a, b| b.0.total_cmp(&a.0));
    // Four are said as four; more as three and the rest.
    let keep = if merged.len() <= 4 { 4 } else { 3 };
    let mut shown: Vec<(f64, String)> = merged.iter().take(keep).cloned().collect();
    if merged.len() > keep {
        let rest: f64 = merged.iter().skip(keep).map(|(s, _)| s).sum();
        shown.push((rest, format!("in {} other parts", merged.len() - keep)));
    }
    let whole: Vec<f64> = shown.iter().map(|(s, _)| *s).collect();
    shown
        .iter()
        .zip(percents(&whole))
        .map(|((_, w), p)| format!("{p}% {w}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Shares as whole percents that add up to their sum's rounded percent
/// (the largest remainders rounded up), so a breakdown adds up in words.
pub fn percents(shares: &[f64]) -> Vec<u64> {
    let exact: Vec<f64> = shares.iter().map(|s| s.max(0.0) * 100.0).collect();
    let total = exact.iter().sum::<f64>().round() as u64;
    let mut out: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    let mut short = total.saturating_sub(out.iter().sum());
    for i in order {
        if short == 0 {
            break;
        }
        out[i] += 1;
        short -= 1;
    }
    out
}

/// The top parts of the slowest requests' time, in words.
fn top_parts(s: &Slowest, n: usize) -> String {
    s.parts
        .iter()
        .take(n)
        .map(|p| format!("{:.0}% {}", p.share * 100.0, p.words))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The verdict, saying first when the servers could not be seen: then no
/// resource of theirs was read, and it rests on the answers' own timing.
pub fn verdict(e: &Evidence) -> Verdict {
    let mut v = judge(e);
    if let Some(w) = e.deciding.and_then(|(t, _)| behind(t)) {
        v.text = if v.cause == resource::GENERATOR {
            format!("{} The worker that fell behind: {w}.", v.text.trim_end())
        } else {
            format!(
                "{} One worker fell behind too ({w}): its share of the latencies includes its own lateness.",
                v.text.trim_end()
            )
        };
    }
    v.host_moved = host::moved(e.trials);
    v.range = e.range;
    if !v.host_moved.is_empty() {
        v.range = host::widen(e.trials, e.breaking_point, e.range);
        v.text = format!(
            "{} The host changed under the sweep: {}.{} What this verdict names is one sample of a host that moved.",
            v.text.trim_end(),
            v.host_moved
                .iter()
                .map(|m| m.words.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            v.range
                .map(|(lo, hi, _)| format!(
                    " The breaking point's range is widened to {}–{} req/s.",
                    rate(lo),
                    rate(hi)
                ))
                .unwrap_or_default()
        );
    }
    if let Some(n) = e.cut_short {
        v.text = format!(
            "{} The search was cut short by --max-trials ({n} trials) before it was done: the breaking point is the best so far{}.",
            v.text.trim_end(),
            if v.range.is_none() { ", with no range" } else { "" }
        );
    }
    if !e.unseen.is_empty() && v.cause != "none" {
        v.text = format!(
            "The servers could not be seen: {}. No resource of theirs was read; what follows rests on the answers' Server-Timing alone. {}",
            e.unseen.join("; "),
            v.text.trim_start()
        );
    }
    v
}

/// A worker (`--workers`) is behind when this share of its sends left more
/// than 1 ms late with a connection free, or never left.
pub const WORKER_BEHIND: f64 = 0.01;

/// The worker of trial `t` furthest behind its share of the schedule, in
/// words, when one is behind at all.
fn behind(t: &Trial) -> Option<String> {
    let w = t
        .workers
        .iter()
        .max_by(|a, b| a.behind().total_cmp(&b.behind()))
        .filter(|w| w.behind() >= WORKER_BEHIND)?;
    let mut s = format!(
        "{} sent {} of its {} sends more than 1 ms late with a connection free{}",
        w.url,
        w.generator_late_sends,
        w.requests + w.dropped_sends,
        if w.dropped_sends > 0 {
            format!(" and dropped {}", w.dropped_sends)
        } else {
            String::new()
        }
    );
    if let Some(q) = w.run_queue_share {
        s += &format!(
            "; its threads used {:.2} cores and waited for a CPU {:.0}% of the time they were ready to run",
            w.cpu_cores,
            q * 100.0
        );
    }
    if t.workers.len() > 1 {
        let others = t
            .workers
            .iter()
            .filter(|o| o.url != w.url)
            .map(|o| o.behind())
            .fold(0.0, f64::max);
        s += &format!(" (the others at most {:.1}%)", others * 100.0);
    }
    Some(s)
}

/// A cause that holds this share of the slowest requests' time is named
/// on that alone, busy or not.
pub const HALF: f64 = 0.5;
/// A cause that holds this share is named when a reading of its own
/// crossed its threshold too (two kinds of evidence agreeing).
pub const CONFIRMS: f64 = 0.25;

fn rate(r: f64) -> String {
    let r = r.round() as u64;
    let s = r.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The readings of a trial: as the sweep kept them, or read now.
fn of(t: &Trial, m: Machine) -> Vec<ResourceReading> {
    if t.resources.is_empty() {
        causes::readings(t, m)
    } else {
        t.resources.clone()
    }
}

/// Each weighed cause's resource, node and share, for the ranking.
fn shares<'a>(weighed: &'a [Weighed]) -> Vec<(&'a str, Option<&'a str>, f64)> {
    weighed
        .iter()
        .map(|w| (w.cause.resource.as_str(), w.cause.node.as_deref(), w.share))
        .collect()
}

/// A resolved cause with the places it holds.
struct Weighed<'a> {
    cause: Cause,
    share: f64,
    places: Vec<&'a Place>,
}

/// The places of the slowest requests resolved and summed by cause,
/// largest first, and the share nothing seen explains.
fn weigh<'a>(ps: &'a [Place], ctx: &Context) -> (Vec<Weighed<'a>>, f64) {
    let mut out: Vec<Weighed> = Vec::new();
    let mut unexplained = 0.0;
    for p in ps {
        let Some(c) = causes::resolve(p, ctx) else {
            unexplained += p.share;
            continue;
        };
        match out
            .iter_mut()
            .find(|w| w.cause.resource == c.resource && w.cause.node == c.node)
        {
            Some(w) => {
                w.share += p.share;
                w.places.push(p);
                w.cause.crossed |= c.crossed;
            }
            None => out.push(Weighed {
                cause: c,
                share: p.share,
                places: vec![p],
            }),
        }
    }
    out.sort_by(|a, b| b.share.total_cmp(&a.share));
    (out, unexplained)
}

/// With several nodes, one that holds half the slowest requests' time and
/// has a reading over its threshold that no other node has: the contrast
/// between the nodes names it, however that node's time was split.
fn odd_node(
    ps: &[Place],
    t: &Trial,
    rs: &[ResourceReading],
) -> Option<(String, f64, ResourceReading)> {
    if readings::node_count(t) < 2 {
        return None;
    }
    let mut by: Vec<(String, f64)> = Vec::new();
    for p in ps {
        let Some(n) = &p.node else { continue };
        match by.iter_mut().find(|(x, _)| x == n) {
            Some((_, s)) => *s += p.share,
            None => by.push((n.clone(), p.share)),
        }
    }
    let (n, share) = by.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    if share < HALF {
        return None;
    }
    rs.iter()
        .filter(|r| r.crossed && r.node.as_deref() == Some(n.as_str()))
        .filter(|r| {
            !rs.iter().any(|o| {
                o.crossed && o.resource == r.resource && o.node.is_some() && o.node != r.node
            })
        })
        .max_by(|a, b| (a.value / a.threshold).total_cmp(&(b.value / b.threshold)))
        .map(|r| (n, share, r.clone()))
}

fn judge(e: &Evidence) -> Verdict {
    let Some((t, why)) = e.deciding else {
        let text = match e.breaking_point {
            Some(bp) => format!(
                "Every trial met the SLO, up to {} req/s: the breaking point is above the highest rate tried. Raise --max-rate or --max-trials.",
                rate(bp)
            ),
            None => "No trial ran.".into(),
        };
        return Verdict {
            cause: "none".into(),
            node: None,
            text,
            trial_rate: None,
            ranking: Vec::new(),
            host_moved: Vec::new(),
            range: None,
        };
    };
    let offered = t.offered_rate.unwrap_or(t.achieved_rate);
    let mut text = format!(
        "At {} req/s the SLO failed ({}).",
        rate(offered),
        why.join("; ")
    );
    // 5. Failed requests first when the objective failed on them.
    if errors::on_errors(why) {
        return errors::judge(t, &of(t, e.machine), text);
    }
    // The slowest requests of a collapsed trial are its queue, whatever
    // set it off: the tail that tells is that of the lowest failing trial
    // that did not collapse, or else of the highest that passed.
    let by = |a: &&Trial, b: &&Trial| {
        a.offered_rate
            .unwrap_or(0.0)
            .total_cmp(&b.offered_rate.unwrap_or(0.0))
    };
    let collapsed = collapse(t);
    let tail = if collapsed.is_some() {
        let kept = |x: &&Trial| x.slowest.is_some();
        e.trials
            .iter()
            .filter(kept)
            .filter(|x| x.meets_slo == Some(false) && collapse(x).is_none())
            .min_by(by)
            .or_else(|| {
                e.trials
                    .iter()
                    .filter(kept)
                    .filter(|x| x.meets_slo == Some(true))
                    .max_by(by)
            })
            .unwrap_or(t)
    } else {
        t
    };
    if let Some(c) = &collapsed {
        text += &format!(" It {c}; what set it off is below.");
    }
    let empty = Slowest::default();
    let slow = tail.slowest.as_ref().unwrap_or(&empty);
    let slow_words = if slow.requests > 0 {
        format!(
            "the slowest {} {}({} requests, from {} ms, {} unanswered)",
            if slow.requests as usize > crate::load::slowest::MIN_SLOWEST {
                "1%"
            } else {
                "requests"
            },
            if std::ptr::eq(tail, t) {
                String::new()
            } else {
                format!(
                    "of the trial at {} req/s, before the collapse ",
                    rate(tail.offered_rate.unwrap_or(0.0))
                )
            },
            slow.requests,
            fmt_num(slow.from_ms),
            slow.unanswered
        )
    } else {
        "the slowest 1% (none kept)".into()
    };
    // 1. Where the slowest requests' time went, place by place; 2. why
    // each place was slow; 4. the causes compared by the time they hold.
    let rs = of(tail, e.machine);
    let ctx = Context {
        trial: tail,
        readings: &rs,
        machine: e.machine,
    };
    let ps = places::places(slow);
    let (weighed, unexplained) = weigh(&ps, &ctx);
    let top = weighed.first();
    // A cause no node owns (the machine, the generator) does not explain
    // why one node's requests were the slow ones: the odd node out first.
    let odd = odd_node(&ps, tail, &rs);
    let chosen: Option<(Cause, String)> = match (top, odd) {
        (Some(w), odd) if w.share >= HALF && (w.cause.node.is_some() || odd.is_none()) => Some((
            w.cause.clone(),
            format!("{} of {slow_words}'s time went to it", pct(w.share)),
        )),
        (_, Some((n, share, r))) => Some((
            Cause {
                resource: r.resource.clone(),
                node: r.node.clone(),
                why: r.quote.clone(),
                crossed: true,
            },
            format!(
                "{n} held {} of {slow_words}'s time, and of every node's readings only {n}'s {} crossed its threshold",
                pct(share),
                r.resource
            ),
        )),
        (top, None) => top.filter(|w| w.share >= CONFIRMS && w.cause.crossed).map(|w| {
            (
                w.cause.clone(),
                format!(
                    "{} of {slow_words}'s time went to it, the most of any cause, and its reading crossed its threshold",
                    pct(w.share)
                ),
            )
        }),
    };
    let Some((cause, because)) = chosen else {
        // 6. Cannot tell: say what each piece showed.
        let mut seen = rs.clone();
        seen.sort_by(|a, b| b.ratio().total_cmp(&a.ratio()));
        text += &format!(
            " Verdict: cannot tell: no cause holds half of {slow_words}'s time, and none that holds a quarter has a reading over its threshold. Their time: {}{}. Readings nearest their thresholds: {}.",
            if weighed.is_empty() {
                "no stages".to_string()
            } else {
                weighed
                    .iter()
                    .take(4)
                    .map(|w| format!("{} {} ({})", pct(w.share), key_words(&w.cause.resource, w.cause.node.as_deref()), w.places.iter().flat_map(|p| p.words.first()).cloned().collect::<Vec<_>>().join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            },
            if unexplained > 0.0 {
                format!("; {} that nothing seen explains", pct(unexplained))
            } else {
                String::new()
            },
            seen.iter()
                .take(3)
                .map(|r| format!(
                    "{} at {:.0}% of its threshold ({})",
                    key_words(&r.resource, r.node.as_deref()),
                    100.0 * r.ratio(),
                    r.quote
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let ranking = rank(&shares(&weighed), &rs, None);
        if !ranking.is_empty() {
            text += &format!(" Ranked by the slowest time: {}.", ranking_words(&ranking));
        }
        text += " Next: look at the node's disk, network and neighbours; run the sweep again with longer trials.";
        return Verdict {
            cause: "unknown".into(),
            node: None,
            text,
            trial_rate: tail.offered_rate,
            ranking,
            host_moved: Vec::new(),
            range: None,
        };
    };
    let (what, mut next) = words(&cause.resource, cause.node.as_deref(), &cause.why);
    if cause.resource == resource::MACHINE {
        if let Some(n) = causes::machine::next(tail, e.machine.cores) {
            next = n;
        }
    }
    // The places it holds, in words, largest first, adding up to its
    // share; the slowest requests' largest parts when it holds none of
    // them (a reading named on its own).
    let own = weighed
        .iter()
        .find(|w| w.cause.resource == cause.resource && w.cause.node == cause.node)
        .map(|w| parts_words(&w.places))
        .unwrap_or_default();
    let parts = if own.is_empty() {
        top_parts(slow, 3)
    } else {
        own
    };
    text += &format!(" Verdict: {what}. Because {because}: {parts}.");
    // The knee: the first trial where its reading crossed, as the rate rose.
    let knee = e
        .trials
        .iter()
        .filter(|x| x.offered_rate.unwrap_or(0.0) < offered)
        .filter(|x| {
            of(x, e.machine)
                .iter()
                .any(|r| r.crossed && r.resource == cause.resource && r.node == cause.node)
        })
        .filter_map(|x| x.offered_rate)
        .min_by(f64::total_cmp);
    if let Some(k) = knee {
        text += &format!(
            " Its reading crossed its threshold first at {} req/s.",
            rate(k)
        );
    }
    // Every other cause, and every reading over its threshold, with the
    // share of the slowest requests' time it explains.
    let explains = |res: &str, node: Option<&str>| {
        weighed
            .iter()
            .filter(|w| w.cause.resource == res && w.cause.node.as_deref() == node)
            .map(|w| w.share)
            .sum::<f64>()
    };
    let ranking = rank(
        &shares(&weighed),
        &rs,
        Some((&cause.resource, cause.node.as_deref())),
    );
    let unexplained_words =
        (unexplained > 0.005).then(|| format!("{} nothing seen explains", pct(unexplained)));
    match (ranking.len() > 1, unexplained_words) {
        (true, Some(u)) => text += &format!(" Ranked: {}; {u}.", ranking_words(&ranking)),
        (true, None) => text += &format!(" Ranked: {}.", ranking_words(&ranking)),
        (false, Some(u)) => text += &format!(" Beside it: {u}."),
        (false, None) => {}
    }
    let over: Vec<String> = rs
        .iter()
        .filter(|r| r.crossed && !(r.resource == cause.resource && r.node == cause.node))
        // Those the ranking's first three show are not said twice.
        .filter(|r| {
            !ranking
                .iter()
                .take(3)
                .any(|c| c.cause == cause_name(&r.resource) && c.node == r.node)
        })
        .take(4)
        .map(|r| {
            format!(
                "{} ({}; it explains {} of the slowest time)",
                key_words(&r.resource, r.node.as_deref()),
                r.quote,
                pct(explains(&r.resource, r.node.as_deref()))
            )
        })
        .collect();
    if !over.is_empty() {
        text += &format!(" Also over threshold: {}.", over.join("; "));
    }
    text += &format!(" Next: {next}.");
    Verdict {
        cause: cause_name(&cause.resource).to_string(),
        node: cause.node,
        text,
        trial_rate: tail.offered_rate,
        ranking,
        host_moved: Vec::new(),
        range: None,
    }
}

#[cfg(test)]
mod tests;
