//! The evidence a verdict reads from `/metrics` about the machine and the
//! process rather than the store: the pause detector, the threads' waits
//! for a CPU, the machine's pressure, the writers waiting on the WAL (the
//! process's own CPU, memory and descriptors are `process`'s). Owns
//! encoding them; must not keep state of its own.

use prometheus_client::encoding::DescriptorEncoder;

use super::state::{counter, gauge, StateCollector};

impl StateCollector {
    /// The pause detector, the threads' wait for a CPU, the machine's
    /// pressure, the writers waiting on the WAL.
    pub(super) fn encode_evidence(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        use crate::evidence::{all_threads, pressure, run_queue_wait};
        use strata_api::metrics as m;
        gauge(
            e,
            m::PAUSE_MAX_SECONDS,
            "The latest the pause detector woke over the last 10 seconds",
            self.pauses.max_lateness().as_secs_f64(),
        )?;
        // One read of every thread: the process's wait and each thread's.
        let threads = all_threads();
        counter(
            e,
            m::RUN_QUEUE_WAIT_SECONDS,
            "Time this process's threads were runnable but waiting for a CPU (schedstat, live threads)",
            run_queue_wait(&threads).as_secs_f64(),
        )?;
        super::threads::encode(e, strata_api::threads::busiest(threads))?;
        if let Some(c) = crate::evidence::allowed_cpus() {
            counter(
                e,
                m::ALLOWED_CPUS_BUSY_SECONDS,
                "Busy time of the CPUs this process may run on (its affinity), whoever used them (/proc/stat)",
                c.busy.as_secs_f64(),
            )?;
            counter(
                e,
                m::ALLOWED_CPUS_STOLEN_SECONDS,
                "Of that busy time, what the hypervisor ran other guests in (/proc/stat's steal)",
                c.stolen.as_secs_f64(),
            )?;
        }
        if let Some(t) = crate::evidence::cpu_throttled() {
            counter(
                e,
                m::CPU_THROTTLED_SECONDS,
                "Time this process's cgroup was held back by its CPU quota (cpu.stat's throttled time)",
                t.as_secs_f64(),
            )?;
        }
        for (name, res) in [
            (m::PRESSURE_CPU_SECONDS, "cpu"),
            (m::PRESSURE_IO_SECONDS, "io"),
            (m::PRESSURE_MEMORY_SECONDS, "memory"),
        ] {
            if let Some(d) = pressure(res) {
                counter(
                    e,
                    name,
                    &format!("The machine's pressure stall time: at least one task waited for {res} (/proc/pressure/{res}, some)"),
                    d.as_secs_f64(),
                )?;
            }
        }
        gauge(
            e,
            m::WAL_WRITERS_WAITING,
            "Writes handed to the applier and not yet durable: the writers waiting on the WAL",
            self.cluster.writers_waiting() as f64,
        )
    }
}
