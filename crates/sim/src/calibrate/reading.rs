//! What one measured step of a node says about it, in the model's terms:
//! the figures a node scenario is built from (`node::scenario_from_reading`)
//! whichever way they were measured. A calibration step reads them from the
//! node's `/metrics` before and after it (`Reading::from_metrics`); a sweep's
//! trial from the lab's per-second samples of the same counters
//! (`Reading::from_samples`), so `strata calibrate` and a sweep's check of
//! the model share one fitting path from here on. Owns that reduction (and
//! the options it takes, the stalls and steal read from a node's pause
//! detector); must not build stages (node.rs does), fetch anything nor
//! run the model.

use crate::dist::DistSpec;
use crate::scenario::node::Stalls;
use crate::units::Dur;

use super::{is_write_method, names, parse_metrics, CalibrationError, Hist, HistDist, Metrics};

/// A pause-detector tick at least this late is a stall of the process's
/// threads (below it: the timer's own slack on an idle machine).
pub const STALL_FROM: f64 = 0.001;

/// The pause detector's tick (`strata_node::evidence::TICK`): a window's
/// ticks and their lateness give its length.
const PAUSE_TICK: f64 = 0.005;

/// The stalls a node's threads met, from its pause detector's histogram
/// over a window: how many ticks woke at least `STALL_FROM` late, per
/// second of the window (ticks × the tick + their summed lateness), and
/// their lengths as the buckets from `STALL_FROM` up. Stalls shorter than
/// a tick are seen only when a tick falls in them, so their rate is a
/// floor; the long ones, which decide a tail, are each seen once.
pub fn stalls_from_pauses(h: &Hist) -> Option<crate::scenario::node::Stalls> {
    let elapsed = h.count * PAUSE_TICK + h.sum;
    if elapsed <= 0.0 {
        return None;
    }
    let at = |le: f64| {
        h.buckets
            .iter()
            .filter(|(b, _)| *b <= le * (1.0 + 1e-9))
            .map(|(_, c)| *c)
            .fold(0.0, f64::max)
    };
    let below = at(STALL_FROM);
    let mut le = vec![STALL_FROM];
    let mut counts = vec![0u64];
    let mut prev = below;
    for &(bound, cum) in h
        .buckets
        .iter()
        .filter(|(b, _)| *b > STALL_FROM * (1.0 + 1e-9))
    {
        if !bound.is_finite() {
            continue;
        }
        le.push(bound);
        counts.push((cum - prev).max(0.0).round() as u64);
        prev = cum.max(prev);
    }
    while counts.last() == Some(&0) {
        counts.pop();
        le.pop();
    }
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return None;
    }
    Some(crate::scenario::node::Stalls {
        per_second: n as f64 / elapsed,
        length: DistSpec::Histogram {
            le_seconds: le,
            counts,
            scale: None,
            shift: Dur::ZERO,
        },
    })
}

/// A stall's mean length in seconds (bucket midpoints).
/// The share of the node's cores the hypervisor took for other guests
/// (steal) over the window its pause detector covers, beyond what that
/// detector already saw as stalls (`stall_share`): steal in slices too
/// short to make a tick late. The node's CPU seconds per request do not
/// count it, so each request's service on those cores takes longer by
/// 1 / (1 - share). At most `MAX_STOLEN`; `None` when the node does not
/// say (an older node, no `/proc/stat`).
pub fn stolen_beyond_stalls(m: &Metrics, stall_share: f64) -> Option<f64> {
    let stolen = m.get(names::ALLOWED_CPUS_STOLEN_SECONDS)?;
    let h = m.histogram(names::PAUSE_LATENESS)?;
    let elapsed = h.count * PAUSE_TICK + h.sum;
    let cpus = m.get(names::PROCESS_CPUS).unwrap_or(1.0).max(1.0);
    (elapsed > 0.0).then(|| (stolen / (elapsed * cpus) - stall_share).clamp(0.0, MAX_STOLEN))
}

