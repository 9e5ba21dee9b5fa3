//! `engine-bench`: the db_bench-style engine benchmark as a standalone
//! binary, for comparison runs (`--engine fjall` needs `--features fjall`).
//! The `strata` CLI offers the same as `strata bench engine`.

use clap::Parser;
use strata_enginebench::bench::{run, BenchArgs};

// The allocator of the `strata` binary, so that `engine-bench` and
// `strata bench engine` measure the same thing and fjall gets it too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "engine-bench",
    about = "db_bench-style benchmark of the Strata engine (and fjall, for comparison)"
)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(&cli.args) {
        eprintln!("engine-bench: {e}");
        std::process::exit(1);
    }
}
