//! What a write's value size costs, from two calibration steps at one rate
//! that differ only in the writes' value size: the nodes' CPU per write
//! and their WAL's fsync time per KiB written, each the difference between
//! the steps over the difference in bytes (`ValueSpec`). At one rate the
//! costs that fall with the load (a runtime worker's wake-ups) are the
//! same in both steps and cancel. Owns that fit; must not run load.

use crate::scenario::cluster::ValueSpec;

use super::cluster::{node_delta, NodeScrape};
use super::{names, CalibrationError};
use crate::units::{human_ns, Dur};

/// The value size the value step writes, for writes of `small` bytes:
/// four times as large, and at least 4 KiB (a page, where a store's
/// costs per byte start to show).
pub fn bigger(small: u64) -> u64 {
    (small * 4).max(4096)
}

/// What one step's nodes did together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTotals {
    /// Client writes they answered.
    pub writes: f64,
    pub cpu_s: f64,
    /// Their WALs' fsyncs and the seconds those took.
    pub fsyncs: f64,
    pub fsync_s: f64,
    /// Bytes their WALs wrote.
    pub wal_bytes: f64,
}

/// The step's totals over every node's scrapes.
pub fn totals(scrapes: &[NodeScrape]) -> Result<StepTotals, CalibrationError> {
    let mut t = StepTotals::default();
    for s in scrapes {
        let d = node_delta(s)?;
        t.writes += d.writes;
        t.cpu_s += d.cpu_s;
        if let Some(h) = &d.fsync {
            t.fsyncs += h.count;
            t.fsync_s += h.sum;
        }
        t.wal_bytes += d.metrics.get(names::WAL_WRITTEN_BYTES).unwrap_or(0.0);
    }
    Ok(t)
}

/// The costs of a KiB of value from a step at `small` bytes and one at
/// `big` bytes (the same rate), and what the fit saw, in words. A
/// difference the noise made negative is taken as none, and said.
pub fn fit(
    small: u64,
    reference: StepTotals,
    big: u64,
    bigger: StepTotals,
) -> Result<(ValueSpec, Vec<String>), CalibrationError> {
    if big <= small {
        return Err(CalibrationError::Invalid(format!(
            "the value step's size {big} must be above the workload's {small}"
        )));
    }
    if reference.writes <= 0.0 || bigger.writes <= 0.0 {
        return Err(CalibrationError::Invalid(
            "the value steps answered no writes: the value size what-if needs a workload that writes".into(),
        ));
    }
    let kib = (big - small) as f64 / 1024.0;
    let mut notes = Vec::new();
    let per_write = |t: &StepTotals| t.cpu_s / t.writes;
    let cpu = (per_write(&bigger) - per_write(&reference)) / kib;
    notes.push(format!(
        "value: CPU per write {} at {small} B, {} at {big} B: {} per KiB{}",
        human_ns(per_write(&reference) * 1e9),
        human_ns(per_write(&bigger) * 1e9),
        human_ns(cpu.max(0.0) * 1e9),
        if cpu < 0.0 {
            " (the larger values cost less: noise, taken as none)"
        } else {
            ""
        }
    ));
    // The WAL: a group's fsync against the KiB it carried.
    let per_group = |t: &StepTotals| {
        (t.fsyncs > 0.0).then(|| (t.fsync_s / t.fsyncs, t.wal_bytes / t.fsyncs / 1024.0))
    };
    let wal = match (per_group(&reference), per_group(&bigger)) {
        (Some((f0, k0)), Some((f1, k1))) if k1 > k0 => {
            let w = (f1 - f0) / (k1 - k0);
            notes.push(format!(
                "value: fsync {} carrying {:.1} KiB, {} carrying {:.1} KiB: {} per KiB{}",
                human_ns(f0 * 1e9),
                k0,
                human_ns(f1 * 1e9),
                k1,
                human_ns(w.max(0.0) * 1e9),
                if w < 0.0 {
                    " (the larger groups synced faster: noise, taken as none)"
                } else {
                    ""
                }
            ));
            w.max(0.0)
        }
        (None, None) => 0.0,
        _ => {
            notes.push(
                "value: the WAL's groups did not grow with the values: no WAL cost per KiB".into(),
            );
            0.0
        }
    };
    let d = |s: f64| Dur((s * 1e9).round() as u64);
    Ok((
        ValueSpec {
            bytes: small,
            measured_at: small,
            cpu_per_kib: d(cpu.max(0.0)),
            wal_per_kib: d(wal),
        },
        notes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(writes: f64, cpu_s: f64, fsyncs: f64, fsync_s: f64, wal_bytes: f64) -> StepTotals {
        StepTotals {
            writes,
            cpu_s,
            fsyncs,
            fsync_s,
            wal_bytes,
        }
    }

    #[test]
    fn the_costs_per_kib_are_the_steps_differences_over_the_bytes() {
        // 10,000 writes each way: 20 us a write at 100 B, 28 us at 4,196 B
        // (4 KiB more: 2 us a KiB); 1,000 fsyncs of 1 ms carrying 1 KiB,
        // then of 1.4 ms carrying 41 KiB (10 us a KiB).
        let (v, notes) = fit(
            100,
            step(10_000.0, 0.2, 1000.0, 1.0, 1024.0 * 1000.0),
            4196,
            step(10_000.0, 0.28, 1000.0, 1.4, 41.0 * 1024.0 * 1000.0),
        )
        .unwrap();
        assert_eq!(v.cpu_per_kib, Dur(2_000));
        assert_eq!(v.wal_per_kib, Dur(10_000));
        assert_eq!((v.bytes, v.measured_at), (100, 100));
        assert_eq!(notes.len(), 2, "{notes:?}");
    }

    #[test]
    fn a_difference_the_noise_made_negative_is_none_and_said() {
        let (v, notes) = fit(
            100,
            step(10_000.0, 0.3, 0.0, 0.0, 0.0),
            4196,
            step(10_000.0, 0.28, 0.0, 0.0, 0.0),
        )
        .unwrap();
        assert_eq!(v.cpu_per_kib, Dur(0));
        assert_eq!(v.wal_per_kib, Dur(0));
        assert!(notes[0].contains("noise"), "{notes:?}");
    }

    #[test]
    fn steps_without_writes_cannot_say() {
        let e = fit(
            100,
            step(0.0, 0.2, 0.0, 0.0, 0.0),
            4196,
            step(0.0, 0.2, 0.0, 0.0, 0.0),
        );
        assert!(e.unwrap_err().to_string().contains("workload that writes"));
    }
}
