//! Strata's fuzz targets (run with `scripts/fuzz.sh`): see `dispatch`.

use std::path::Path;
use std::sync::OnceLock;

pub mod dispatch;

/// A scratch directory for this process, for the targets that decode files.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a scratch directory"))
        .path()
}
