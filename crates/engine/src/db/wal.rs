//! The write-ahead log file being appended to: records written at the end
//! (zero-filled ahead under `sync`, so an fdatasync need not touch
//! metadata), or buffered and handed to the OS in chunks under `none`.
//! Owns the file's offset and buffer; must not decide when to sync (the
//! commit path does).

use super::*;

pub(super) struct Wal {
    pub(super) path: PathBuf,
    pub(super) file: Arc<File>,
    /// Records not yet handed to the OS (`Durability::None` only).
    pub(super) pending: Vec<u8>,
    /// End of the records written so far.
    pub(super) offset: u64,
    /// Under `sync`, the file is zero-filled up to here. Records overwrite
    /// zeros in place, so an fdatasync has no file size to commit, only
    /// data: about 30% cheaper here (154 vs 221 µs). Recovery reads a zero
    /// tail as the clean end of the log. The other modes fsync rarely and
    /// skip the filling (it doubles the bytes written).
    pub(super) zeroed: u64,
    pub(super) preallocate: bool,
}

/// WAL files are zero-filled ahead of the records in steps of this size.
pub(super) const WAL_PREALLOCATE: u64 = 1 << 20;

/// Under `Durability::None`, WAL records are handed to the OS in chunks of
/// this size rather than one `write` per commit group.
pub(super) const WAL_BUFFER: usize = 64 << 10;

impl Wal {
    pub(super) fn new(path: PathBuf, file: File, durability: Durability) -> Wal {
        Wal {
            path,
            file: Arc::new(file),
            pending: Vec::new(),
            offset: 0,
            zeroed: 0,
            preallocate: durability == Durability::Sync,
        }
    }

    /// Write at the end of the records, zero-filling ahead first if needed.
    pub(super) fn write(&mut self, buf: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let end = self.offset + buf.len() as u64;
        if self.preallocate && end > self.zeroed {
            let target = end.next_multiple_of(WAL_PREALLOCATE);
            let zeros = vec![0u8; (target - self.zeroed) as usize];
            self.file
                .write_all_at(&zeros, self.zeroed)
                .ctx(&self.path)?;
            self.zeroed = target;
        }
        self.file.write_all_at(buf, self.offset).ctx(&self.path)?;
        self.offset = end;
        Ok(())
    }

    /// Write `buf` now, or (when `buffered`) once `WAL_BUFFER` bytes wait.
    pub(super) fn append(&mut self, buf: &[u8], buffered: bool) -> Result<()> {
        if !buffered {
            return self.write(buf);
        }
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= WAL_BUFFER {
            self.drain()?;
        }
        Ok(())
    }

    /// Hand buffered records to the OS.
    pub(super) fn drain(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.write(&pending)?;
            self.pending = pending;
            self.pending.clear();
        }
        Ok(())
    }
}