/// Steal above this share is taken as this share: a model of a core the
/// hypervisor nearly never runs says nothing useful.
pub const MAX_STOLEN: f64 = 0.9;

pub(crate) fn stall_mean(st: &crate::scenario::node::Stalls) -> Option<f64> {
    if let DistSpec::Uniform { min, max, .. } = &st.length {
        return Some((min.0 + max.0) as f64 / 2e9);
    }
    let DistSpec::Histogram {
        le_seconds, counts, ..
    } = &st.length
    else {
        return None;
    };
    let (mut sum, mut n, mut lo) = (0.0, 0.0, 0.0);
    for (b, c) in le_seconds.iter().zip(counts) {
        sum += (lo + b) / 2.0 * *c as f64;
        n += *c as f64;
        lo = *b;
    }
    (n > 0.0).then(|| sum / n)
}

/// How to turn metrics into a scenario.
#[derive(Clone, Debug, Default)]
pub struct CalibrateOptions {
    /// CPU cores the node can use (the load generator may share the
    /// machine); default: the node's `strata_process_cpus` (its affinity
    /// mask), else this machine's.
    pub cores: Option<u32>,
    /// Metrics text scraped before the load: counters and histograms are
    /// taken as differences.
    pub baseline: Option<String>,
    /// The open-loop rate of the scenario; default: 80% of the predicted
    /// capacity.
    pub rate: Option<f64>,
    /// The node's largest commit group (its committer's MAX_GROUP, 512).
    pub max_batch: Option<u32>,
    /// CPU seconds per request that other work growing with the load
    /// takes on the node's cores (a load generator on the same machine):
    /// on a shared machine the cores serve it too.
    pub shared_per_request: Option<f64>,
    /// Cores' worth of other work on the node's cores that does not grow
    /// with the load (a neighbour, the kernel's own).
    pub background_cores: Option<f64>,
    pub name: Option<String>,
}

/// The admission stage as the node reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionReading {
    pub permits: u32,
    pub max_waiting: Option<u32>,
    pub max_wait: Option<Dur>,
    /// The adaptive limit at the end of the step.
    pub limit: Option<f64>,
    /// The mean time a request held a permit, seconds.
    pub mean_hold: Option<f64>,
}

/// The WAL's fsyncs over the step.
#[derive(Clone, Debug, PartialEq)]
pub struct FsyncReading {
    pub count: f64,
    /// Mean fsync, seconds.
    pub mean: f64,
    /// Their distribution, as the model draws them.
    pub dist: DistSpec,
    /// The mean commit group, writes.
    pub group_mean: Option<f64>,
}

impl FsyncReading {
    /// From a mean and a 99th percentile alone (a sweep's samples keep
    /// those, not the buckets): the lognormal with that mean whose p99 is
    /// that p99 (σ from ln(p99 / mean) = z·σ − σ² / 2, z = 2.326; at most
    /// z, where the p99 sits as far above the mean as a lognormal can put
    /// it).
    pub fn from_mean_p99(count: f64, mean: f64, p99: f64, group_mean: Option<f64>) -> Self {
        const Z: f64 = 2.326;
        let ratio = (p99 / mean).max(1.0);
        let disc = Z * Z - 2.0 * ratio.ln();
        let sigma = if disc > 0.0 { Z - disc.sqrt() } else { Z };
        let sd = mean * ((sigma * sigma).exp() - 1.0).sqrt();
        FsyncReading {
            count,
            mean,
            dist: DistSpec::Lognormal {
                mean: Dur::from_secs_f64(mean),
                sd: Dur::from_secs_f64(sd),
                shift: Dur::ZERO,
            },
            group_mean,
        }
    }
}

