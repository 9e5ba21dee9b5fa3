//! The nemesis: clusters of real nodes on one machine and the faults done
//! to them: `strata cluster up` (start N
//! `strata serve` processes on loopback, optionally with every node's
//! internal traffic through a fault-injecting TCP proxy), faults injected
//! into it on a schedule, and campaigns of checked runs under faults (the
//! operator's commands, `strata cluster status/join/leave/repair`, backup
//! and tokens, are `strata-ctl`'s). Owns
//! starting, signalling and observing node processes from outside; must
//! not know the node's internals: it speaks HTTP, passes command-line
//! flags and relays TCP bytes, nothing more.
//!
//! | file | owns |
//! | --- | --- |
//! | `local/` | [`local::LocalCluster`]: ports, data dirs, the secret, processes, signals, restarts |
//! | `netns.rs` | [`netns::NetLab`]: each node in a network namespace, nftables cuts of its client and internal traffic |
//! | `proxy/` | [`proxy::FaultProxy`]: TCP relays that can black-hole or reset a node's connections |
//! | `fault.rs` | [`fault::Plan`]: a node killed, stopped, partitioned or clock-shifted during a run; the hint backlog that says when it is level |
//! | `step.rs` | the `--fault` grammar ([`step::Step`]), its check against a cluster, and the [`step::Action`]s a step does and undoes, as control-socket lines |
//! | `schedule.rs` | a run's fault schedule, injected on time into a [`schedule::Target`], undone, level times, recovery from the timeline |
//! | `during.rs` | what runs alongside a load: its fault schedule and the checker's clients, started and stopped with it |
//! | `control.rs` | the control socket of `strata cluster up` (`DIR/control.sock`), so that `strata load --fault` can reach the cluster it started |
//! | `campaign.rs` | `strata cluster campaign`: checked runs under each fault, own stores compared with acknowledged writes, totals |
//! | `up.rs` | `strata cluster up` |
//! | `delay.rs` | `strata cluster delay`: a TCP relay that adds a fixed delay each way (a distant network path, in a namespace; this kernel has no netem) |
//! | `fake_node.rs` | tests only: a stand-in node for the tests of the above |

pub mod campaign;
pub mod control;
pub mod delay;
pub mod during;
#[cfg(test)]
mod fake_node;
pub mod fault;
pub mod local;
pub mod netns;
pub mod proxy;
pub mod schedule;
pub mod step;
pub mod up;
