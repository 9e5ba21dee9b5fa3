//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use std::time::Duration;

use strata_engine::{Durability, Options};

/// Options that make flushes and compactions happen after a few kilobytes,
/// so that small tests exercise every layer.
pub fn tiny() -> Options {
    Options {
        durability: Durability::None,
        memtable_size: 8 << 10,
        max_immutable_memtables: 2,
        block_size: 256,
        block_cache_size: 64 << 10,
        l0_compaction_trigger: 2,
        l0_slowdown_trigger: 100,
        l0_stop_trigger: 200,
        stall_timeout: Duration::from_secs(20),
        level1_size: 32 << 10,
        level_multiplier: 4,
        target_file_size: 16 << 10,
        manifest_checkpoint_size: 8 << 10,
        ..Options::default()
    }
}