/// One step's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// Requests the node served in the step's window.
    pub requests: f64,
    /// Of them, the share that wrote.
    pub write_share: f64,
    /// The node's own CPU per request, seconds.
    pub own_cpu_per_request: f64,
    /// Other work on the node's cores that grows with the load, per
    /// request, seconds (the load generator sharing them).
    pub shared_per_request: f64,
    /// Other work on the node's cores that does not, in cores (a
    /// neighbour, the kernel's own): it takes a share of them whatever the
    /// rate, at most `MAX_BACKGROUND` of them (the scheduler gives the
    /// node's runnable threads their turn).
    pub background_cores: f64,
    /// The cores the node can use, and where that figure came from.
    pub cores: u32,
    pub cores_from: &'static str,
    /// The hypervisor's steal beyond the stalls, a share of the cores.
    pub stolen: f64,
    pub stalls: Option<Stalls>,
    pub admission: AdmissionReading,
    pub fsync: Option<FsyncReading>,
    /// The node's own mean duration per method: (method, requests, mean s).
    pub method_means: Vec<(&'static str, f64, f64)>,
}

/// Background work takes at most this share of the node's cores: a
/// neighbour that would take more meets the node's threads in the
/// scheduler's queue and gets its fair turn, not the whole core.
pub const MAX_BACKGROUND: f64 = 0.5;

impl Reading {
    /// The share of the node's cores background work took.
    pub fn background_share(&self) -> f64 {
        (self.background_cores / self.cores.max(1) as f64).clamp(0.0, MAX_BACKGROUND)
    }

    /// The share of the node's cores its threads lost to stalls.
    pub fn stall_share(&self) -> f64 {
        self.stalls
            .as_ref()
            .and_then(|st| Some(st.per_second * stall_mean(st)?))
            .unwrap_or(0.0)
    }

    /// From the node's `/metrics` text after the step and
    /// `opts.baseline` (before it).
    pub fn from_metrics(text: &str, opts: &CalibrateOptions) -> Result<Reading, CalibrationError> {
        let mut m = parse_metrics(text)?;
        if let Some(b) = &opts.baseline {
            m = m.minus(&parse_metrics(b)?);
        }
        let requests = m
            .get(names::HTTP_REQUESTS)
            .ok_or(CalibrationError::Missing(names::HTTP_REQUESTS))?;
        if requests <= 0.0 {
            return Err(CalibrationError::Invalid(
                "the node served no requests (in the window): put load on it first (strata load), \
                 then scrape /metrics"
                    .into(),
            ));
        }
        let writes = m.sum(names::HTTP_REQUESTS, is_write_method).unwrap_or(0.0);
        let cpu = m
            .get(names::CPU_SECONDS)
            .ok_or(CalibrationError::Missing(names::CPU_SECONDS))?;
        if cpu <= 0.0 {
            return Err(CalibrationError::Invalid(format!(
                "{} is 0",
                names::CPU_SECONDS
            )));
        }
        let workers = m.get(names::RUNTIME_WORKERS).filter(|w| *w >= 1.0);
        let (cores, cores_from) = match (opts.cores, m.get(names::PROCESS_CPUS)) {
            (Some(c), _) => (c, "as given"),
            // HTTP is served by the runtime's workers: fewer workers than
            // CPUs cannot use them all.
            (None, Some(c)) if c >= 1.0 => match workers.filter(|w| *w < c) {
                Some(w) => (
                    w.round() as u32,
                    "the node's runtime workers, fewer than its CPUs",
                ),
                None => (c.round() as u32, "the CPUs the node may run on"),
            },
            (None, _) => (
                std::thread::available_parallelism()
                    .map(|n| n.get() as u32)
                    .unwrap_or(1),
                "this machine's",
            ),
        };
        let permits = m
            .get(names::MAX_IN_SERVICE)
            .ok_or(CalibrationError::Missing(names::MAX_IN_SERVICE))?
            .round()
            .max(1.0) as u32;
        let stalls = m
            .histogram(names::PAUSE_LATENESS)
            .and_then(|h| stalls_from_pauses(&h));
        let fsync = m.histogram(names::FSYNC_DURATION);
        let group_mean = m
            .histogram(names::COMMIT_GROUP)
            .as_ref()
            .and_then(Hist::mean);
        let fsync = fsync.as_ref().and_then(|h| {
            Some(FsyncReading {
                count: h.count,
                mean: h.mean().unwrap_or(0.0),
                dist: h.to_dist()?,
                group_mean,
            })
        });
        let mut method_means = Vec::new();
        for method in ["GET", "PUT"] {
            let keep = |l: &[(String, String)]| l.iter().any(|(k, v)| k == "method" && v == method);
            if let (Some(s), Some(c)) = (
                m.sum(names::HTTP_DURATION_SUM, keep),
                m.sum(names::HTTP_DURATION_COUNT, keep),
            ) {
                if c > 0.0 {
                    method_means.push((method, c, s / c));
                }
            }
        }
        let mut r = Reading {
            requests,
            write_share: (writes / requests).clamp(0.0, 1.0),
            own_cpu_per_request: cpu / requests,
            shared_per_request: opts
                .shared_per_request
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(0.0),
            background_cores: opts
                .background_cores
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(0.0),
            cores: cores.max(1),
            cores_from,
            stolen: 0.0,
            stalls,
            admission: AdmissionReading {
                permits,
                max_waiting: m.get(names::MAX_WAITING).map(|v| v.round() as u32),
                max_wait: m.get(names::MAX_WAIT_SECONDS).map(Dur::from_secs_f64),
                limit: m.get(names::ADMISSION_LIMIT),
                mean_hold: m
                    .histogram(names::SERVICE_DURATION)
                    .as_ref()
                    .and_then(Hist::mean),
            },
            fsync,
            method_means,
        };
        r.stolen = stolen_beyond_stalls(&m, r.stall_share()).unwrap_or(0.0);
        Ok(r)
    }
}

