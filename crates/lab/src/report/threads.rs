//! Every thread of every node, and of the generator, over a trial: the
//! node's per-thread counters (`strata_api::threads`) read from each
//! scrape into a bounded log, and what each thread did between two
//! instants (cores on a CPU, cores' worth waiting for one), and the
//! report's section of them. Owns the parsing of those families, the log
//! and the section; must not judge a thread (the verdict does).

use std::collections::VecDeque;
use std::time::Duration;

use strata_api::threads::{self as th, ThreadRate, ThreadTimes};

use crate::report::model::Report;

/// Each thread's times in one `/metrics` text.
pub fn thread_times(text: &str) -> Vec<ThreadTimes> {
    let mut out: Vec<ThreadTimes> = Vec::new();
    for line in text.lines() {
        if !line.starts_with("strata_thread_") {
            continue;
        }
        let Ok(parsed) = strata_api::exposition::parse_metrics(line) else {
            continue;
        };
        for x in parsed.samples {
            let field = match x.name.as_str() {
                th::CPU_SECONDS => 0,
                th::WAIT_SECONDS => 1,
                th::SLICES => 2,
                _ => continue,
            };
            let label = |k: &str| x.labels.iter().find(|(l, _)| l == k).map(|(_, v)| v);
            let (Some(name), Some(tid)) = (
                label(th::THREAD_LABEL),
                label(th::TID_LABEL).and_then(|t| t.parse::<u32>().ok()),
            ) else {
                continue;
            };
            let d = Duration::from_secs_f64(x.value.max(0.0));
            let i = match out.iter().position(|t| t.tid == tid && &t.name == name) {
                Some(i) => i,
                None => {
                    out.push(ThreadTimes {
                        name: name.clone(),
                        tid,
                        on_cpu: Duration::ZERO,
                        waiting: Duration::ZERO,
                        slices: 0,
                    });
                    out.len() - 1
                }
            };
            match field {
                0 => out[i].on_cpu = d,
                1 => out[i].waiting = d,
                _ => out[i].slices = x.value.max(0.0) as u64,
            }
        }
    }
    out
}

/// The readings of one node's threads, each at a time relative to the
/// run's start; the oldest go first past `CAP` (an hour of seconds).
#[derive(Debug, Default)]
pub struct ThreadLog(VecDeque<(f64, Vec<ThreadTimes>)>);

const CAP: usize = 3600;

impl ThreadLog {
    pub fn push(&mut self, t_s: f64, threads: Vec<ThreadTimes>) {
        if threads.is_empty() {
            return;
        }
        if self.0.len() == CAP {
            self.0.pop_front();
        }
        self.0.push_back((t_s, threads));
    }

    /// What each thread did between the first reading at or after
    /// `from_s` and the last at or before `to_s` (none with fewer than two
    /// readings there), busiest first.
    pub fn between(&self, from_s: f64, to_s: f64) -> Vec<ThreadRate> {
        let inside = || self.0.iter().filter(|(t, _)| *t >= from_s && *t <= to_s);
        let (Some(a), Some(b)) = (inside().next(), inside().next_back()) else {
            return Vec::new();
        };
        if b.0 <= a.0 {
            return Vec::new();
        }
        th::rates(&a.1, &b.1, b.0 - a.0)
    }
}

/// The threads of the trial the verdict read, node by node and the
/// generator's, as a Markdown section (empty when none were read): the
/// busiest `SHOWN` of each, with their CPU and their wait for one.
pub fn markdown(r: &Report) -> String {
    let Some(t) = r
        .verdict_trial_rate
        .and_then(|rate| r.trials.iter().rfind(|t| t.offered_rate == Some(rate)))
    else {
        return String::new();
    };
    let mut rows: Vec<String> = Vec::new();
    let mut add = |who: &str, threads: &[ThreadRate]| {
        for x in threads.iter().take(SHOWN) {
            rows.push(format!(
                "| {who} | {} | {} | {:.0}% | {:.0}% |",
                x.name,
                x.tid,
                x.cpu * 100.0,
                x.waiting * 100.0
            ));
        }
    };
    for (i, n) in t.per_node.iter().enumerate() {
        add(&format!("node-{}", i + 1), &n.threads);
    }
    add("generator", &t.generator_threads);
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n## Threads\n\nEvery process's busiest threads in the trial at {} req/s, the one the verdict read: the share of one core each used, and the share of a core's time it spent runnable but waiting for one.\n\n| process | thread | tid | CPU | waiting |\n| --- | --- | ---: | ---: | ---: |\n{}\n",
        t.offered_rate.map(|r| format!("{r:.0}")).unwrap_or_default(),
        rows.join("\n")
    )
}

/// Threads shown per process.
const SHOWN: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_read_from_a_scrape_and_told_apart_by_id() {
        let text = "# TYPE strata_thread_cpu_seconds counter\n\
            strata_thread_cpu_seconds_total{thread=\"strata-node\",tid=\"10\"} 1.5\n\
            strata_thread_cpu_seconds_total{thread=\"strata-node\",tid=\"11\"} 0.5\n\
            strata_thread_run_queue_wait_seconds_total{thread=\"strata-node\",tid=\"10\"} 0.25\n\
            strata_thread_timeslices_total{thread=\"strata-node\",tid=\"10\"} 500\n\
            strata_process_cpu_seconds_total 9\n";
        let ts = thread_times(text);
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0].on_cpu, Duration::from_millis(1500));
        assert_eq!(ts[0].waiting, Duration::from_millis(250));
        assert_eq!(ts[0].slices, 500);
        assert_eq!((ts[1].tid, ts[1].on_cpu), (11, Duration::from_millis(500)));
        let mut log = ThreadLog::default();
        log.push(1.0, ts.clone());
        let mut later = ts;
        later[0].on_cpu += Duration::from_millis(1900);
        log.push(3.0, later);
        log.push(9.0, Vec::new());
        let r = log.between(0.5, 5.0);
        assert_eq!(r[0].tid, 10);
        assert!((r[0].cpu - 0.95).abs() < 1e-9, "{r:?}");
        assert!(log.between(2.0, 5.0).is_empty());
    }
}
