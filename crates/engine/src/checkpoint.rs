//! Checkpoints: a consistent copy of an open database in another
//! directory, taken while it serves (RocksDB's checkpoints). `Db` captures,
//! under its version lock, the manifest state and the live tables (held
//! open, so no compaction can delete them meanwhile) and opens every WAL
//! segment the state still needs; then, under the WAL lock, how far the
//! newest segment's records go. This module writes the copy: each table
//! hard-linked (copied when the destination is on another file system),
//! each WAL segment copied up to its records' end, a fresh manifest and
//! `CURRENT`, everything fsynced. The copy is a database directory of its
//! own: opening it replays the WAL tail, so it holds every write that was
//! acknowledged before the checkpoint began.
//!
//! Owns writing the copy; must not decide what is live (`db` does) or
//! touch the source directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{synced, Error, IoContext, Result};
use crate::manifest::{self, Manifest, ManifestState};

/// What `Db` captured for a checkpoint.
pub(crate) struct Captured {
    pub state: ManifestState,
    /// Each live table's number and path.
    pub tables: Vec<(u64, PathBuf)>,
    /// Each WAL segment still needed: number, file name, open file, bytes
    /// to copy.
    pub wals: Vec<(u64, String, File, u64)>,
}

/// What a checkpoint holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointInfo {
    pub dir: PathBuf,
    pub tables: usize,
    /// Of those, hard-linked (the others were copied).
    pub linked: usize,
    pub table_bytes: u64,
    pub wal_segments: usize,
    pub wal_bytes: u64,
    /// Highest sequence number in the manifest (the WAL tail goes past it).
    pub last_seq: u64,
}

/// Write the checkpoint into `dest`, which must not exist yet.
pub(crate) fn write(dest: &Path, c: Captured) -> Result<CheckpointInfo> {
    if dest.exists() {
        return Err(Error::InvalidArgument(format!(
            "{} already exists: a checkpoint goes into a new directory",
            dest.display()
        )));
    }
    let tmp = PathBuf::from(format!("{}.partial", dest.display()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).ctx(&tmp)?;
    match fill(&tmp, c) {
        Ok(mut info) => {
            std::fs::rename(&tmp, dest).ctx(dest)?;
            if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
                manifest::sync_dir(parent)?;
            }
            info.dir = dest.to_path_buf();
            Ok(info)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn fill(dir: &Path, c: Captured) -> Result<CheckpointInfo> {
    let mut info = CheckpointInfo {
        last_seq: c.state.last_seq,
        ..CheckpointInfo::default()
    };
    let mut highest = c.state.next_file;
    for (n, src) in &c.tables {
        let name = src.file_name().ok_or_else(|| {
            Error::InvalidArgument(format!("table path {} has no name", src.display()))
        })?;
        let to = dir.join(name);
        match std::fs::hard_link(src, &to) {
            Ok(()) => info.linked += 1,
            // Another file system (EXDEV) or no links allowed: copy.
            Err(_) => {
                std::fs::copy(src, &to).ctx(src)?;
                synced(File::open(&to).ctx(&to)?.sync_all(), &to)?;
            }
        }
        info.tables += 1;
        info.table_bytes += std::fs::metadata(&to).ctx(&to)?.len();
        highest = highest.max(n + 1);
    }
    for (n, name, file, len) in &c.wals {
        let to = dir.join(name);
        copy_prefix(file, *len, &to)?;
        info.wal_segments += 1;
        info.wal_bytes += len;
        highest = highest.max(n + 1);
    }
    let mut state = c.state;
    let mnum = highest;
    state.next_file = mnum + 1;
    Manifest::checkpoint(dir, mnum, &state, None)?;
    manifest::sync_dir(dir)?;
    Ok(info)
}

/// Copy the first `len` bytes of `from` into a new file `to`, fsynced.
fn copy_prefix(from: &File, len: u64, to: &Path) -> Result<()> {
    let mut out = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(to)
        .ctx(to)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    while at < len {
        let want = ((len - at) as usize).min(buf.len());
        let n = from.read_at(&mut buf[..want], at).ctx(to)?;
        if n == 0 {
            // The segment is shorter than its records said: copy what is.
            break;
        }
        out.write_all(&buf[..n]).ctx(to)?;
        at += n as u64;
    }
    synced(out.sync_all(), to)
}