/// What a sweep's trial kept of the node, per second of it, for
/// `Reading::from_samples`: the lab's per-second samples averaged over the
/// trial (each figure `None` where the node did not say).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    /// Requests the node answered in the trial, and the trial's seconds.
    pub requests: f64,
    pub seconds: f64,
    pub write_share: f64,
    /// The node's CPU, cores.
    pub cpu_cores: f64,
    /// The node's cores: how many, how busy (a share, whoever kept them
    /// so) and the hypervisor's share of them.
    pub cpus: f64,
    pub busy_share: Option<f64>,
    pub stolen_share: Option<f64>,
    /// The pause detector's lateness, seconds per second, and the longest.
    pub paused_share: Option<f64>,
    pub pause_max_s: Option<f64>,
    /// Fsyncs in the trial, their busy time (seconds per second), the
    /// largest per-second p99 and the mean writes per fsync.
    pub fsyncs: f64,
    pub fsync_busy: f64,
    pub fsync_p99_s: Option<f64>,
    pub writes_per_fsync: Option<f64>,
    /// The admission limit the node reported.
    pub permits: Option<f64>,
    /// The load generator's CPU, cores, when it shares the node's cores
    /// (`None`: it runs apart).
    pub generator_cores: Option<f64>,
}

/// The node's admission defaults (`strata_node::admission`), for a trial
/// whose samples keep only the limit.
const MAX_WAITING: u32 = 1024;
const MAX_WAIT: Dur = Dur(100_000_000);

