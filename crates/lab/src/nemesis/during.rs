//! What runs alongside a load: a fault schedule (`--fault kill:2@20s`,
//! injected into a cluster the lab started) and the consistency checker's
//! own clients (`--check`: a few closed-loop clients writing once-written
//! keys and sequential registers through the same nodes, recorded as a
//! history and checked when the load ends). Owns starting them with the
//! load, stopping them after it, and handing back what they found (the
//! checker's judged history and the faults' marks). Must not pace the
//! load (the driver does), judge histories (the checker does), inject
//! faults itself (the schedule does) nor write the report's sections
//! (`report::alongside` does).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::schedule::{self, FaultMark, Target};
use super::step::{self, Step};
use crate::check::linear::{self, LinReport};
use crate::check::{self, Checked};

#[derive(clap::Args, Clone, Debug)]
pub struct DuringArgs {
    /// A fault to inject during the run into a cluster the lab started
    /// (`strata cluster up`), repeatable: kill:2@20s (SIGKILL node 2 at
    /// 20 s; add +10s to restart it after 10 s), restart:2@30s,
    /// pause:1@10s+3s (SIGSTOP, SIGCONT after 3 s), partition:3@15s+5s
    /// (its internal traffic black-holed; needs `cluster up --proxied`),
    /// isolate:3@15s+5s (cut off from clients and peers in the network;
    /// oneway: only what it sends, inbound: only what it receives,
    /// internal: only its peers; needs `cluster up --netns`, as root),
    /// clock:2+10s (restarted at the start with its wall clock 10 s ahead;
    /// clock:2-10s behind), jump:2+30s@10s+5s (its running clock 30 s
    /// ahead at 10 s, back after 5 s; needs `cluster up -- --test-clock-hook`). Times count from the start of the run, warm-up
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
    /// With --check, also run operations on keys every client shares and
    /// check each for linearizability (docs/consistency.md); a section of
    /// the report, with the smallest witness of a violation.
    #[arg(long, requires = "check")]
    pub linearizable: bool,
    /// How long the linearizability search may take on one key.
    #[arg(long, default_value = "60s", value_parser = crate::units::duration)]
    pub lin_limit: Duration,
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
            linearizable: false,
            lin_limit: Duration::from_secs(60),
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
    /// The shared keys' linearizability, with `--linearizable`.
    pub linear: Option<LinReport>,
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
        step::validate(&args.faults, theirs.len(), t.proxied(), t.netns())?;
    }
    let checker = if args.check {
        let cfg = check::Config {
            clients: args.check_clients.max(1),
            duration: expected + Duration::from_secs(5),
            pace: (args.check_rate > 0.0).then(|| {
                Duration::from_secs_f64(args.check_clients.max(1) as f64 / args.check_rate)
            }),
            client: client.cloned().map(check::Smart),
            mix: if args.linearizable {
                check::Mix::with_shared()
            } else {
                check::Mix::default()
            },
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
    let linear = checked
        .as_ref()
        .filter(|_| args.linearizable)
        .map(|c| linear::check_shared(&c.history, args.lin_limit));
    Ok((
        r,
        Found {
            faults,
            checked,
            linear,
        },
    ))
}
