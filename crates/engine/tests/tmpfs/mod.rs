//! A tmpfs mounted for a test: a disk that really fills up. Shared by the
//! engine's and the node's full-disk tests (the node's includes this file).
//! Mounting needs root (CAP_SYS_ADMIN); `mount` says why it cannot.

use std::path::PathBuf;
use std::process::Command;

/// A tmpfs of `size` (as `mount -o size=` takes it) at a fresh directory,
/// unmounted on drop.
pub struct Tmpfs {
    pub dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    /// A tmpfs of `size`, or why `mount` could not make one (no root, no
    /// tmpfs). The tests take it through `require_ok` (the strata tests'
    /// `support/require.rs`): "not checked" where it cannot be mounted,
    /// unless `STRATA_REQUIRE_TOOLS=1`.
    pub fn mount(size: &str) -> Result<Tmpfs, String> {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("disk");
        std::fs::create_dir(&dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).into_owned());
        }
        Ok(Tmpfs {
            dir,
            _parent: parent,
        })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}
