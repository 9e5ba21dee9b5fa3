//! Reports of lab runs: the data model a load run or sweep fills
//! (`model`, with the resources' names: `resource`), its renderings as Markdown (`markdown`) and as a
//! self-contained HTML page with charts (`html`, `charts`, and a sweep's
//! evidence: `evidence`), and HdrHistogram
//! interval logs that let several load machines' runs be merged
//! (`hdrlog`), a node's heap profile drawn as a flame graph (`heap`), the
//! live dashboard (`dashboard`), and the nodes' `/metrics` sampled on the
//! run's time axis (`scrape`), the server's side of the model, each
//! node's threads over a trial (`threads`), and the
//! sections for the faults and the check that ran alongside (`alongside`),
//! the linearizability check's with its witness drawn (`linear`), and
//! text made safe for HTML (`escape`), and what a sweep's check of the
//! capacity model found (`model_check`). This file
//! only writes a report directory; it must not run load, and nothing
//! below it judges what it measured.

pub mod alongside;
pub mod charts;
pub mod dashboard;
pub mod escape;
pub mod evidence;
pub mod hdrlog;
pub mod heap;
pub mod html;
pub mod linear;
pub mod markdown;
pub mod model;
pub mod model_check;
pub mod resource;
pub mod scrape;
pub mod threads;

use std::io;
use std::path::Path;

use scrape::Scrapes;

pub use model::{
    spectrum_from_hist, CheckSummary, FaultMark, FaultWindow, NodeSecond, NodeSummary, OpSummary,
    Percentiles, Report, RunKind, Second, ServerSample, SpectrumPoint, Trial,
};

/// The target's `/metrics` text before and after the run, as served, under
/// the names `strata sim --from-report` reads.
pub use strata_sim::{REPORT_METRICS_END as METRICS_END, REPORT_METRICS_START as METRICS_START};

/// Write `report.json` (pretty), `report.md` and `report.html` into `dir`,
/// creating it if needed, and the target's `/metrics` before and after the
/// run when it served them (`strata sim --from-report` reads those). With
/// several nodes those are the first node's; node N's (from 2 on) are
/// `metrics-start.nodeN.txt` and `metrics-end.nodeN.txt`.
pub fn write_dir(dir: &Path, r: &Report, scrapes: &Scrapes) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let nodes = std::iter::once((String::new(), scrapes)).chain(
        scrapes
            .more
            .iter()
            .enumerate()
            .map(|(i, s)| (format!(".node{}", i + 2), s)),
    );
    for (suffix, s) in nodes {
        for (name, text) in [(METRICS_START, &s.first), (METRICS_END, &s.last)] {
            if let Some(t) = text {
                let name = match name.strip_suffix(".txt") {
                    Some(stem) => format!("{stem}{suffix}.txt"),
                    None => format!("{name}{suffix}"),
                };
                std::fs::write(dir.join(name), t)?;
            }
        }
    }
    let json = serde_json::to_string_pretty(r).map_err(io::Error::other)?;
    std::fs::write(dir.join("report.json"), json + "\n")?;
    std::fs::write(dir.join("report.md"), markdown::render(r))?;
    let page = html::render(r).map_err(io::Error::other)?;
    std::fs::write(dir.join("report.html"), page)?;
    Ok(())
}

/// The name of a report kept compressed (a corpus sweep's).
pub const COMPRESSED: &str = "report.json.zst";

/// Read a report from `path`: a `report.json` or `report.json.zst` file,
/// or a directory holding one (the plain one first).
pub fn read_any(path: &Path) -> io::Result<Report> {
    if path.is_dir() {
        let plain = path.join("report.json");
        return if plain.exists() {
            read_json(&plain)
        } else if path.join(COMPRESSED).exists() {
            read_any(&path.join(COMPRESSED))
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: holds neither report.json nor {COMPRESSED}",
                    path.display()
                ),
            ))
        };
    }
    if path.extension().is_some_and(|e| e == "zst") {
        let bytes = std::fs::read(path)?;
        let text = zstd::decode_all(&bytes[..]).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })?;
        return serde_json::from_slice(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        });
    }
    read_json(path)
}

/// Write `r` as `report.json.zst` into `dir` (compact JSON, zstd level
/// 19: a corpus sweep's evidence, about a tenth of `report.json`).
pub fn write_compressed(dir: &Path, r: &Report) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec(r).map_err(io::Error::other)?;
    let packed = zstd::encode_all(&json[..], 19)?;
    std::fs::write(dir.join(COMPRESSED), packed)
}

/// Read a `report.json` back.
pub fn read_json(path: &Path) -> io::Result<Report> {
    let text = std::fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}
