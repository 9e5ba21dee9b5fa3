//! The Strata node: the v0 HTTP API (`docs/api.md`) over the cluster
//! layer, with explicit admission control between the network and the store.
//! `config` reads options, `access` decides who may call what, `reply` builds plain answers, `body` reads PUT bodies before admission within a node-wide byte budget, `query` parses query strings, `admission` bounds
//! the work in service and waiting, `arrival` times when a request
//! reached its socket, `overload` keeps the queue of connections waiting
//! to be read short, `heads` bounds connections whose first request head has
//! not all arrived (a slow-header flood), `api` maps HTTP to cluster calls (`operator` the cluster's operator endpoints: view, join and leave, repair), `peer` opens internal connections, `metrics` serves
//! Prometheus metrics, `evidence` measures the process's pauses and its
//! wait for a CPU, `probes` fires USDT probes, `profile`
//! serves CPU profiles, `backup` serves checkpoints of the store (taken by
//! the engine) file by file, `shards` builds the runtimes (one per core, or one
//! shared) and places each connection on one, `server` runs the process. Must not touch the
//! store's own files directly.

pub mod access;
pub mod admission;
pub mod api;
pub mod arrival;
pub mod backup;
pub mod body;
pub mod config;
pub mod evidence;
pub mod heads;
pub mod metrics;
pub mod operator;
pub mod overload;
pub mod peer;
pub mod probes;
pub mod profile;
pub mod query;
pub mod reply;
pub mod server;
pub mod shards;

pub use config::{Config, ServeArgs};
pub use server::run;