impl Reading {
    /// From a sweep trial's samples: the same figures as from `/metrics`,
    /// except the fsyncs' distribution (a lognormal through their mean and
    /// p99, `FsyncReading::from_mean_p99`) and the stalls (the pause
    /// detector's lateness as stalls of a uniform length up to the
    /// longest, at the rate that gives that lateness).
    pub fn from_samples(s: &Samples) -> Option<Reading> {
        if s.requests <= 0.0 || s.seconds <= 0.0 || s.cpu_cores <= 0.0 {
            return None;
        }
        let rate = s.requests / s.seconds;
        let cpus = s.cpus.max(1.0);
        // What kept the node's cores busy besides the node (steal priced
        // apart): the generator's share grows with the rate, the rest
        // does not.
        let other = s
            .busy_share
            .map(|b| (b - s.stolen_share.unwrap_or(0.0)) * cpus - s.cpu_cores)
            .unwrap_or(0.0)
            .max(0.0);
        let generator = s.generator_cores.unwrap_or(0.0).clamp(0.0, other);
        let stalls = match (s.paused_share, s.pause_max_s) {
            (Some(p), Some(max)) if p > 0.0 && max >= STALL_FROM => {
                let mean = (STALL_FROM + max) / 2.0;
                Some(Stalls {
                    per_second: p / mean,
                    length: DistSpec::Uniform {
                        min: Dur::from_secs_f64(STALL_FROM),
                        max: Dur::from_secs_f64(max),
                        shift: Dur::ZERO,
                    },
                })
            }
            _ => None,
        };
        let fsync = (s.fsyncs > 0.0 && s.fsync_busy > 0.0).then(|| {
            let mean = s.fsync_busy * s.seconds / s.fsyncs;
            FsyncReading::from_mean_p99(
                s.fsyncs,
                mean,
                s.fsync_p99_s.unwrap_or(mean),
                s.writes_per_fsync,
            )
        });
        let mut r = Reading {
            requests: s.requests,
            write_share: s.write_share.clamp(0.0, 1.0),
            own_cpu_per_request: s.cpu_cores / rate,
            shared_per_request: generator / rate,
            background_cores: other - generator,
            cores: cpus.round() as u32,
            cores_from: "the CPUs the node may run on",
            stolen: 0.0,
            stalls,
            admission: AdmissionReading {
                permits: s.permits.unwrap_or(256.0).round().max(1.0) as u32,
                max_waiting: Some(MAX_WAITING),
                max_wait: Some(MAX_WAIT),
                limit: s.permits,
                mean_hold: None,
            },
            fsync,
            method_means: Vec::new(),
        };
        r.stolen = (s.stolen_share.unwrap_or(0.0) - r.stall_share()).clamp(0.0, MAX_STOLEN);
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lognormal_through_a_mean_and_a_p99() {
        let f = FsyncReading::from_mean_p99(100.0, 0.001, 0.004, None);
        let DistSpec::Lognormal { mean, sd, .. } = f.dist else {
            panic!("{f:?}")
        };
        assert_eq!(mean, Dur(1_000_000));
        // σ² = ln(1 + (sd/mean)²); the p99 is exp(μ + 2.326σ) with
        // μ = ln(mean) − σ²/2.
        let s2 = (1.0 + (sd.0 as f64 / 1e6).powi(2)).ln();
        let p99 = (0.001f64.ln() - s2 / 2.0 + 2.326 * s2.sqrt()).exp();
        assert!((p99 - 0.004).abs() < 1e-5, "{p99}");
        // A p99 at the mean: no spread.
        let flat = FsyncReading::from_mean_p99(1.0, 0.001, 0.001, None);
        assert!(matches!(flat.dist, DistSpec::Lognormal { sd, .. } if sd.0 < 1000));
    }

    #[test]
    fn other_work_splits_into_the_generators_and_the_background() {
        // 1,000 req/s, the node 0.2 cores, its 2 cores 60 % busy, none
        // stolen: 1.0 core of other work, 0.4 of it the generator's.
        let r = Reading::from_samples(&Samples {
            requests: 2000.0,
            seconds: 2.0,
            cpu_cores: 0.2,
            cpus: 2.0,
            busy_share: Some(0.6),
            stolen_share: Some(0.0),
            generator_cores: Some(0.4),
            ..Default::default()
        })
        .unwrap();
        assert!((r.own_cpu_per_request - 200e-6).abs() < 1e-12);
        assert!((r.shared_per_request - 400e-6).abs() < 1e-12);
        assert!((r.background_cores - 0.6).abs() < 1e-9);
        assert!((r.background_share() - 0.3).abs() < 1e-9);
    }
}
