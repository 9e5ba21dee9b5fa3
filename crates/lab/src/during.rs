//! What runs alongside a load: a fault schedule (`--fault kill:2@20s`,
//! injected into a cluster the lab started) and the consistency checker's
//! own clients (`--check`: a few closed-loop clients writing once-written
//! keys and sequential registers through the same nodes, recorded as a
//! history and checked when the load ends). Owns starting them with the
//! load, stopping them after it, and turning what they found into the
//! report's sections; must not pace the load (the driver does), judge
//! histories (the checker does) nor inject faults itself (the schedule
//! does).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::check::{self, Checked};
use crate::cluster::schedule::{self, Step, Target};
use crate::report::model::{CheckSummary, FaultMark, Trial};

#[derive(clap::Args, Clone, Debug)]
pub struct DuringArgs {
    /// A fault to inject during the run into a cluster the lab started
    /// (`strata cluster up`), repeatable: kill:2@20s (SIGKILL node 2 at
    /// 20 s; add +10s to restart it after 10 s), restart:2@30s,
    /// pause:1@10s+3s (SIGSTOP, SIGCONT after 3 s), partition:3@15s+5s
    /// (its internal traffic black-holed; needs `cluster up --proxied`),
    /// clock:2+10s (restarted at the start with its wall clock 10 s ahead;
    /// clock:2-10s behind). Times count from the start of the run, warm-up
    /// included; whatever is still in force at the end is undone.
    #[arg(long = "fault", value_name = "SPEC", value_parser = Step::parse)]
    pub faults: Vec<Step>,
    /// The directory of the cluster the faults go to (`strata cluster up
    /// --data-dir`); its control socket is there.
    #[arg(long, default_value = "strata-cluster")]
    pub cluster_dir: PathBuf,
    /// Also run the consistency checker's clients through the same nodes
    /// for the whole run and check their history (lost acknowledged
    /// writes, stale reads where ack_read + ack_write > from, reads of
    /// values never written); a section of the report.
    #[arg(long)]
    pub check: bool,
    /// Closed-loop clients of --check (their requests add to the load).
    #[arg(long, default_value_t = 4)]
    pub check_clients: u32,
    /// Operations per second of --check, all its clients together (0: each
    /// client sends as soon as its last was answered). A long run wants a
    /// rate: the history is held in memory and every written key is read
    /// back at the end.
    #[arg(long, default_value_t = 0.0)]
    pub check_rate: f64,
}

impl Default for DuringArgs {
    fn default() -> DuringArgs {
        DuringArgs {
            faults: Vec::new(),
            cluster_dir: PathBuf::from("strata-cluster"),
            check: false,
            check_clients: 4,
            check_rate: 0.0,
        }
    }
}

/// What ran alongside, for the report.
#[derive(Default)]
pub struct Found {
    pub faults: Vec<FaultMark>,
    pub checked: Option<Checked>,
}

