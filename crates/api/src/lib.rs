//! What a Strata node and its clients agree on, written once: how a
//! duration is written on a command line (`duration`) and a byte count
//! for people (`human`), who may do
//! what (`access`: roles, token digests, the operator token), where a key
//! lives (`placement`: the nodes place keys with it, clients route with
//! it), the head of the cluster view's JSON (`view`) and the operator
//! endpoints' bodies (`operate`), headers a node adds
//! and what they promise (`headers`), the stages an
//! answer's `Server-Timing` header names and how it is written and read
//! (`timing`), the names of the metrics the lab reads from `/metrics`
//! to judge what saturated and the simulator to model a node (`metrics`),
//! the text format they are read in (`exposition`), the paths a node
//! serves (`routes`), one thread's
//! times as the node exports them and the lab reads them (`threads`), and how a key is
//! written in a query string (`query`). The node writes these, clients and
//! the lab read them; neither spells a name of its own. Owns names, shapes
//! and formats; must not do I/O or depend on another Strata crate.

pub mod access;
pub mod duration;
pub mod exposition;
pub mod headers;
pub mod human;
pub mod metrics;
pub mod operate;
pub mod placement;
pub mod query;
pub mod routes;
pub mod threads;
pub mod timing;
pub mod view;
