//! The YCSB core workloads A–F as key-value mixes, with the proportions and
//! request distributions of YCSB's `workloads/workloada` … `workloadf`
//! property files and CoreWorkload's defaults (10 fields × 100 bytes per
//! record, so a 1000-byte value; scans of uniform length 1..=100). Owns
//! those definitions only; must not generate operations itself (mix.rs does).

use super::keys::KeyDist;
use super::mix::{KvParams, RangeLen, Ratios};
use super::values::ValueSize;
use super::zipfian::DEFAULT_THETA;

/// YCSB's record: fieldcount 10 × fieldlength 100.
pub const RECORD_BYTES: usize = 10 * 100;
/// YCSB's `maxscanlength` default.
pub const MAX_SCAN_LENGTH: u64 = 100;

/// The names this module defines.
pub const NAMES: [&str; 6] = ["ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"];

/// The parameters of YCSB core workload `name` (`ycsb-a` … `ycsb-f`) over
/// `records` records (YCSB's recordcount).
pub fn params(name: &str, records: u64) -> Option<KvParams> {
    let zipf = KeyDist::Zipfian {
        theta: DEFAULT_THETA,
        scrambled: true,
    };
    let r = Ratios::default();
    let (ratios, key) = match name {
        // Update heavy: 50/50 read/update, zipfian.
        "ycsb-a" => (
            Ratios {
                get: 0.5,
                put: 0.5,
                ..r
            },
            zipf,
        ),
        // Read mostly: 95/5 read/update, zipfian.
        "ycsb-b" => (
            Ratios {
                get: 0.95,
                put: 0.05,
                ..r
            },
            zipf,
        ),
        // Read only, zipfian.
        "ycsb-c" => (Ratios { get: 1.0, ..r }, zipf),
        // Read latest: 95/5 read/insert, latest.
        "ycsb-d" => (
            Ratios {
                get: 0.95,
                insert: 0.05,
                ..r
            },
            KeyDist::Latest {
                theta: DEFAULT_THETA,
            },
        ),
        // Short ranges: 95/5 scan/insert, zipfian scan start.
        "ycsb-e" => (
            Ratios {
                range: 0.95,
                insert: 0.05,
                ..r
            },
            zipf,
        ),
        // Read-modify-write: 50/50 read/RMW, zipfian.
        "ycsb-f" => (
            Ratios {
                get: 0.5,
                rmw: 0.5,
                ..r
            },
            zipf,
        ),
        _ => return None,
    };
    Some(KvParams {
        name: name.to_string(),
        ratios,
        key,
        records,
        value: ValueSize::Fixed(RECORD_BYTES),
        range: RangeLen::Uniform {
            min: 1,
            max: MAX_SCAN_LENGTH,
        },
        key_prefix: String::new(),
        preload: true,
    })
}
