//! `strata load`'s own command line (`LoadArgs`: the rate or the clients,
//! the duration, the interval log, the faults, a run's share when it is
//! cut over several machines, `ShareArgs`, or its workers); the target
//! and workload are `experiment::target`'s. Owns parsing and validating
//! them into a driver plan; must not run anything.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::experiment::target::TargetArgs;
use crate::load::driver::{Pace, Plan};
use crate::load::segment::Segment;

#[derive(clap::Args, Clone, Debug)]
pub struct LoadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Requests per second to offer (open loop).
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// libri: the rate as uploads per day (8 requests each), instead of
    /// --rate.
    #[arg(long)]
    pub uploads_per_day: Option<f64>,
    /// How long to run after the warm-up (30s, 1m, 500ms; a bare number
    /// is seconds).
    #[arg(long, default_value_t = 10.0, value_parser = crate::units::seconds)]
    pub duration: f64,
    /// Closed loop instead: this many clients, each sending a request,
    /// waiting for its answer, then thinking. Latency is then measured from
    /// the actual send, as such clients do (and a stall hides in it).
    #[arg(long, default_value_t = 0)]
    pub clients: usize,
    /// Closed loop: how long each client thinks between requests (500ms,
    /// 1s; a bare number is seconds).
    #[arg(long, default_value_t = 0.0, value_parser = crate::units::seconds)]
    pub think: f64,
    /// Also write the latency histograms, one per operation per second, in
    /// HdrHistogram's interval log format (merge several with
    /// `strata report merge`).
    #[arg(long)]
    pub hdr: Option<PathBuf>,
    /// Faults and the consistency checker alongside the load.
    #[command(flatten)]
    pub during: crate::nemesis::during::DuringArgs,
    #[command(flatten)]
    pub objective: crate::experiment::slo::LoadObjective,
    /// This run as one share of a run cut over several machines.
    #[command(flatten)]
    pub share: ShareArgs,
    /// Or this run split among workers (`strata worker`), merged here.
    #[command(flatten)]
    pub workers: crate::experiment::worker::WorkersArgs,
}

/// One generator's share of a run that several run together (k6's
/// execution segments): `--rate`, `--connections`, `--max-connections` and
/// `--clients` stay the whole run's, and this generator sends its share.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ShareArgs {
    /// This run's share of a run cut into N: `I/N`, the I-th (from 1) of
    /// N. Its sends are every N-th slot of the run's constant schedule
    /// (with Poisson arrivals, a stream at 1/N of the rate seeded apart),
    /// its new keys every N-th of the run's, its preload every N-th record;
    /// the N shares together are the one run.
    #[arg(long, value_name = "I/N", value_parser = Segment::parse,
          conflicts_with_all = ["segment_index", "segments"])]
    pub segment: Option<Segment>,
    /// The same as a 0-based index (Kubernetes' `JOB_COMPLETION_INDEX`),
    /// with --segments.
    #[arg(long, requires = "segments")]
    pub segment_index: Option<u64>,
    /// How many shares the run is cut into, with --segment-index.
    #[arg(long, requires = "segment_index")]
    pub segments: Option<u64>,
    /// Start at this instant on the wall clock (every share waits for the
    /// same one): `2026-11-28T22:00:00Z`, `@UNIX_SECONDS` or `+30s`. A run
    /// that reaches it late starts at once, and its report and interval
    /// log say by how much; `strata report merge` says how far apart the
    /// merged runs started.
    #[arg(long, value_name = "TIME", env = "STRATA_START_AT", value_parser = crate::units::instant)]
    pub start_at: Option<SystemTime>,
}

impl ShareArgs {
    /// The share given, or the whole run.
    pub fn segment(&self) -> Result<Segment, String> {
        match (self.segment, self.segment_index, self.segments) {
            (Some(s), _, _) => Ok(s),
            (None, Some(i), Some(n)) => Segment::new(i, n),
            _ => Ok(Segment::default()),
        }
    }
}

impl LoadArgs {
    pub fn plan(&self) -> Result<Plan, String> {
        let t = &self.target;
        if !crate::experiment::slo::positive(self.duration) || t.warmup < 0.0 {
            return Err("--duration must be positive and --warmup not negative".into());
        }
        let pace = if self.clients > 0 {
            Pace::Closed {
                clients: self.clients,
                think: Duration::from_secs_f64(self.think.max(0.0)),
            }
        } else {
            t.open(match self.uploads_per_day {
                Some(u) => crate::load::workload::libri_rate_from_uploads_per_day(u),
                None => self.rate,
            })
        };
        if self.workers.workers.is_some()
            && (self.share.segment.is_some() || self.share.segments.is_some())
        {
            return Err(
                "--workers splits the run among workers itself; --segment is for one share run alone"
                    .into(),
            );
        }
        let workload = t.workload_share(self.share.segment()?)?;
        let mut plan = t.plan(&t.nodes()?, &workload, pace, self.duration, t.seed);
        plan.start_at = self.share.start_at;
        Ok(plan)
    }
}
