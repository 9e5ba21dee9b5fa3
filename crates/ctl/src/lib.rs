//! Strata's operator commands over the HTTP API, for the people who run a
//! cluster: each node's view side by side (`status`), a member joining or
//! leaving and the change followed to its end (`change`), anti-entropy on
//! demand (`repair`), a consistent backup of every node downloaded and a
//! data directory restored from one (`backup`), bearer tokens made
//! for a tokens file (`token`) and cluster secrets (`secret`), each
//! written to a file only its owner reads (`private`). They speak
//! to nodes through the client's blocking face (`strata_client::control`)
//! and write byte counts as every command does (`strata_api::human`).
//!
//! Must not generate load or judge a run (the lab does), and must not
//! depend on the node, the cluster or the engine: it speaks HTTP and reads
//! the contracts in `strata-api`.

pub mod backup;
pub mod change;
pub mod private;
pub mod repair;
pub mod secret;
pub mod status;
pub mod token;
