//! `strata cluster check`: its arguments, the run's configuration from
//! them (through the client library for a cluster, `--client`), and the
//! report printed, with the shared keys' linearizability when asked.
//! Owns the command line; must not run the workload (that is `check::run`)
//! nor judge the history (`check::checker`, `check::linear`).

use std::time::Duration;

use crate::check::linear;
use crate::check::run::{run, Config, Mix, Smart};
use crate::check::Quorum;

/// Arguments of a checked run, for a command (`strata load --check`, or a
/// command of its own).
#[derive(clap::Args, Clone, Debug)]
pub struct CheckArgs {
    /// Base URLs of the nodes, comma-separated
    /// (http://127.0.0.1:8080,http://127.0.0.1:8081); each operation goes
    /// to one picked at random.
    pub urls: String,
    /// Closed-loop clients, each running one operation at a time.
    #[arg(long, default_value_t = 16)]
    pub clients: u32,
    /// How long the main phase runs (e.g. 30s, 500ms, 2m).
    #[arg(long, default_value = "10s", value_parser = crate::units::duration)]
    pub duration: Duration,
    /// End the main phase earlier, once this many set writes were
    /// acknowledged.
    #[arg(long)]
    pub writes: Option<u64>,
    /// Weights of set writes, register writes and register reads, and of
    /// the shared keys' writes, reads and deletes if given (default
    /// 50,25,25; with --linearizable 0,0,0,40,50,10).
    #[arg(long, value_parser = Mix::parse)]
    pub mix: Option<Mix>,
    /// Also check that each shared key (`lin/…`, written, read and deleted
    /// by every client, each value once) is linearizable: one order of its
    /// operations respects real time and a register's rules. A violation
    /// is shown with its smallest witness; a key whose search runs past
    /// --lin-limit is reported unknown, never as a pass.
    #[arg(long)]
    pub linearizable: bool,
    /// Keys all clients share.
    #[arg(long, default_value_t = 8)]
    pub shared_keys: u32,
    /// How long the linearizability search may take on one key.
    #[arg(long, default_value = "60s", value_parser = crate::units::duration)]
    pub lin_limit: Duration,
    /// Registers each client owns and overwrites.
    #[arg(long, default_value_t = 4)]
    pub registers: u32,
    /// Pad set values to this many bytes.
    #[arg(long, default_value_t = 0)]
    pub value_size: usize,
    /// Replicas each request goes to (default: the cluster's replication
    /// factor). Needed with --ack-write or --ack-read.
    #[arg(long)]
    pub from: Option<u32>,
    /// Replicas that must acknowledge a write (default: a majority of
    /// from).
    #[arg(long)]
    pub ack_write: Option<u32>,
    /// Replicas that must answer a read (default: a majority of from).
    /// Stale reads are checked only when ack-read + ack-write > from.
    #[arg(long)]
    pub ack_read: Option<u32>,
    /// A request not answered within this is abandoned; its outcome is
    /// unknown.
    #[arg(long, default_value = "5s", value_parser = crate::units::duration)]
    pub timeout: Duration,
    /// How long the final reads may keep retrying while the cluster heals.
    #[arg(long, default_value = "60s", value_parser = crate::units::duration)]
    pub final_deadline: Duration,
    /// Seed of the clients' random streams.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the history as JSON lines to this file.
    #[arg(long)]
    pub history: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub client: crate::load::nodes::ClientArgs,
}

impl CheckArgs {
    /// The run's configuration; with `--client smart` (the default) and a
    /// cluster of more than one member, its operations go through the
    /// client library and its nodes are the cluster's members.
    pub fn config(&self) -> Result<Config, String> {
        let nodes = crate::load::nodes::Nodes::discover(&self.urls, &self.client)?;
        Ok(Config {
            clients: self.clients,
            seed: self.seed,
            duration: self.duration,
            target_writes: self.writes,
            mix: self.mix.unwrap_or(if self.linearizable {
                Mix::linearizable()
            } else {
                Mix::default()
            }),
            registers_per_client: self.registers,
            shared_keys: self.shared_keys,
            value_size: self.value_size,
            quorum: Quorum {
                from: self.from,
                ack_write: self.ack_write,
                ack_read: self.ack_read,
            },
            timeout: self.timeout,
            final_deadline: self.final_deadline,
            client: nodes.client.map(Smart),
            ..Config::new(nodes.urls)
        })
    }
}

/// Run the check the arguments describe, print its report on stdout and
/// keep the history if asked; whether it passed.
pub fn command(args: &CheckArgs) -> Result<bool, String> {
    let cfg = args.config()?;
    eprintln!(
        "checking {} with {} clients for up to {:?}{} ({})",
        cfg.urls.join(","),
        cfg.clients,
        cfg.duration,
        cfg.target_writes
            .map(|n| format!(" or {n} acknowledged set writes"))
            .unwrap_or_default(),
        cfg.quorum,
    );
    let out = run(&cfg)?;
    if let Some(path) = &args.history {
        out.history
            .write_jsonl(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!(
            "history: {} operations in {}",
            out.history.ops.len(),
            path.display()
        );
    }
    eprintln!(
        "main phase {:.1}s, final reads {:.1}s",
        out.main.as_secs_f64(),
        (out.total - out.main).as_secs_f64()
    );
    print!("{}", out.report);
    if !args.linearizable {
        return Ok(out.report.passed());
    }
    let lin = linear::check_shared(&out.history, args.lin_limit);
    print!("{lin}");
    Ok(out.report.passed() && lin.linearizable())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_make_a_config() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            check: CheckArgs,
        }
        let cli = Cli::try_parse_from([
            "x",
            "http://127.0.0.1:1,http://127.0.0.1:2",
            "--duration",
            "2s",
            "--from",
            "3",
            "--ack-write",
            "2",
            "--ack-read",
            "2",
            "--mix",
            "2,1,1",
            "--client",
            "direct",
        ])
        .unwrap();
        let c = cli.check.config().unwrap();
        assert!(c.client.is_none());
        assert_eq!(c.urls.len(), 2);
        assert_eq!(c.duration, Duration::from_secs(2));
        assert_eq!(c.quorum, Quorum::explicit(2, 2, 3));
        assert_eq!(c.mix.set_writes, 2.0);
        assert_eq!(c.timeout, Duration::from_secs(5));
    }
}
