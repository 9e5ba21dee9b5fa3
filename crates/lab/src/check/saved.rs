//! `strata cluster history`: a saved history checked or exported. Reads
//! Strata's JSON lines (`strata cluster check --history`), Jepsen's
//! `history.edn` or the Porcupine harness's JSON; checks every key for
//! linearizability (or only the shared `lin/…` keys) with the basic
//! checker's report beside it; writes the history in Porcupine's or
//! Jepsen's format for another checker. Owns the command; must not judge
//! (the checkers do) nor translate (`check::formats`).

use std::path::PathBuf;
use std::time::Duration;

use super::formats::{self, PorcupineOp};
use super::linear::{self, LinReport};
use super::{History, KeyRole};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Strata's JSON lines.
    Jsonl,
    /// Jepsen's history.edn, one map a line.
    Jepsen,
    /// The Porcupine harness's JSON array (scripts/porcupine/).
    Porcupine,
}

#[derive(clap::Args, Clone, Debug)]
pub struct HistoryArgs {
    /// The history file.
    pub file: PathBuf,
    /// Its format (default: from its extension: .edn Jepsen, .json
    /// Porcupine, else JSON lines).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Check only the shared keys (`lin/…`) instead of every key.
    #[arg(long)]
    pub shared_only: bool,
    /// How long the linearizability search may take on one key.
    #[arg(long, default_value = "60s", value_parser = crate::units::duration)]
    pub lin_limit: Duration,
    /// Write the history in this format to --out instead of checking it.
    #[arg(long, value_enum, requires = "out")]
    pub export: Option<Format>,
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Read a history in any of the formats.
pub fn read(path: &std::path::Path, format: Option<Format>) -> Result<History, String> {
    let format = format.unwrap_or(match path.extension().and_then(|e| e.to_str()) {
        Some("edn") => Format::Jepsen,
        Some("json") => Format::Porcupine,
        _ => Format::Jsonl,
    });
    let text = || std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
    match format {
        Format::Jsonl => History::read_jsonl(path),
        Format::Jepsen => formats::from_jepsen(&text()?),
        Format::Porcupine => {
            let ops: Vec<PorcupineOp> =
                serde_json::from_str(&text()?).map_err(|e| format!("{}: {e}", path.display()))?;
            formats::from_porcupine(&ops)
        }
    }
    .map_err(|e| format!("{}: {e}", path.display()))
}

/// Check or export; whether the history is linearizable (true after an
/// export).
pub fn command(a: &HistoryArgs) -> Result<bool, String> {
    let h = read(&a.file, a.format)?;
    let wanted = |k: &[u8]| !a.shared_only || KeyRole::of(k) == KeyRole::Shared;
    if let (Some(f), Some(out)) = (a.export, &a.out) {
        let text = match f {
            Format::Jsonl => {
                let mut b = Vec::new();
                h.write_jsonl_to(&mut b).map_err(|e| e.to_string())?;
                String::from_utf8(b).map_err(|e| e.to_string())?
            }
            Format::Jepsen => formats::to_jepsen(&h, wanted),
            Format::Porcupine => serde_json::to_string(&formats::to_porcupine(&h, wanted))
                .map_err(|e| e.to_string())?,
        };
        std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
        eprintln!("{} operations written to {}", h.ops.len(), out.display());
        return Ok(true);
    }
    let started = std::time::Instant::now();
    let r: LinReport = linear::check_history(
        &h,
        wanted,
        linear::Limits {
            per_key: a.lin_limit,
            ..Default::default()
        },
    );
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?
        );
    } else {
        print!("{r}");
        eprintln!("checked in {:.2} s", started.elapsed().as_secs_f64());
    }
    Ok(r.linearizable())
}
