//! Each of the node's threads, read at scrape time: its time on a CPU,
//! its time runnable but waiting for one, and how often it was put on
//! one (`strata_api::threads`, the busiest of `evidence::all_threads`). Owns that
//! family's encoding; must not judge a thread.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;

/// Each thread's time on a CPU and waiting for one, by name and id.
pub(super) fn encode(
    e: &mut DescriptorEncoder,
    threads: Vec<strata_api::threads::ThreadTimes>,
) -> std::fmt::Result {
    use strata_api::threads as t;
    for (name, help, field) in [
        (
            t::CPU_SECONDS,
            "Each thread's time on a CPU (schedstat), the busiest 64",
            0,
        ),
        (
            t::WAIT_SECONDS,
            "Each thread's time runnable but waiting for a CPU (schedstat), the busiest 64",
            1,
        ),
        (
            t::SLICES,
            "Times each thread was put on a CPU (schedstat), the busiest 64",
            2,
        ),
    ] {
        let name = name.strip_suffix("_total").unwrap_or(name);
        let mut fam =
            e.encode_descriptor(name, help, None, ConstCounter::new(0f64).metric_type())?;
        for x in &threads {
            let v = match field {
                0 => x.on_cpu.as_secs_f64(),
                1 => x.waiting.as_secs_f64(),
                _ => x.slices as f64,
            };
            ConstCounter::new(v).encode(fam.encode_family(&[
                (t::THREAD_LABEL, x.name.clone()),
                (t::TID_LABEL, x.tid.to_string()),
            ])?)?;
        }
    }
    Ok(())
}
