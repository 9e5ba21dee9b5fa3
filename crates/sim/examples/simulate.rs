//! Times the library call for one scenario (process start excluded):
//! `cargo run --release -p strata-sim --example simulate -- SCENARIO.toml [--clients N] [--duration D] ...`
//! takes the same arguments as `strata sim` and prints its report.

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: strata_sim::SimArgs,
}

fn main() {
    let cli = Cli::parse();
    let started = std::time::Instant::now();
    if let Err(e) = strata_sim::run(&cli.args, None) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    eprintln!("library call: {:.3} s", started.elapsed().as_secs_f64());
}
