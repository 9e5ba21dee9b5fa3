//! A credential (a cluster secret, a bearer token) written to a file only
//! its owner can read or write (mode 0600), by the command that made it:
//! never through a shell redirection, whose file gets the umask's mode
//! (often 0644, readable by every user of the machine). Owns writing the
//! file; must not make or judge what goes in it (`secret`, `token` do).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of every credential file a command writes.
pub const MODE: u32 = 0o600;

/// Write `line` and a newline to `path`, a new file of mode 0600. An
/// existing file is left alone and is an error (`what` names it: "a
/// cluster secret"), unless `replace`: then it is replaced whole, by a
/// new file of mode 0600 moved over it, so that its contents are never
/// readable by others, not even for a moment, whatever mode the old file
/// had.
pub fn write(path: &Path, line: &str, replace: bool, what: &str) -> Result<(), String> {
    let shown = path.display();
    if !replace {
        return write_new(path, line).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => format!(
                "{shown}: already exists (left as it is; give --force to replace it with {what})"
            ),
            _ => format!("{shown}: {e}"),
        });
    }
    let name = path
        .file_name()
        .ok_or_else(|| format!("{shown}: not a file name"))?
        .to_string_lossy();
    let mut suffix = [0u8; 6];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut suffix);
    let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = path.with_file_name(format!(".{name}.{suffix}.new"));
    let moved = write_new(&tmp, line).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = moved {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{shown}: {e}"));
    }
    Ok(())
}

/// `line` and a newline in the new file `path`, mode 0600 (whatever the
/// umask), on disk before this returns.
fn write_new(path: &Path, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(MODE)
        .open(path)?;
    // The umask can only take bits away from 0600; set it exactly.
    f.set_permissions(std::fs::Permissions::from_mode(MODE))?;
    writeln!(f, "{line}")?;
    f.sync_all()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The permission bits of `f`.
    pub(crate) fn mode(f: &Path) -> u32 {
        std::fs::metadata(f).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_file_is_private_and_an_old_one_kept_unless_replaced() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("secret");
        write(&f, "one", false, "a new one").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "one\n");
        assert_eq!(mode(&f), 0o600);
        let e = write(&f, "two", false, "a new one").unwrap_err();
        assert!(e.contains("already exists") && e.contains("--force"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "one\n");
        // A world-readable file replaced: the new one is private.
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&f, "two", true, "a new one").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "two\n");
        assert_eq!(mode(&f), 0o600);
        // Nothing left beside it.
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        // Where no file can be made: the path in the error.
        let e = write(&d.path().join("no/such/dir"), "x", false, "x").unwrap_err();
        assert!(e.contains("no/such/dir"), "{e}");
    }
}
