//! `strata cluster join URL` and `strata cluster leave URL`: a layout
//! change. Join is sent to the new node (started with `--seed`), leave to
//! the member that leaves; the node drives the change through its stages
//! (`POST /v0/cluster/join|leave`). This command then follows it on
//! `GET /v0/cluster` until it is done and prints what moved: keys whose
//! replicas changed, against the ideal; records sent; time. Owns asking
//! and following; must not move anything itself (the nodes do).

use std::time::{Duration, Instant};
use strata_api::routes;

use strata_api::human::bytes as size;

use crate::status::aligned;
use strata_client::control;

#[derive(clap::Args, Clone, Debug)]
pub struct ChangeArgs {
    /// The node that joins (started with --seed) or leaves.
    pub url: String,
    /// Leave only: remove URL through this member, for a member that is
    /// down (its disk or machine gone); the other replicas stream its
    /// keys. A member that is up must be sent the leave itself.
    #[arg(long)]
    pub via: Option<String>,
    /// Start the change and return without following it.
    #[arg(long)]
    pub no_wait: bool,
    /// How long to follow the change (1h; a bare number is seconds).
    #[arg(long, default_value = "1h", value_parser = strata_api::duration::parse)]
    pub timeout: Duration,
}

/// A layout as `GET /v0/cluster` gives it (typed once, in `strata-api`).
pub use strata_api::view::Layout;

/// What a node streamed, a change's progress, and the answer that starts
/// one (typed once, in `strata-api`).
pub use strata_api::operate::{Change, ClusterView as View, Started, Stream};

pub fn view(url: &str) -> Result<View, String> {
    control::json("GET", url, routes::CLUSTER, 200, Duration::from_secs(5))
}

/// Ask `url` to join (`join`) or leave; returns the target layout.
pub fn start(url: &str, join: bool) -> Result<Layout, String> {
    let path = if join {
        routes::CLUSTER_JOIN
    } else {
        routes::CLUSTER_LEAVE
    };
    let s: Started = control::json("POST", url, path, 202, Duration::from_secs(30))?;
    Ok(s.target)
}

/// Ask member `via` to remove `gone` (a member that is down).
pub fn start_removal(via: &str, gone: &str) -> Result<Layout, String> {
    let mut path = format!("{}?node=", routes::CLUSTER_LEAVE);
    strata_api::query::encode_into(&mut path, gone);
    let s: Started = control::json("POST", via, &path, 202, Duration::from_secs(30))?;
    Ok(s.target)
}

