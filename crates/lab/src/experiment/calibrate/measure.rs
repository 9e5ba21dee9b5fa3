//! One calibration step's measurement: a load at one rate through some
//! nodes, with every node's `/metrics` before and after it, this
//! process's own CPU and sleeps and the machine's busy time around it.
//! Used by the cluster's climb and role step (`cluster`) and the value
//! steps (`value`). Owns the measuring; must not model or judge anything.

use strata_sim::calibrate::cluster::NodeScrape;

use super::CalibrateArgs;
use crate::experiment::trial::Progress;
use crate::load::driver;
use crate::load::nodes::Nodes;
use crate::report::scrape::fetch_metrics;

/// CPU seconds this process has used (user + system), and the times its
/// threads slept for something (voluntary context switches).
pub fn own_cpu() -> Option<(f64, f64)> {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Some((t(u.ru_utime) + t(u.ru_stime), u.ru_nvcsw as f64))
}

/// CPU seconds the whole machine has been busy (Linux `/proc/stat`: user,
/// nice, system, irq, softirq, steal), to tell whether something besides
/// the nodes and the generator took the cores.
pub fn host_busy() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 8 {
        return None;
    }
    // SAFETY: sysconf reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    Some((v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz)
}

fn scrape_all(urls: &[String]) -> Result<Vec<String>, String> {
    urls.iter()
        .map(|u| fetch_metrics(u).map_err(|e| format!("{u}/metrics: {e}")))
        .collect()
}

/// One load at `rate` through `through`, with every node's metrics around
/// it: the scrapes, the driver's outcome, the generator's CPU seconds and
/// the seconds the nodes' counters cover.
pub struct Measured {
    pub scrapes: Vec<NodeScrape>,
    pub outcome: driver::Outcome,
    pub generator_cpu_s: Option<f64>,
    /// The generator's voluntary context switches (its sleeps).
    pub generator_sleeps: Option<f64>,
    /// The whole machine's busy CPU seconds over the load.
    pub host_busy_s: Option<f64>,
    pub secs: f64,
}

#[allow(clippy::too_many_arguments)]
pub fn measure(
    a: &CalibrateArgs,
    all: &Nodes,
    through: &Nodes,
    workload: &std::sync::Arc<crate::load::workload::Workload>,
    rate: f64,
    seed: u64,
    label: &str,
    progress: &Progress,
) -> Result<Measured, String> {
    let t = &a.target;
    let before = scrape_all(&all.urls)?;
    let cpu0 = own_cpu();
    let host0 = host_busy();
    let plan = t.plan(through, workload, t.open(rate), a.duration, seed);
    let o = driver::run(&plan, &mut |_| {}, &mut |s| progress.show(label, s))?;
    progress.finish();
    let cpu1 = own_cpu();
    let host1 = host_busy();
    let after = scrape_all(&all.urls)?;
    let scrapes = all
        .urls
        .iter()
        .zip(before)
        .zip(after)
        .map(|((u, b), a)| NodeScrape {
            url: u.clone(),
            before: b,
            after: a,
        })
        .collect();
    Ok(Measured {
        secs: o.elapsed.as_secs_f64() + t.warmup,
        outcome: o,
        generator_cpu_s: cpu0.zip(cpu1).map(|(x, y)| y.0 - x.0),
        generator_sleeps: cpu0.zip(cpu1).map(|(x, y)| y.1 - x.1),
        host_busy_s: host0.zip(host1).map(|(x, y)| y - x),
        scrapes,
    })
}
