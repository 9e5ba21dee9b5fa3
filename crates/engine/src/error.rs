//! Error type of the engine. Owns the taxonomy of failures callers can match on
//! (I/O, corruption with file and offset, busy, closed); it must not carry
//! policy such as retries.

use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong inside the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O call failed on `path`.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A checksum or structural check failed. `offset` is the byte offset in
    /// `file` where the damaged record or block starts.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        file: PathBuf,
        offset: u64,
        reason: String,
    },
    /// Writes are stalled (too many immutable memtables or level-0 tables) and
    /// the bounded wait ran out. Callers should back off and retry; the node
    /// answers 503.
    #[error("engine busy: {0}")]
    Busy(String),
    /// The database was closed.
    #[error("database is closed")]
    Closed,
    /// A caller passed something the engine cannot accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An fsync (or fdatasync) failed on `path`. What the kernel had of the
    /// file may be lost, and a second fsync that succeeds proves nothing
    /// (PostgreSQL's "fsyncgate"), so the database goes read-only.
    #[error("fsync failed on {path}: {source}; the database is read-only")]
    SyncFailed {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The disk holding the data directory is full: writes are refused (the
    /// node answers 507) until a flush or compaction retried in the
    /// background finds room again. Reads keep working.
    #[error("disk full, writes refused until there is room ({0})")]
    NoSpace(String),
    /// A background job failed earlier; the database refuses further writes.
    #[error("background error, database is read-only: {0}")]
    Background(String),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corruption(
        file: impl Into<PathBuf>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// True when the disk was full: [`Error::NoSpace`], or a write or a
    /// file creation that failed with ENOSPC or EDQUOT (never an fsync:
    /// that is [`Error::SyncFailed`]).
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::NoSpace(_) => true,
            Error::Io { source, .. } => {
                matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
            }
            _ => false,
        }
    }

    /// True for [`Error::Busy`].
    pub fn is_busy(&self) -> bool {
        matches!(self, Error::Busy(_))
    }

    /// A cloneable summary used to make a background error sticky.
    pub(crate) fn summary(&self) -> String {
        self.to_string()
    }
}

/// Extension to attach a path to `std::io::Result`.
pub(crate) trait IoContext<T> {
    fn ctx(self, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
    }
}

/// Attach a path to the result of an fsync: its failure is
/// [`Error::SyncFailed`], never retried as if the data were safe.
pub(crate) fn synced(r: std::io::Result<()>, path: &std::path::Path) -> Result<()> {
    r.map_err(|source| Error::SyncFailed {
        path: path.to_path_buf(),
        source,
    })
}
