//! Reports of load runs and sweeps (interim: the model and JSON; Markdown,
//! HTML charts and HDR log merging land separately). Owns report files;
//! must not run load.

pub mod hdrlog;
pub mod model;

use std::path::Path;

/// Write `report.json` into `dir`.
pub fn write_dir(dir: &Path, r: &model::Report) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(r).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("report.json"), json)
}
