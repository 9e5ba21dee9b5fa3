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
    /// [`Tmpfs::mount`], or `None` after saying on stderr that `test` was
    /// not checked and why (no root, no tmpfs). With `STRATA_REQUIRE_TOOLS=1`
    /// (as `.ci/run` sets it) a test that cannot run fails instead.
    pub fn mount_or_say(size: &str, test: &str) -> Option<Tmpfs> {
        match Tmpfs::mount(size) {
            Ok(d) => Some(d),
            Err(e) if std::env::var("STRATA_REQUIRE_TOOLS").is_ok_and(|v| v == "1") => {
                panic!("{test}: cannot mount a tmpfs here ({e}), and STRATA_REQUIRE_TOOLS=1")
            }
            Err(e) => {
                eprintln!("{test}: not checked: cannot mount a tmpfs here ({e})");
                None
            }
        }
    }

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
