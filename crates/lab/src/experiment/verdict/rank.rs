//! The verdict's ranking: every cause weighed, as a table of rows
//! (`RankedCause`: the cause, its node, its share of the slowest
//! requests' time, its reading's share of its threshold and the reading
//! in words), its own cause first; `report.json` keeps the table, the
//! report shows it as a table and a chart, and the verdict says its
//! first three. Owns the order and the rows; must not choose the cause
//! (`verdict` does).

use super::causes::name as cause_name;
use crate::report::model::{RankedCause, ResourceReading};

/// The causes weighed, ranked: `first` (resource, node) when one was
/// named, then the others by their share of the slowest requests' time,
/// then readings over their thresholds that explain none of it, the
/// furthest past first, then (to make three) those nearest their
/// thresholds. Each with its reading when one was taken.
pub fn rank(
    weighed: &[(&str, Option<&str>, f64)],
    rs: &[ResourceReading],
    first: Option<(&str, Option<&str>)>,
) -> Vec<RankedCause> {
    let reading = |res: &str, node: Option<&str>| {
        rs.iter()
            .filter(|r| r.resource == res && r.node.as_deref() == node)
            .max_by(|a, b| a.ratio().total_cmp(&b.ratio()))
    };
    let entry = |res: &str, node: Option<&str>, share: f64| {
        let r = reading(res, node);
        RankedCause {
            cause: cause_name(res).to_string(),
            node: node.map(str::to_string),
            share: Some(share),
            reading: r.map(|r| r.ratio()),
            quote: r.map(|r| r.quote.clone()),
        }
    };
    let share_of = |res: &str, node: Option<&str>| {
        weighed
            .iter()
            .filter(|w| w.0 == res && w.1 == node)
            .map(|w| w.2)
            .sum::<f64>()
    };
    let mut out: Vec<RankedCause> = Vec::new();
    let push = |out: &mut Vec<RankedCause>, c: RankedCause| {
        if !out.iter().any(|o| o.cause == c.cause && o.node == c.node) {
            out.push(c);
        }
    };
    if let Some((res, node)) = first {
        push(&mut out, entry(res, node, share_of(res, node)));
    }
    for &(res, node, share) in weighed {
        push(&mut out, entry(res, node, share));
    }
    let mut over: Vec<&ResourceReading> = rs.iter().filter(|r| r.crossed).collect();
    over.sort_by(|a, b| b.ratio().total_cmp(&a.ratio()));
    // At least three: then the readings nearest their thresholds.
    let mut near: Vec<&ResourceReading> = rs.iter().filter(|r| !r.crossed).collect();
    near.sort_by(|a, b| b.ratio().total_cmp(&a.ratio()));
    for r in over.into_iter().chain(near) {
        if !r.crossed && out.len() >= 3 {
            break;
        }
        push(
            &mut out,
            entry(
                &r.resource,
                r.node.as_deref(),
                share_of(&r.resource, r.node.as_deref()),
            ),
        );
    }
    out
}

/// The first three of a ranking in words: "1. fsync of node-1 (45%);
/// 2. ...".
pub fn ranking_words(r: &[RankedCause]) -> String {
    r.iter()
        .take(3)
        .enumerate()
        .map(|(i, c)| {
            format!(
                "{}. {}{}",
                i + 1,
                key_words(&c.cause, c.node.as_deref()),
                match (c.share_words(), c.reading_words()) {
                    (Some(s), Some(x)) =>
                        format!(" ({s} of the slowest time; its reading at {x} of its threshold)"),
                    (Some(s), None) => format!(" ({s} of the slowest time)"),
                    (None, Some(x)) => format!(" (its reading at {x} of its threshold)"),
                    (None, None) => String::new(),
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

pub fn key_words(resource: &str, node: Option<&str>) -> String {
    format!(
        "{}{}",
        resource,
        node.map(|n| format!(" of {n}")).unwrap_or_default()
    )
}
