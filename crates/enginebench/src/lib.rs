//! Tools that exercise the engine as a whole: a db_bench-style benchmark
//! (`bench`) and a crash/stress harness (`crash`). Must not contain engine
//! logic; it drives the engine's public API only.

pub mod bench;
pub mod crash;