/// The same node, however the URL was written.
fn norm(u: &str) -> String {
    u.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Run `load` with what `args` asks for alongside: the checker's clients
/// on `urls`, through `client` when the run goes through the client
/// library (for at most `expected`, stopped when the load ends), and the
/// faults injected into `target` (which must serve exactly `urls`), times
/// counted from `origin`.
pub fn around<T: Target + Send, R>(
    args: &DuringArgs,
    urls: &[String],
    client: Option<&strata_client::Client>,
    target: Option<&mut T>,
    origin: Instant,
    expected: Duration,
    load: impl FnOnce() -> R,
) -> Result<(R, Found), String> {
    if !args.faults.is_empty() {
        let Some(t) = target.as_ref() else {
            return Err("--fault needs a cluster the lab started (strata cluster up)".into());
        };
        let mut theirs: Vec<String> = t.urls().iter().map(|u| norm(u)).collect();
        let mut ours: Vec<String> = urls.iter().map(|u| norm(u)).collect();
        theirs.sort();
        ours.sort();
        if theirs != ours {
            return Err(format!(
                "--fault: the cluster the lab started serves {}, the run goes to {}: give it every node's URL",
                t.urls().join(","),
                urls.join(",")
            ));
        }
        schedule::validate(&args.faults, theirs.len(), t.proxied())?;
    }
    let checker = if args.check {
        let cfg = check::Config {
            clients: args.check_clients.max(1),
            duration: expected + Duration::from_secs(5),
            pace: (args.check_rate > 0.0).then(|| {
                Duration::from_secs_f64(args.check_clients.max(1) as f64 / args.check_rate)
            }),
            client: client.cloned().map(check::Smart),
            ..check::Config::new(urls.to_vec())
        };
        Some(check::spawn(cfg)?)
    } else {
        None
    };
    let (r, faults) = match target {
        Some(t) if !args.faults.is_empty() => schedule::run_during(&args.faults, t, origin, load),
        _ => (load(), Vec::new()),
    };
    let checked = match checker {
        Some(c) => {
            c.stop();
            Some(c.join()?)
        }
        None => None,
    };
    Ok((r, Found { faults, checked }))
}

/// The faults' marks with the time the successful rate took to come back,
/// read from the trial's timeline.
pub fn with_recovery(mut marks: Vec<FaultMark>, t: &Trial) -> Vec<FaultMark> {
    let seconds: Vec<(f64, f64)> = t
        .timeline
        .iter()
        .map(|s| (s.t_s, s.requests.saturating_sub(s.errors) as f64))
        .collect();
    schedule::recovery(&mut marks, &seconds);
    marks
}

/// The exact definitions of what `--check` looks for.
pub const CHECK_METHOD: &str = "Per-key checks on the checker's own keys, not a full linearizability search. Lost write: a write answered OK on a once-written set/ key whose final read (at ack=from, after every fault was undone) found it absent or another value. Stale read: on a register (one writer, sequential writes), a read returning a value all of whose possible writes were acknowledged before another acknowledged write W was invoked, where W was acknowledged before the read was invoked; judged only when ack_read + ack_write > from. Impossible read: a value no write that had not failed wrote to that key before the read completed. Writes whose outcome is unknown (timeouts) may take effect at any time and are never counted lost.";

/// The report's section for a checked run.
pub fn check_summary(c: &Checked) -> CheckSummary {
    let r = &c.report;
    CheckSummary {
        passed: r.passed(),
        writes_acknowledged: r.writes_ok,
        set_acknowledged: r.set_acknowledged,
        reads_checked: r.register_reads_checked,
        stale_checked: r.stale_checked,
        lost: r.lost,
        stale: r.stale,
        impossible: r.impossible,
        unverified: r.unverified,
        method: CHECK_METHOD.into(),
        text: r.to_string(),
    }
}

/// Lines for the terminal: each fault, then the checker's verdict.
pub fn summary(faults: &[FaultMark], check: Option<&CheckSummary>) -> String {
    let mut s = String::new();
    let secs = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} s"));
    for f in faults {
        s += &format!(
            "  Fault {}: node-{} at {:.2} s, back at {}, level {} after, throughput back {} after{}\n",
            f.spec,
            f.node,
            f.at_s,
            f.until_s.map_or("-".to_string(), |v| format!("{v:.2} s")),
            secs(f.level_after_s),
            secs(f.recovered_after_s),
            f.error.as_ref().map(|e| format!(" (error: {e})")).unwrap_or_default()
        );
    }
    if let Some(c) = check {
        s += &format!(
            "  Check: {} ({} acknowledged writes, {} once-written keys verified, {} register reads checked{}): {} lost, {} stale, {} impossible\n",
            if c.passed { "passed" } else { "FAILED" },
            c.writes_acknowledged,
            c.set_acknowledged,
            c.reads_checked,
            if c.stale_checked { "" } else { ", stale reads not judged: quorums need not meet" },
            c.lost,
            c.stale,
            c.impossible
        );
    }
    s
}