/// Follow the change `url` drives until it is done (an error if it
/// fails or `timeout` passes); `each` sees every poll.
pub fn follow(
    url: &str,
    timeout: Duration,
    mut each: impl FnMut(&Change),
) -> Result<Change, String> {
    let end = Instant::now() + timeout;
    loop {
        let v = view(url)?;
        let c = v
            .change
            .ok_or_else(|| format!("{url} drives no layout change"))?;
        each(&c);
        if let Some(e) = &c.error {
            return Err(format!(
                "the change to layout version {} failed: {e} (send the same command again to resume it)",
                c.target.version
            ));
        }
        if c.done {
            return Ok(c);
        }
        if Instant::now() >= end {
            return Err(format!("the change was not done within {timeout:?}"));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Run `strata cluster join` (`join`) or `strata cluster leave`.
pub fn run(a: &ChangeArgs, join: bool) -> Result<(), String> {
    let (target, driver) = match (&a.via, join) {
        (Some(_), true) => return Err("--via is for leave: a joining node is asked itself".into()),
        (Some(via), false) => (start_removal(via, &a.url)?, via.as_str()),
        (None, _) => (start(&a.url, join)?, a.url.as_str()),
    };
    let from = target.previous.as_ref().map_or(0, |p| p.len());
    println!(
        "layout version {}: {} → {} members (replication {})",
        target.version,
        from,
        target.members.len(),
        target.replication
    );
    if a.no_wait {
        println!("follow it with: strata cluster status {driver}");
        return Ok(());
    }
    let mut last = String::new();
    let c = follow(driver, a.timeout, |c| {
        let line = format!(
            "{:>7.1}s  {:<22} scanned {:>10}  sent {:>10} records",
            c.elapsed_ms as f64 / 1000.0,
            c.step,
            c.scanned(),
            c.records()
        );
        if line[9..] != last.get(9..).unwrap_or_default()[..] {
            println!("{line}");
            last = line;
        }
    })?;
    print!("{}", summary(&c));
    Ok(())
}

/// What rendezvous hashing moves at best, and how it is counted: a
/// member that leaves hands over each record it held (one copy each); a
/// member that joins gains rf/N of the keys (one copy each), the keys
/// counted from the old members' records (each holds rf of every key).
pub fn ideal(c: &Change) -> Option<(f64, String)> {
    let old = c.target.previous.as_ref()?;
    let gone: Vec<&String> = old
        .iter()
        .filter(|u| !c.target.members.contains(u))
        .collect();
    let added = c.target.members.iter().filter(|u| !old.contains(u)).count();
    let rf = c.target.replication as f64;
    if !gone.is_empty() && added == 0 {
        let held: u64 = c
            .streams
            .iter()
            .filter(|s| s.node.as_ref().is_some_and(|n| gone.contains(&n)))
            .map(|s| s.scanned)
            .sum();
        return (held > 0).then(|| (held as f64, "every record the leaving member held".into()));
    }
    let keys = c.scanned() as f64 / rf;
    let n = c.target.members.len() as f64;
    (keys > 0.0 && added > 0).then(|| {
        (
            keys * rf * added as f64 / n,
            format!("rf/N of the {keys:.0} keys gain a copy"),
        )
    })
}

/// The change's figures: keys moved against the ideal, per node.
pub fn summary(c: &Change) -> String {
    let mut rows = vec![vec![
        "old member".to_string(),
        "scanned".into(),
        "keys moved".into(),
        "copies".into(),
        "records sent".into(),
        "stored".into(),
        "bytes".into(),
    ]];
    for s in &c.streams {
        rows.push(vec![
            s.node.clone().unwrap_or_default(),
            s.scanned.to_string(),
            s.keys.to_string(),
            s.copies.to_string(),
            s.records.to_string(),
            s.applied.to_string(),
            size(s.bytes),
        ]);
    }
    let (mut out, _) = aligned(&rows);
    out.push_str(&format!(
        "done in {:.1} s: {} keys changed replicas, {} replica copies placed; records sent {} ({} stored, the rest already there)\n",
        c.elapsed_ms as f64 / 1000.0,
        c.keys(),
        c.copies(),
        c.records(),
        c.applied(),
    ));
    if let Some((ideal, how)) = ideal(c) {
        out.push_str(&format!(
            "ideal: {ideal:.0} copies ({how}); placed {:.3}× the ideal\n",
            c.copies() as f64 / ideal
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(node: &str, scanned: u64, keys: u64) -> Stream {
        Stream {
            node: Some(node.into()),
            version: 2,
            done: true,
            scanned,
            keys,
            copies: keys,
            records: keys * 3,
            applied: keys,
            bytes: keys * 120,
            ..Default::default()
        }
    }

    fn change(members: &[&str], previous: &[&str], streams: Vec<Stream>) -> Change {
        Change {
            target: Layout {
                version: 2,
                stage: "stable".into(),
                replication: 3,
                members: members.iter().map(|s| s.to_string()).collect(),
                previous: Some(previous.iter().map(|s| s.to_string()).collect()),
            },
            step: "done".into(),
            elapsed_ms: 1500,
            done: true,
            error: None,
            streams,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn a_join_is_judged_against_rf_over_n_of_the_keys() {
        // 1,000 keys on three members (each holds all): 750 gain a copy.
        let c = change(
            &["a", "b", "c", "d"],
            &["a", "b", "c"],
            vec![
                stream("a", 1000, 250),
                stream("b", 1000, 250),
                stream("c", 1000, 240),
            ],
        );
        let (ideal, how) = ideal(&c).unwrap();
        assert_eq!(ideal, 750.0);
        assert!(how.contains("1000 keys"), "{how}");
        let text = summary(&c);
        assert!(
            text.contains("done in 1.5 s: 740 keys changed replicas"),
            "{text}"
        );
        assert!(text.contains("placed 0.987× the ideal"), "{text}");
    }

    #[test]
    fn a_leave_is_judged_against_what_the_leaving_member_held() {
        let c = change(
            &["b", "c", "d"],
            &["a", "b", "c", "d"],
            vec![
                stream("a", 750, 300),
                stream("b", 750, 150),
                stream("c", 750, 150),
                stream("d", 750, 150),
            ],
        );
        let (ideal, how) = ideal(&c).unwrap();
        assert_eq!(ideal, 750.0);
        assert!(how.contains("leaving member"), "{how}");
        assert!(summary(&c).contains("placed 1.000× the ideal"));
    }
}
