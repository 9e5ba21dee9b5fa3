//! `strata cluster join URL` and `strata cluster leave URL`: a layout
//! change. Join is sent to the new node (started with `--seed`), leave to
//! the member that leaves; the node drives the change through its stages
//! (`POST /v0/cluster/join|leave`). This command then follows it on
//! `GET /v0/cluster` until it is done and prints what moved: keys whose
//! replicas changed, against the ideal; records sent; time. Owns asking
//! and following; must not move anything itself (the nodes do).

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::http;
use super::status::{aligned, bytes as size};

#[derive(clap::Args, Clone, Debug)]
pub struct ChangeArgs {
    /// The node that joins (started with --seed) or leaves.
    pub url: String,
    /// Start the change and return without following it.
    #[arg(long)]
    pub no_wait: bool,
    /// How long to follow the change (1h; a bare number is seconds).
    #[arg(long, default_value = "1h", value_parser = crate::units::duration)]
    pub timeout: Duration,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Layout {
    pub version: u64,
    pub stage: String,
    pub replication: usize,
    pub members: Vec<String>,
    pub previous: Option<Vec<String>>,
}

/// What one node streamed (`node` is set in a change's list).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Stream {
    #[serde(default)]
    pub node: String,
    pub version: u64,
    pub done: bool,
    pub scanned: u64,
    pub keys: u64,
    pub copies: u64,
    pub records: u64,
    pub applied: u64,
    pub bytes: u64,
    pub removed: u64,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct Change {
    pub target: Layout,
    pub step: String,
    pub elapsed_ms: u64,
    pub done: bool,
    pub error: Option<String>,
    pub streams: Vec<Stream>,
}

impl Change {
    /// Keys whose replica set changed (each counted once).
    pub fn keys(&self) -> u64 {
        self.streams.iter().map(|s| s.keys).sum()
    }
    /// Replica copies gained: the ideal amount of data to move.
    pub fn copies(&self) -> u64 {
        self.streams.iter().map(|s| s.copies).sum()
    }
    pub fn records(&self) -> u64 {
        self.streams.iter().map(|s| s.records).sum()
    }
    pub fn applied(&self) -> u64 {
        self.streams.iter().map(|s| s.applied).sum()
    }
    pub fn bytes(&self) -> u64 {
        self.streams.iter().map(|s| s.bytes).sum()
    }
    pub fn scanned(&self) -> u64 {
        self.streams.iter().map(|s| s.scanned).sum()
    }
}

/// The parts of `GET /v0/cluster` a change needs.
#[derive(Clone, Debug, Deserialize)]
pub struct View {
    pub node: String,
    pub layout: Layout,
    pub stream: Stream,
    pub change: Option<Change>,
}

#[derive(Debug, Deserialize)]
struct Started {
    target: Layout,
}

pub fn view(url: &str) -> Result<View, String> {
    http::json("GET", url, "/v0/cluster", 200, Duration::from_secs(5))
}

/// Ask `url` to join (`join`) or leave; returns the target layout.
pub fn start(url: &str, join: bool) -> Result<Layout, String> {
    let path = if join {
        "/v0/cluster/join"
    } else {
        "/v0/cluster/leave"
    };
    let s: Started = http::json("POST", url, path, 202, Duration::from_secs(30))?;
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
    let target = start(&a.url, join)?;
    let from = target.previous.as_ref().map_or(0, |p| p.len());
    println!(
        "layout version {}: {} → {} members (replication {})",
        target.version,
        from,
        target.members.len(),
        target.replication
    );
    if a.no_wait {
        println!("follow it with: strata cluster status {}", a.url);
        return Ok(());
    }
    let mut last = String::new();
    let c = follow(&a.url, a.timeout, |c| {
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

/// The change's figures: keys moved against the ideal, per node.
pub fn summary(c: &Change) -> String {
    let n_new = c.target.members.len() as f64;
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
            s.node.clone(),
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
    // Rendezvous hashing's ideal: a join or leave moves rf/N of every
    // key's replicas, N the larger member count.
    let old_n = c.target.previous.as_ref().map_or(0, |p| p.len()) as f64;
    let n = n_new.max(old_n);
    if n > 0.0 {
        let stored = c
            .streams
            .iter()
            .filter(|s| s.scanned > 0)
            .map(|s| s.scanned)
            .sum::<u64>() as f64;
        let rf = c.target.replication as f64;
        // Records on old members ≈ keys × rf.
        let keys_total = stored / rf;
        let ideal = keys_total * rf / n;
        if ideal > 0.0 {
            out.push_str(&format!(
                "ideal (rf/N of the {keys_total:.0} keys' replicas): {ideal:.0} copies; placed {:.3}× the ideal\n",
                c.copies() as f64 / ideal
            ));
        }
    }
    out
}
