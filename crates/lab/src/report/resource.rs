//! The resources a reading judges and the verdict names, typed once (as
//! `report.json` spells them in `resource`, `cause` and `ranking`). Owns
//! the names; must not judge anything.

pub const FSYNC: &str = "fsync";
pub const STALLS: &str = "stalls";
pub const PAUSE: &str = "pause";
pub const CPU: &str = "cpu";
pub const THREAD: &str = "thread";
pub const IO: &str = "io";
pub const MEMORY: &str = "memory";
pub const ADMISSION: &str = "admission";
pub const NETWORK: &str = "network";
pub const GENERATOR: &str = "generator";
/// The whole machine's CPU (named `cpu` in a verdict).
pub const MACHINE: &str = "machine";
/// A lock the writes wait for, held by another thread.
pub const LOCK: &str = "lock";
