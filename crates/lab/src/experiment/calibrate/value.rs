//! The value step pair: what a write's value size costs, for the
//! simulator's "with larger values" what-if. Two loads at one rate, through
//! every node, that differ only in the writes' value size (the workload's
//! `--value-size`, then `calibrate::value::bigger` of it); the simulator fits
//! the CPU per KiB and the WAL's time per KiB from their metrics
//! (`strata_sim::calibrate::value`). Runs only for the built-ins whose
//! writes take `--value-size` (`put`, `mixed`).
//!
//! Owns those two steps; must not fit anything itself.

use serde::Serialize;
use strata_sim::calibrate::value::{bigger, fit, totals, StepTotals};
use strata_sim::scenario::cluster::ValueSpec;

use super::measure::measure;
use super::CalibrateArgs;
use crate::experiment::slo::fmt_num;
use crate::experiment::trial::Progress;
use crate::load::nodes::Nodes;

/// The value steps run at this share of the last predicted capacity (a
/// load both sizes carry, so that neither step queues).
pub const VALUE_STEP_SHARE: f64 = 0.3;

/// The two steps and what the simulator made of them.
#[derive(Clone, Debug, Serialize)]
pub struct ValueStep {
    pub offered: f64,
    /// The workload's value size, and the value step's.
    pub small: u64,
    pub big: u64,
    /// Each step's achieved rate.
    pub achieved: [f64; 2],
    /// Each step's CPU seconds per write (all nodes).
    pub cpu_per_write_s: [f64; 2],
    pub spec: ValueSpec,
    pub notes: Vec<String>,
}

/// Run the pair at `rate`; None (said) when the workload's values are not
/// `--value-size`'s or the steps wrote nothing.
pub fn steps(
    a: &CalibrateArgs,
    nodes: &Nodes,
    rate: f64,
    seed: u64,
    progress: &Progress,
    on_line: &mut dyn FnMut(&str),
) -> Result<Option<ValueStep>, String> {
    let t = &a.target;
    let small = t.value_size as u64;
    let big = bigger(small);
    let Some(larger) = t.with_value_size(big as usize) else {
        on_line(&format!(
            "no value step: the {} workload's values are its own (the value-size what-if needs put or mixed)",
            t.workload
        ));
        return Ok(None);
    };
    let larger = larger?;
    let workload = t.workload()?;
    let run = |w, bytes: u64, k: u64| -> Result<(StepTotals, f64), String> {
        let label = format!(
            "value step, {bytes}-byte writes at {} req/s: ",
            fmt_num(rate)
        );
        let m = measure(
            a,
            nodes,
            nodes,
            w,
            rate,
            seed.wrapping_add(300 + k),
            &label,
            progress,
        )?;
        Ok((
            totals(&m.scrapes).map_err(|e| e.to_string())?,
            m.outcome.achieved_rate(),
        ))
    };
    let (t0, r0) = run(&workload, small, 0)?;
    let (t1, r1) = run(&larger, big, 1)?;
    let (spec, notes) = match fit(small, t0, big, t1) {
        Ok(x) => x,
        Err(e) => {
            on_line(&format!("no value step: {e}"));
            return Ok(None);
        }
    };
    on_line(&format!(
        "value steps at {} req/s, {small}-byte then {big}-byte writes (achieved {} and {}): {} CPU and {} of WAL time per KiB",
        fmt_num(rate.round()),
        fmt_num(r0.round()),
        fmt_num(r1.round()),
        strata_sim::units::human_ns(spec.cpu_per_kib.0 as f64),
        strata_sim::units::human_ns(spec.wal_per_kib.0 as f64),
    ));
    for n in &notes {
        on_line(&format!("  {n}"));
    }
    Ok(Some(ValueStep {
        offered: rate,
        small,
        big,
        achieved: [r0, r1],
        cpu_per_write_s: [t0.cpu_s / t0.writes.max(1.0), t1.cpu_s / t1.writes.max(1.0)],
        spec,
        notes,
    }))
}
