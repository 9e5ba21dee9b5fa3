//! The database: opening and recovery, the write path with group commit,
//! point reads, scans, and the background flush and compaction threads.
//! Owns the coordination between those parts; the formats and algorithms
//! live in their own modules and must stay there.
//!
//! Concurrency in one paragraph: readers load the current `SuperVersion`
//! (memtable, immutable memtables, table version) through an `ArcSwap` and
//! never take a lock. Writers append to a shared commit queue; the first
//! writer to find no leader becomes the leader, writes every queued record
//! with one `write` and one `fsync`, inserts them into the memtable, and
//! publishes the new visible sequence. Flush and compaction build new tables
//! off to the side and swap in a new `SuperVersion` under a short lock.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::ops::{Bound, RangeBounds};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use crate::batch::{self, WriteBatch};
use crate::checkpoint::CheckpointInfo;
use crate::compaction::{self, Compaction, TableSink};
use crate::error::{synced, Error, IoContext, Result};
use crate::events::{Event, StallReason};
use crate::iterator::{DbIterator, InternalIterator, Lookup, MergeIterator};
use crate::key::{self, Kind};
use crate::manifest::{self, Manifest, ManifestState, VersionEdit};
use crate::memtable::Memtable;
use crate::options::{Durability, Options};
use crate::record::{self, Next, RecordReader};
use crate::sstable::cache::BlockCache;
use crate::sstable::{Table, TableBuilder};
use crate::stats::{LevelStats, Stats, StatsSnapshot, WriteTiming};
use crate::version::{meta_of, Version};

/// What readers see: all sources at one moment.
struct SuperVersion {
    mem: Arc<Memtable>,
    /// Newest first.
    imms: Vec<Arc<Memtable>>,
    version: Arc<Version>,
}

struct Wal {
    path: PathBuf,
    file: Arc<File>,
    /// Records not yet handed to the OS (`Durability::None` only).
    pending: Vec<u8>,
    /// End of the records written so far.
    offset: u64,
    /// Under `sync`, the file is zero-filled up to here. Records overwrite
    /// zeros in place, so an fdatasync has no file size to commit, only
    /// data: about 30% cheaper here (154 vs 221 µs). Recovery reads a zero
    /// tail as the clean end of the log. The other modes fsync rarely and
    /// skip the filling (it doubles the bytes written).
    zeroed: u64,
    preallocate: bool,
}

/// WAL files are zero-filled ahead of the records in steps of this size.
const WAL_PREALLOCATE: u64 = 1 << 20;

/// Under `Durability::None`, WAL records are handed to the OS in chunks of
/// this size rather than one `write` per commit group.
const WAL_BUFFER: usize = 64 << 10;

impl Wal {
    fn new(path: PathBuf, file: File, durability: Durability) -> Wal {
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
    fn write(&mut self, buf: &[u8]) -> Result<()> {
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
    fn append(&mut self, buf: &[u8], buffered: bool) -> Result<()> {
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
    fn drain(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.write(&pending)?;
            self.pending = pending;
            self.pending.clear();
        }
        Ok(())
    }
}

struct CommitQueue {
    next_seq: u64,
    buf: Vec<u8>,
    batches: Vec<(u64, WriteBatch)>,
    last_seq: u64,
    leader: bool,
    done_seq: u64,
    /// Writers whose records wait in `buf` (the next group's writers).
    callers: usize,
    /// Commit groups that failed for want of space: their sequence range,
    /// the error, and how many of their writers have yet to see it. Each
    /// waiting writer finds its group here and answers the error (nothing
    /// of it was written); the entry goes when the last one has. A failed
    /// group still advances `done_seq`, so an entry must outlive every
    /// writer of its group: dropping it earlier would acknowledge writes
    /// that were never made.
    failed: Vec<FailedGroup>,
}

struct FailedGroup {
    first: u64,
    last: u64,
    error: String,
    waiting: usize,
}

/// How long a flush or compaction that found the disk full waits before it
/// tries again.
const NO_SPACE_RETRY: Duration = Duration::from_secs(1);

#[derive(Default)]
struct BgState {
    shutdown: bool,
    /// Bumped whenever something may need flushing or compacting.
    work: u64,
}

struct VersionSet {
    state: ManifestState,
    manifest: Manifest,
}

struct Inner {
    dir: PathBuf,
    opts: Options,
    cache: BlockCache,
    stats: Arc<Stats>,
    sv: ArcSwap<SuperVersion>,
    sv_lock: Mutex<()>,
    next_file: AtomicU64,
    visible_seq: AtomicU64,
    commit: Mutex<CommitQueue>,
    commit_cv: Condvar,
    wal: Mutex<Wal>,
    /// Segments replaced by `rotate` that the flush thread still has to fsync.
    retired_wals: Mutex<Vec<(Arc<File>, PathBuf)>>,
    versions: Mutex<VersionSet>,
    compaction_lock: Mutex<Vec<Vec<u8>>>,
    bg: Mutex<BgState>,
    bg_cv: Condvar,
    bg_error: Mutex<Option<String>>,
    /// Set with `bg_error`, so the write path checks an atomic, not a lock.
    bg_failed: AtomicBool,
    /// Why a flush or compaction last failed for want of space, while it
    /// waits to retry: writes are refused with `Error::NoSpace` meanwhile.
    no_space: Mutex<Option<String>>,
    no_space_flag: AtomicBool,
    stall: Mutex<Option<(Instant, StallReason)>>,
    closed: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
    jobs: AtomicU64,
    _lock_file: File,
}

/// An open database. Dropping it closes it.
pub struct Db {
    inner: Arc<Inner>,
}

/// Where tables that failed a checksum are kept, under the data directory.
pub const QUARANTINE_DIR: &str = "quarantine";

/// Hard-link a damaged table under `dir/quarantine/` (a new name if one
/// is there already); the empty path if that failed (the table is set
/// aside all the same: it must not stay in the store).
fn keep_in_quarantine(dir: &Path, file: &Path, id: u64) -> PathBuf {
    let qdir = dir.join(QUARANTINE_DIR);
    let name = table_name(id);
    let mut dest = qdir.join(&name);
    let linked = std::fs::create_dir_all(&qdir).and_then(|()| {
        let mut n = 1;
        while dest.exists() {
            dest = qdir.join(format!("{name}.{n}"));
            n += 1;
        }
        std::fs::hard_link(file, &dest)
    });
    match linked {
        Ok(()) => dest,
        Err(_) => PathBuf::new(),
    }
}

fn wal_name(n: u64) -> String {
    format!("{n:06}.wal")
}

fn table_name(n: u64) -> String {
    format!("{n:06}.sst")
}

fn parse_number(name: &str, ext: &str) -> Option<u64> {
    name.strip_suffix(ext)?.parse().ok()
}

impl Db {
    /// Open (or create) the database in `dir`, replaying its WAL.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let dir = dir.as_ref().to_path_buf();
        if opts.create_if_missing {
            std::fs::create_dir_all(&dir).ctx(&dir)?;
        } else if !dir.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "{} does not exist",
                dir.display()
            )));
        }
        let lock_path = dir.join("LOCK");
        let lock_file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .ctx(&lock_path)?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(lock_file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(Error::InvalidArgument(format!(
                "{} is in use by another process",
                dir.display()
            )));
        }
        let stats = Arc::new(Stats::default());
        let cache = BlockCache::new(opts.block_cache_size);
        let recovered = manifest::recover(&dir, opts.num_levels)?;
        let (mut state, old_manifest) = match recovered {
            Some(r) => {
                if let Some((file, offset, reason)) = r.torn {
                    emit(
                        &opts,
                        Event::TornWalRecord {
                            file,
                            offset,
                            reason,
                        },
                    );
                }
                (r.state, Some(r.number))
            }
            None => (ManifestState::new(opts.num_levels), None),
        };
        if state.levels.len() != opts.num_levels {
            return Err(Error::InvalidArgument(format!(
                "database has {} levels, options say {}",
                state.levels.len(),
                opts.num_levels
            )));
        }
        // Open every live table.
        let mut levels: Vec<Vec<Arc<Table>>> = vec![Vec::new(); opts.num_levels];
        let mut damaged = Vec::new();
        let mut live: HashSet<u64> = HashSet::new();
        for (l, metas) in state.levels.iter().enumerate() {
            for m in metas {
                let p = dir.join(table_name(m.id));
                if !p.exists() {
                    return Err(Error::corruption(
                        &p,
                        0,
                        "table listed in the manifest is missing",
                    ));
                }
                match Table::open(&p, m.id, cache.clone(), stats.clone()) {
                    Ok(t) => {
                        levels[l].push(Arc::new(t));
                        live.insert(m.id);
                    }
                    // Damaged metadata (footer, index, filter): set aside
                    // like a damaged block met later; the edit below
                    // takes it out of the store.
                    Err(Error::Corruption {
                        file,
                        offset,
                        reason,
                    }) => {
                        let moved_to = keep_in_quarantine(&dir, &file, m.id);
                        damaged.push((l, m.id));
                        stats.inc(&stats.tables_quarantined);
                        emit(
                            &opts,
                            Event::TableQuarantined {
                                file,
                                offset,
                                reason,
                                moved_to,
                            },
                        );
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        // Look at the directory: WALs to replay, stray files to remove.
        let mut wals = Vec::new();
        let mut max_number = state.next_file;
        for entry in std::fs::read_dir(&dir).ctx(&dir)? {
            let entry = entry.ctx(&dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(n) = parse_number(&name, ".wal") {
                max_number = max_number.max(n + 1);
                if n >= state.log_number {
                    wals.push(n);
                } else {
                    let _ = std::fs::remove_file(entry.path());
                }
            } else if let Some(n) = parse_number(&name, ".sst") {
                max_number = max_number.max(n + 1);
                if !live.contains(&n) {
                    let _ = std::fs::remove_file(entry.path());
                }
            } else if name.ends_with(".tmp") {
                let _ = std::fs::remove_file(entry.path());
            } else if let Some(n) = name
                .strip_prefix("MANIFEST-")
                .and_then(|n| n.parse::<u64>().ok())
            {
                max_number = max_number.max(n + 1);
                if Some(n) != old_manifest {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        wals.sort_unstable();
        let next_file = AtomicU64::new(max_number);
        let mut last_seq = state.last_seq;
        for l in &levels {
            for t in l {
                last_seq = last_seq.max(t.props().max_seq);
            }
        }
        // Replay WALs into memtables, flushing each full one to level 0.
        let new_wal = next_file.fetch_add(1, Ordering::SeqCst);
        let mut edit = VersionEdit {
            deleted: damaged,
            ..Default::default()
        };
        let mut mem = Arc::new(Memtable::new(new_wal, opts.memtable_size));
        let sink = Files {
            dir: &dir,
            next_file: &next_file,
            cache: &cache,
            stats: &stats,
        };
        for (i, &n) in wals.iter().enumerate() {
            let path = dir.join(wal_name(n));
            let mut r = RecordReader::open(&path)?;
            loop {
                match r.next()? {
                    Next::Record { offset, payload } => {
                        let seq_end = replay_record(&mem, &path, offset, payload)?;
                        last_seq = last_seq.max(seq_end);
                        if mem.size() >= opts.memtable_size {
                            let t = flush_to_table(&mem, &opts, &sink)?;
                            if let Some(t) = t {
                                edit.added.push(meta_of(0, &t));
                                levels[0].push(t);
                            }
                            mem = Arc::new(Memtable::new(new_wal, opts.memtable_size));
                        }
                    }
                    Next::End => break,
                    Next::Torn { offset, reason } => {
                        if i + 1 != wals.len() {
                            return Err(Error::corruption(
                                &path,
                                offset,
                                format!("damaged record in a WAL that is not the newest: {reason}"),
                            ));
                        }
                        stats.inc(&stats.torn_wal_records);
                        emit(
                            &opts,
                            Event::TornWalRecord {
                                file: path.clone(),
                                offset,
                                reason,
                            },
                        );
                        break;
                    }
                }
            }
        }
        if !mem.is_empty() {
            if let Some(t) = flush_to_table(&mem, &opts, &sink)? {
                edit.added.push(meta_of(0, &t));
                levels[0].push(t);
            }
        }
        // New WAL, then a checkpoint that names it; only then drop old WALs.
        let wal_path = dir.join(wal_name(new_wal));
        let wal_file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&wal_path)
            .ctx(&wal_path)?;
        manifest::sync_dir(&dir)?;
        edit.log_number = Some(new_wal);
        edit.last_seq = Some(last_seq);
        state
            .apply(&edit)
            .map_err(|m| Error::corruption(&dir, 0, m))?;
        let mnum = next_file.fetch_add(1, Ordering::SeqCst);
        state.next_file = next_file.load(Ordering::SeqCst);
        let manifest = Manifest::checkpoint(&dir, mnum, &state, old_manifest)?;
        for n in wals {
            let _ = std::fs::remove_file(dir.join(wal_name(n)));
        }
        let version = Arc::new(Version::from_levels(levels));
        let inner = Arc::new(Inner {
            sv: ArcSwap::from_pointee(SuperVersion {
                mem: Arc::new(Memtable::new(new_wal, opts.memtable_size)),
                imms: vec![],
                version,
            }),
            sv_lock: Mutex::new(()),
            next_file,
            visible_seq: AtomicU64::new(last_seq),
            commit: Mutex::new(CommitQueue {
                next_seq: last_seq + 1,
                buf: Vec::new(),
                batches: Vec::new(),
                last_seq,
                leader: false,
                done_seq: last_seq,
                callers: 0,
                failed: Vec::new(),
            }),
            commit_cv: Condvar::new(),
            wal: Mutex::new(Wal::new(wal_path, wal_file, opts.durability)),
            retired_wals: Mutex::new(Vec::new()),
            versions: Mutex::new(VersionSet { state, manifest }),
            compaction_lock: Mutex::new(vec![Vec::new(); opts.num_levels]),
            bg: Mutex::new(BgState::default()),
            bg_cv: Condvar::new(),
            bg_error: Mutex::new(None),
            bg_failed: AtomicBool::new(false),
            no_space: Mutex::new(None),
            no_space_flag: AtomicBool::new(false),
            stall: Mutex::new(None),
            closed: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            jobs: AtomicU64::new(1),
            _lock_file: lock_file,
            dir,
            cache,
            stats,
            opts,
        });
        let mut threads = Vec::new();
        let i = inner.clone();
        threads.push(spawn("strata-flush", move || i.flush_loop()));
        let i = inner.clone();
        threads.push(spawn("strata-compact", move || i.compaction_loop()));
        if let Durability::Interval(ms) = inner.opts.durability {
            let i = inner.clone();
            threads.push(spawn("strata-walsync", move || i.sync_loop(ms)));
        }
        *inner.threads.lock() = threads;
        inner.kick();
        Ok(Db { inner })
    }

    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + value.len() + 8);
        b.put(key, value);
        self.write(b)
    }

    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + 8);
        b.delete(key);
        self.write(b)
    }

    /// Apply a batch atomically: after a crash either all of it or none of it
    /// is present, and no reader sees part of it.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.write(vec![batch]).map(|_| ())
    }

    /// Apply several batches in one commit group (one WAL write, one fsync
    /// under `sync`), in order. Each batch is atomic on its own; if the
    /// group fails, none of it was acknowledged. For callers that gather
    /// writes themselves (the node's committer), so that a group costs one
    /// thread handoff instead of one per write.
    pub fn write_batches(&self, batches: Vec<WriteBatch>) -> Result<()> {
        self.inner.write(batches).map(|_| ())
    }

    /// Whether a write now would wait: on the disk (`sync` durability:
    /// every commit waits for its fsync) or on flush and compaction (a
    /// stall or a slowdown). A caller that must not block (a runtime's
    /// worker thread) writes itself only when this is false and hands the
    /// write to a thread of its own otherwise.
    pub fn would_wait(&self) -> bool {
        let i = &self.inner;
        i.opts.durability == Durability::Sync
            || i.stall_reason().is_some()
            || i.sv.load().version.levels[0].len() >= i.opts.l0_slowdown_trigger
    }

    /// `write_batches`, and where the call's time went (the stall, the
    /// wait for an earlier group, the WAL's fsync), for callers that
    /// report each request's stages.
    pub fn write_batches_timed(&self, batches: Vec<WriteBatch>) -> Result<WriteTiming> {
        self.inner.write(batches)
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Bytes>> {
        loop {
            match self.get_once(key) {
                // The damaged table is set aside: look again without it.
                Err(e) if self.inner.set_aside(&e).is_some() => continue,
                r => return r,
            }
        }
    }

    /// If `e` is a failed checksum in a table of the store, set that table
    /// aside: hard-link it under `quarantine/` (for a post-mortem), remove
    /// it from the store (a version edit, as a compaction would), count
    /// it and emit [`Event::TableQuarantined`]. Its records are gone from
    /// this store (older versions below it show again): a replicated
    /// store recovers them from its peers. Returns where the table went;
    /// `None` if `e` is no such error (or the table is gone already).
    pub fn set_aside(&self, e: &Error) -> Option<PathBuf> {
        self.inner.set_aside(e)
    }

    fn get_once(&self, key: &[u8]) -> Result<Option<Bytes>> {
        self.inner.check_open()?;
        self.inner.stats.inc(&self.inner.stats.gets);
        let snapshot = self.inner.visible_seq.load(Ordering::Acquire);
        let sv = self.inner.sv.load();
        let hash = crate::sstable::bloom::hash(key);
        let found = match sv.mem.get(key, hash, snapshot) {
            Some(l) => Some(l),
            None => {
                let mut r = None;
                for m in &sv.imms {
                    if let Some(l) = m.get(key, hash, snapshot) {
                        r = Some(l);
                        break;
                    }
                }
                match r {
                    Some(l) => Some(l),
                    None => sv.version.get(key, hash, snapshot)?,
                }
            }
        };
        Ok(match found {
            Some(Lookup::Value(v)) => Some(v),
            _ => None,
        })
    }

    /// An ordered scan over `range` at the current point in time. The
    /// iterator streams: it holds one block per level, not the result.
    pub fn scan<'a, R: RangeBounds<&'a [u8]>>(&self, range: R) -> Result<DbIterator> {
        self.inner.check_open()?;
        let own = |b: Bound<&&[u8]>| match b {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let start = own(range.start_bound());
        let end = own(range.end_bound());
        let snapshot = self.inner.visible_seq.load(Ordering::Acquire);
        let sv = self.inner.sv.load_full();
        let lo = match &start {
            Bound::Included(k) | Bound::Excluded(k) => Some(k.as_slice()),
            Bound::Unbounded => None,
        };
        let hi = match &end {
            Bound::Included(k) | Bound::Excluded(k) => Some(k.as_slice()),
            Bound::Unbounded => None,
        };
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        children.push(Box::new(sv.mem.iter()));
        for m in &sv.imms {
            children.push(Box::new(m.iter()));
        }
        sv.version.add_iterators(&mut children, lo, hi, true);
        Ok(DbIterator::new(
            MergeIterator::new(children),
            snapshot,
            start,
            end,
            Box::new(sv),
        ))
    }

    /// Make the current memtable immutable and wait until every immutable
    /// memtable is in a table.
    pub fn flush(&self) -> Result<()> {
        self.inner.check_open()?;
        self.inner.flush_and_wait()
    }

    /// Flush, then compact every level into the next until all data sits in
    /// one level. Runs in the caller's thread; background compaction waits.
    pub fn compact(&self) -> Result<()> {
        self.inner.check_open()?;
        self.inner.flush_and_wait()?;
        self.inner.compact_all()
    }

    /// A consistent copy of the database in `dest` (a new directory),
    /// taken while it serves: live tables hard-linked, the WAL tail
    /// copied, a manifest of its own. Holds every write acknowledged
    /// before the call; writes go on meanwhile. See `checkpoint.rs`.
    pub fn checkpoint(&self, dest: impl AsRef<Path>) -> Result<CheckpointInfo> {
        self.inner.check_open()?;
        let inner = &self.inner;
        // The state and the tables it names, the segments it still needs
        // (opened before a flush could delete them) and how far the newest
        // one's records go, all at one moment: the WAL lock inside the
        // version lock (no path takes them the other way round) holds off
        // rotations and commits meanwhile. Holding `sv` keeps its tables'
        // files on disk until they are linked.
        let (state, sv, mut wals) = {
            let vs = inner.versions.lock();
            let mut w = inner.wal.lock();
            w.drain()?;
            let sv = inner.sv.load_full();
            let current = parse_number(
                &w.path.file_name().unwrap_or_default().to_string_lossy(),
                ".wal",
            );
            let mut wals = Vec::new();
            for e in std::fs::read_dir(&inner.dir).ctx(&inner.dir)? {
                let e = e.ctx(&inner.dir)?;
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(n) = parse_number(&name, ".wal") {
                    if n >= vs.state.log_number {
                        let p = e.path();
                        let f = File::open(&p).ctx(&p)?;
                        // The newest segment up to its records' end (its
                        // zero-filled tail is not needed); older ones whole.
                        let len = if Some(n) == current {
                            w.offset
                        } else {
                            f.metadata().ctx(&p)?.len()
                        };
                        wals.push((n, name, f, len));
                    }
                }
            }
            (vs.state.clone(), sv, wals)
        };
        wals.sort_by_key(|x| x.0);
        let tables = state
            .levels
            .iter()
            .flatten()
            .map(|m| (m.id, inner.dir.join(table_name(m.id))))
            .collect();
        let r = crate::checkpoint::write(
            dest.as_ref(),
            crate::checkpoint::Captured {
                state,
                tables,
                wals,
            },
        );
        drop(sv);
        r
    }

    /// Stop background work, make the WAL durable and release the directory.
    /// Idempotent; later calls return `Ok(())` at once.
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.inner.stats_snapshot()
    }

    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    pub fn options(&self) -> &Options {
        &self.inner.opts
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.inner.close();
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .expect("spawn background thread")
}

fn emit(opts: &Options, e: Event) {
    if let Some(l) = &opts.listener {
        l.on_event(&e);
    }
}

/// Apply one WAL record (`seq: u64 LE` then a batch body) to `mem`; returns
/// the last sequence number it used.
pub(crate) fn replay_record(
    mem: &Memtable,
    path: &Path,
    offset: u64,
    payload: Vec<u8>,
) -> Result<u64> {
    if payload.len() < 8 {
        return Err(Error::corruption(path, offset, "WAL record too short"));
    }
    let seq = u64::from_le_bytes(payload[..8].try_into().unwrap());
    let n = insert_entries(mem, &payload[8..], seq)
        .ok_or_else(|| Error::corruption(path, offset, "malformed batch in WAL record"))?;
    Ok(seq + n.max(1) - 1)
}

/// Insert a batch body's entries with sequences from `seq`. `None` if the
/// body is malformed.
fn insert_entries(mem: &Memtable, body: &[u8], seq: u64) -> Option<u64> {
    let mut entries = Vec::new();
    let n = batch::visit(body, |e| {
        let v = if e.kind == Kind::Put {
            &body[e.value.0..e.value.1]
        } else {
            &[][..]
        };
        entries.push((
            &body[e.key.0..e.key.1],
            seq + entries.len() as u64,
            e.kind,
            v,
        ));
    })?;
    mem.insert_many(&entries);
    Some(n)
}

/// Write a memtable's newest versions into a level-0 table.
fn flush_to_table(
    mem: &Arc<Memtable>,
    opts: &Options,
    sink: &dyn TableSink,
) -> Result<Option<Arc<Table>>> {
    let mut it = mem.iter();
    it.seek_to_first()?;
    if !it.valid() {
        return Ok(None);
    }
    let (id, path) = sink.new_table_path();
    let mut b = TableBuilder::create(
        &path,
        opts.block_size,
        opts.block_restart_interval,
        opts.bloom_bits_per_key,
    )?;
    let mut last: Vec<u8> = Vec::new();
    let mut first = true;
    let r = (|| -> Result<()> {
        while it.valid() {
            let k = it.key();
            let user = key::user_key(k);
            if first || user != last.as_slice() {
                b.add(k, it.value_ref())?;
                last.clear();
                last.extend_from_slice(user);
                first = false;
            }
            it.next()?;
        }
        Ok(())
    })();
    if let Err(e) = r {
        b.abandon();
        return Err(e);
    }
    b.finish()?;
    Ok(Some(sink.open_table(id, &path)?))
}

/// Allocates table numbers and opens tables: used by recovery (before
/// `Inner` exists) and, through `Inner::files`, by flush and compaction.
struct Files<'a> {
    dir: &'a Path,
    next_file: &'a AtomicU64,
    cache: &'a BlockCache,
    stats: &'a Arc<Stats>,
}

impl TableSink for Files<'_> {
    fn new_table_path(&self) -> (u64, PathBuf) {
        let id = self.next_file.fetch_add(1, Ordering::SeqCst);
        (id, self.dir.join(table_name(id)))
    }
    fn open_table(&self, id: u64, path: &Path) -> Result<Arc<Table>> {
        let t = Table::open(path, id, self.cache.clone(), self.stats.clone())?;
        Ok(Arc::new(t))
    }
}

impl Inner {
    fn files(&self) -> Files<'_> {
        Files {
            dir: &self.dir,
            next_file: &self.next_file,
            cache: &self.cache,
            stats: &self.stats,
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn check_bg_error(&self) -> Result<()> {
        if !self.bg_failed.load(Ordering::Acquire) {
            return Ok(());
        }
        if let Some(e) = &*self.bg_error.lock() {
            return Err(Error::Background(e.clone()));
        }
        Ok(())
    }

    fn check_no_space(&self) -> Result<()> {
        if !self.no_space_flag.load(Ordering::Acquire) {
            return Ok(());
        }
        match &*self.no_space.lock() {
            Some(m) => Err(Error::NoSpace(m.clone())),
            None => Ok(()),
        }
    }

    /// A flush or compaction found the disk full: remove what it left half
    /// written, refuse writes until a retry succeeds, and wait to retry.
    /// False if the database is shutting down.
    fn no_space_wait(&self, e: &Error) -> bool {
        if let Error::Io { path, .. } = e {
            if path.extension().is_some_and(|x| x == "tmp") {
                let _ = std::fs::remove_file(path);
            }
        }
        *self.no_space.lock() = Some(e.to_string());
        self.no_space_flag.store(true, Ordering::Release);
        self.stats.inc(&self.stats.no_space_errors);
        let mut g = self.bg.lock();
        if !g.shutdown {
            self.bg_cv.wait_for(&mut g, NO_SPACE_RETRY);
        }
        !g.shutdown
    }

    /// A background job succeeded: there was room again.
    fn room_again(&self) {
        if self.no_space_flag.swap(false, Ordering::AcqRel) {
            *self.no_space.lock() = None;
        }
    }

    fn set_bg_error(&self, e: &Error) {
        let mut g = self.bg_error.lock();
        if g.is_none() {
            *g = Some(e.summary());
        }
        self.bg_failed.store(true, Ordering::Release);
        drop(g);
        self.commit_cv.notify_all();
        self.bg_cv.notify_all();
    }

    fn emit(&self, e: Event) {
        emit(&self.opts, e);
    }

    /// Wake the background threads.
    fn kick(&self) {
        self.bg.lock().work += 1;
        self.bg_cv.notify_all();
    }

    fn write(&self, batches: Vec<WriteBatch>) -> Result<WriteTiming> {
        self.check_open()?;
        self.check_bg_error()?;
        self.check_no_space()?;
        let batches: Vec<WriteBatch> = batches.into_iter().filter(|b| !b.is_empty()).collect();
        if batches.is_empty() {
            return Ok(WriteTiming::default());
        }
        let began = Instant::now();
        self.make_room()?;
        let mut timing = WriteTiming {
            stall: began.elapsed(),
            ..Default::default()
        };
        let queued_from = Instant::now();
        let writes = batches.len() as u64;
        let user_bytes: u64 = batches.iter().map(|b| b.user_bytes).sum();
        let mut q = self.commit.lock();
        let mut my_last = 0;
        for batch in batches {
            let count = batch.count as u64;
            let seq = q.next_seq;
            q.next_seq += count;
            my_last = seq + count - 1;
            let at = record::begin(&mut q.buf);
            q.buf.extend_from_slice(&seq.to_le_bytes());
            q.buf.extend_from_slice(&batch.body);
            record::finish(&mut q.buf, at);
            q.batches.push((seq, batch));
        }
        q.last_seq = my_last;
        q.callers += 1;
        loop {
            if let Some(i) = q
                .failed
                .iter()
                .position(|g| (g.first..=g.last).contains(&my_last))
            {
                let g = &mut q.failed[i];
                let m = g.error.clone();
                g.waiting -= 1;
                if g.waiting == 0 {
                    q.failed.swap_remove(i);
                }
                return Err(Error::NoSpace(m));
            }
            if q.done_seq >= my_last {
                drop(q);
                self.stats.add(&self.stats.user_bytes_written, user_bytes);
                self.stats.add(&self.stats.writes, writes);
                if timing.sync.is_zero() {
                    // Committed by another caller's group: all of it was
                    // waiting.
                    timing.queued = queued_from.elapsed();
                }
                return Ok(timing);
            }
            self.check_bg_error()?;
            if !q.leader {
                q.leader = true;
                let buf = std::mem::take(&mut q.buf);
                let batches = std::mem::take(&mut q.batches);
                let last = q.last_seq;
                let first = batches.first().map_or(last, |b| b.0);
                let callers = std::mem::take(&mut q.callers);
                drop(q);
                let led = Instant::now();
                timing.queued = led - queued_from;
                let r = self.commit_group(&buf, batches, last).map(|sync| {
                    timing.sync = sync.unwrap_or_default();
                    timing.commit = led.elapsed().saturating_sub(timing.sync);
                });
                q = self.commit.lock();
                q.leader = false;
                if q.buf.capacity() == 0 && buf.capacity() <= 1 << 20 {
                    let mut buf = buf;
                    buf.clear();
                    q.buf = buf;
                }
                match r {
                    Ok(()) => q.done_seq = last,
                    Err(e) if e.is_no_space() => {
                        // Nothing of the group reached the log (the WAL
                        // fills ahead of its records): refuse just it.
                        self.stats.inc(&self.stats.no_space_errors);
                        q.done_seq = last;
                        // The leader answers for itself below; the others
                        // find the group here.
                        if callers > 1 {
                            q.failed.push(FailedGroup {
                                first,
                                last,
                                error: e.to_string(),
                                waiting: callers - 1,
                            });
                        }
                        self.commit_cv.notify_all();
                        return Err(Error::NoSpace(e.to_string()));
                    }
                    Err(e) => {
                        self.set_bg_error(&e);
                        self.commit_cv.notify_all();
                        return Err(e);
                    }
                }
                self.commit_cv.notify_all();
            } else {
                self.commit_cv.wait(&mut q);
            }
        }
    }

    /// The leader's work: one write and (for `Sync`) one fsync for the whole
    /// group, then the memtable inserts, then publish.
    /// Returns the fsync's duration under `Sync`.
    fn commit_group(
        &self,
        buf: &[u8],
        batches: Vec<(u64, WriteBatch)>,
        last: u64,
    ) -> Result<Option<Duration>> {
        let mut wal = self.wal.lock();
        if self.sv.load().mem.size() >= self.opts.memtable_size {
            self.rotate(&mut wal)?;
        }
        wal.append(buf, self.opts.durability == Durability::None)?;
        self.stats.add(&self.stats.wal_bytes, buf.len() as u64);
        let mut sync = None;
        if self.opts.durability == Durability::Sync {
            let t = Instant::now();
            synced(wal.file.sync_data(), &wal.path)?;
            if !self.opts.test_sync_delay.is_zero() {
                std::thread::sleep(self.opts.test_sync_delay);
            }
            let d = t.elapsed();
            self.stats
                .add(&self.stats.wal_sync_nanos, d.as_nanos() as u64);
            self.stats.inc(&self.stats.wal_syncs);
            sync = Some(d);
        }
        if self.opts.listener.is_some() {
            self.emit(Event::WalCommit {
                writes: batches.iter().map(|(_, b)| b.count as usize).sum(),
                bytes: buf.len() as u64,
                sync,
            });
        }
        self.stats.inc(&self.stats.commit_groups);
        self.stats
            .add(&self.stats.commit_group_writes, batches.len() as u64);
        let sv = self.sv.load();
        for (seq, b) in batches {
            // The body was built by `WriteBatch`; it is well formed.
            insert_entries(&sv.mem, &b.body, seq).expect("well-formed batch");
        }
        self.visible_seq.store(last, Ordering::Release);
        Ok(sync)
    }

    /// Swap in a new WAL and memtable; the old memtable waits for flush.
    /// Called with the WAL lock held.
    ///
    /// Under `sync` every record of the old segment is already on disk, and
    /// the new segment's directory entry is made durable here, before any
    /// write in it is acknowledged. Under the other modes both fsyncs are
    /// left to the flush thread (see `sync_retired_wals`), off the write path.
    fn rotate(&self, wal: &mut Wal) -> Result<()> {
        let n = self.next_file.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.join(wal_name(n));
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .ctx(&path)?;
        if self.opts.durability == Durability::Sync {
            manifest::sync_dir(&self.dir)?;
        }
        wal.drain()?;
        let old = std::mem::replace(wal, Wal::new(path, file, self.opts.durability));
        if self.opts.durability != Durability::Sync {
            self.retired_wals.lock().push((old.file, old.path));
        }
        let _g = self.sv_lock.lock();
        let old = self.sv.load_full();
        let mut imms = Vec::with_capacity(old.imms.len() + 1);
        imms.push(old.mem.clone());
        imms.extend(old.imms.iter().cloned());
        self.sv.store(Arc::new(SuperVersion {
            mem: Arc::new(Memtable::new(n, self.opts.memtable_size)),
            imms,
            version: old.version.clone(),
        }));
        drop(_g);
        self.kick();
        Ok(())
    }

    fn stall_reason(&self) -> Option<StallReason> {
        let sv = self.sv.load();
        if sv.imms.len() >= self.opts.max_immutable_memtables
            && sv.mem.size() >= self.opts.memtable_size
        {
            return Some(StallReason::TooManyImmutableMemtables);
        }
        if sv.version.levels[0].len() >= self.opts.l0_stop_trigger {
            return Some(StallReason::TooManyLevel0Tables);
        }
        None
    }

    /// End a stall episode if its cause is gone.
    fn end_stall_if_clear(&self) {
        let mut st = self.stall.lock();
        if let Some((start, reason)) = *st {
            if self.stall_reason().is_none() {
                *st = None;
                let d = start.elapsed();
                self.stats.add(&self.stats.stall_nanos, d.as_nanos() as u64);
                drop(st);
                self.emit(Event::WriteStallFinished {
                    reason,
                    duration: d,
                });
            }
        }
    }

    /// Slow down or wait while flush and compaction catch up; fail with
    /// `Busy` after `stall_timeout`.
    fn make_room(&self) -> Result<()> {
        let mut deadline: Option<Instant> = None;
        loop {
            let Some(reason) = self.stall_reason() else {
                if deadline.is_some() {
                    self.end_stall_if_clear();
                }
                break;
            };
            let now = Instant::now();
            let d = *deadline.get_or_insert(now + self.opts.stall_timeout);
            {
                let mut st = self.stall.lock();
                if st.is_none() {
                    *st = Some((now, reason));
                    self.stats.inc(&self.stats.stalls);
                    drop(st);
                    self.emit(Event::WriteStallStarted { reason });
                }
            }
            if now >= d {
                self.stats.inc(&self.stats.busy_errors);
                return Err(Error::Busy(format!(
                    "writes stalled for {:?}: {reason}",
                    self.opts.stall_timeout
                )));
            }
            self.check_bg_error()?;
            self.check_open()?;
            let mut g = self.bg.lock();
            self.bg_cv
                .wait_for(&mut g, (d - now).min(Duration::from_millis(10)));
        }
        if self.sv.load().version.levels[0].len() >= self.opts.l0_slowdown_trigger {
            self.stats.inc(&self.stats.slowdowns);
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    fn flush_and_wait(&self) -> Result<()> {
        {
            let mut wal = self.wal.lock();
            if !self.sv.load().mem.is_empty() {
                self.rotate(&mut wal)?;
            }
        }
        let mut g = self.bg.lock();
        loop {
            self.check_bg_error()?;
            if self.sv.load().imms.is_empty() {
                return Ok(());
            }
            if self.closed.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            self.bg_cv.wait_for(&mut g, Duration::from_millis(50));
        }
    }

    fn set_aside(&self, e: &Error) -> Option<PathBuf> {
        let Error::Corruption {
            file,
            offset,
            reason,
        } = e
        else {
            return None;
        };
        let id = parse_number(file.file_name()?.to_str()?, ".sst")?;
        // No compaction swaps the table out meanwhile.
        let _c = self.compaction_lock.lock();
        let level = {
            let sv = self.sv.load();
            (0..sv.version.levels.len()).find(|&l| sv.version.table(l, id).is_some())?
        };
        let dest = keep_in_quarantine(&self.dir, file, id);
        let edit = VersionEdit {
            deleted: vec![(level, id)],
            ..Default::default()
        };
        if self.log_and_apply(edit, &[], None).is_err() {
            return None;
        }
        self.stats.inc(&self.stats.tables_quarantined);
        self.emit(Event::TableQuarantined {
            file: file.clone(),
            offset: *offset,
            reason: reason.clone(),
            moved_to: dest.clone(),
        });
        Some(dest)
    }

    /// Record `edit` in the manifest and install the new version; `flushed`
    /// is the immutable memtable the edit makes redundant.
    fn log_and_apply(
        &self,
        mut edit: VersionEdit,
        added: &[Arc<Table>],
        flushed: Option<&Arc<Memtable>>,
    ) -> Result<()> {
        let mut vs = self.versions.lock();
        edit.next_file = Some(self.next_file.load(Ordering::SeqCst));
        // An edit that does not fit the state (a table set aside while a
        // compaction read it) must never reach the manifest: recovery
        // would refuse it.
        let mut next = vs.state.clone();
        next.apply(&edit)
            .map_err(|m| Error::InvalidArgument(format!("version edit refused: {m}")))?;
        vs.manifest.append(&edit)?;
        vs.state = next;
        if vs.manifest.size() >= self.opts.manifest_checkpoint_size {
            let n = self.next_file.fetch_add(1, Ordering::SeqCst);
            vs.state.next_file = self.next_file.load(Ordering::SeqCst);
            let old = vs.manifest.number();
            // The edit is in the current manifest already: a checkpoint that
            // fails (a full disk) leaves that one in use, to be tried again.
            if let Ok(m) = Manifest::checkpoint(&self.dir, n, &vs.state, Some(old)) {
                vs.manifest = m;
            }
        }
        let _g = self.sv_lock.lock();
        let old = self.sv.load_full();
        let version = old.version.apply(&edit, added);
        for (level, id) in &edit.deleted {
            if let Some(t) = old.version.table(*level, *id) {
                // A table moved by a trivial move is deleted and re-added.
                if !edit.added.iter().any(|m| m.id == *id) {
                    t.mark_obsolete();
                }
            }
        }
        let imms = match flushed {
            Some(f) => old
                .imms
                .iter()
                .filter(|m| !Arc::ptr_eq(m, f))
                .cloned()
                .collect(),
            None => old.imms.clone(),
        };
        self.sv.store(Arc::new(SuperVersion {
            mem: old.mem.clone(),
            imms,
            version: Arc::new(version),
        }));
        Ok(())
    }

    fn flush_loop(self: Arc<Self>) {
        loop {
            let imm = {
                let mut g = self.bg.lock();
                loop {
                    if g.shutdown || self.bg_failed.load(Ordering::Acquire) {
                        return;
                    }
                    if let Some(m) = self.sv.load().imms.last() {
                        break m.clone();
                    }
                    self.bg_cv.wait(&mut g);
                }
            };
            match self.flush_one(&imm) {
                Ok(()) => self.room_again(),
                Err(e) if e.is_no_space() => {
                    if !self.no_space_wait(&e) {
                        return;
                    }
                    continue;
                }
                Err(e) => {
                    self.set_bg_error(&e);
                    return;
                }
            }
            self.end_stall_if_clear();
            self.kick();
        }
    }

    /// fsync WAL segments retired by `rotate` (and the directory), so that
    /// every segment but the newest is complete on disk.
    fn sync_retired_wals(&self) -> Result<()> {
        let retired = std::mem::take(&mut *self.retired_wals.lock());
        if retired.is_empty() {
            return Ok(());
        }
        for (file, path) in &retired {
            synced(file.sync_data(), path)?;
        }
        manifest::sync_dir(&self.dir)
    }

    fn flush_one(&self, imm: &Arc<Memtable>) -> Result<()> {
        self.sync_retired_wals()?;
        let job = self.jobs.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        self.emit(Event::FlushStarted {
            job,
            memtable_bytes: imm.size() as u64,
        });
        let table = flush_to_table(imm, &self.opts, &self.files())?;
        // WALs older than the next memtable still waiting are redundant.
        let sv = self.sv.load();
        let pos = sv.imms.iter().position(|m| Arc::ptr_eq(m, imm));
        let next_wal = match pos {
            Some(p) if p > 0 => sv.imms[p - 1].wal(),
            _ => sv.mem.wal(),
        };
        drop(sv);
        let mut edit = VersionEdit {
            log_number: Some(next_wal),
            ..Default::default()
        };
        let mut added = vec![];
        let mut bytes = 0;
        if let Some(t) = &table {
            edit.added.push(meta_of(0, t));
            edit.last_seq = Some(t.props().max_seq);
            bytes = t.size();
            added.push(t.clone());
        }
        if let Err(e) = self.log_and_apply(edit, &added, Some(imm)) {
            // Not in the manifest: the table goes (a retry writes another).
            for t in &added {
                t.mark_obsolete();
            }
            return Err(e);
        }
        // Delete WAL files the manifest no longer needs.
        if let Ok(rd) = std::fs::read_dir(&self.dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if parse_number(&name, ".wal").is_some_and(|n| n < next_wal) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let d = start.elapsed();
        self.stats.inc(&self.stats.flushes);
        self.stats.add(&self.stats.flush_bytes, bytes);
        self.stats.add(&self.stats.flush_nanos, d.as_nanos() as u64);
        self.emit(Event::FlushFinished {
            job,
            table: table.as_ref().map_or(0, |t| t.id()),
            bytes_written: bytes,
            duration: d,
        });
        Ok(())
    }

    fn compaction_loop(self: Arc<Self>) {
        let mut seen = 0;
        loop {
            {
                let mut g = self.bg.lock();
                while !g.shutdown && g.work == seen {
                    self.bg_cv.wait(&mut g);
                }
                if g.shutdown {
                    return;
                }
                seen = g.work;
            }
            if self.bg_failed.load(Ordering::Acquire) {
                return;
            }
            loop {
                match self.compact_once() {
                    Err(e) if e.is_no_space() => {
                        if !self.no_space_wait(&e) {
                            return;
                        }
                    }
                    Ok(true) => {
                        self.room_again();
                        self.end_stall_if_clear();
                        self.bg_cv.notify_all();
                        if self.bg.lock().shutdown {
                            return;
                        }
                    }
                    Ok(false) => break,
                    // A damaged input: set aside, then compact the rest.
                    Err(e) if self.set_aside(&e).is_some() => {}
                    Err(e) => {
                        self.set_bg_error(&e);
                        return;
                    }
                }
            }
        }
    }

    /// Run one picked compaction; false if nothing needed doing.
    fn compact_once(&self) -> Result<bool> {
        let mut pointers = self.compaction_lock.lock();
        let version = self.sv.load().version.clone();
        let Some(c) = compaction::pick(&version, &self.opts, &mut pointers) else {
            return Ok(false);
        };
        self.run_compaction(&c, &version)?;
        Ok(true)
    }

    fn run_compaction(&self, c: &Compaction, version: &Version) -> Result<()> {
        let job = self.jobs.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        self.emit(Event::CompactionStarted {
            job,
            input_level: c.level,
            output_level: c.output_level,
            input_tables: c.inputs.len() + c.next_inputs.len(),
            input_bytes: c.input_bytes(),
        });
        let out = compaction::run(c, version, &self.opts, &self.files())?;
        if let Err(e) = self.log_and_apply(out.edit, &out.tables, None) {
            for t in &out.tables {
                t.mark_obsolete();
            }
            return Err(e);
        }
        let d = start.elapsed();
        self.stats.inc(&self.stats.compactions);
        self.stats
            .add(&self.stats.compaction_bytes_read, out.bytes_read);
        self.stats
            .add(&self.stats.compaction_bytes_written, out.bytes_written);
        self.stats
            .add(&self.stats.compaction_nanos, d.as_nanos() as u64);
        self.emit(Event::CompactionFinished {
            job,
            input_level: c.level,
            output_level: c.output_level,
            bytes_read: out.bytes_read,
            bytes_written: out.bytes_written,
            output_tables: out.tables.len(),
            duration: d,
        });
        Ok(())
    }

    /// Compact level by level until every table sits in one level.
    fn compact_all(&self) -> Result<()> {
        let _pointers = self.compaction_lock.lock();
        loop {
            let version = self.sv.load().version.clone();
            let nonempty: Vec<usize> = (0..version.levels.len())
                .filter(|&l| !version.levels[l].is_empty())
                .collect();
            let Some(&top) = nonempty.first() else {
                return Ok(());
            };
            let bottom = *nonempty.last().unwrap();
            if top == bottom && (top != 0 || version.levels[0].is_empty()) {
                return Ok(());
            }
            let c = compaction::whole_level(&version, top);
            self.run_compaction(&c, &version)?;
        }
    }

    fn sync_loop(self: Arc<Self>, ms: u64) {
        let period = Duration::from_millis(ms);
        loop {
            {
                let mut g = self.bg.lock();
                if g.shutdown {
                    return;
                }
                self.bg_cv.wait_for(&mut g, period);
                if g.shutdown {
                    return;
                }
            }
            let (file, path) = {
                let w = self.wal.lock();
                (w.file.clone(), w.path.clone())
            };
            let t = Instant::now();
            if let Err(e) = file.sync_data() {
                self.set_bg_error(&Error::io(path, e));
                return;
            }
            self.stats
                .add(&self.stats.wal_sync_nanos, t.elapsed().as_nanos() as u64);
            self.stats.inc(&self.stats.wal_syncs);
        }
    }

    fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Let an active commit group finish.
        {
            let mut q = self.commit.lock();
            while q.leader {
                self.commit_cv.wait(&mut q);
            }
        }
        {
            let mut g = self.bg.lock();
            g.shutdown = true;
        }
        self.bg_cv.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        self.sync_retired_wals()?;
        let mut wal = self.wal.lock();
        wal.drain()?;
        synced(wal.file.sync_data(), &wal.path)?;
        Ok(())
    }

    fn stats_snapshot(&self) -> StatsSnapshot {
        let mut s = StatsSnapshot::from_counters(&self.stats);
        let sv = self.sv.load();
        s.memtable_bytes =
            sv.mem.size() as u64 + sv.imms.iter().map(|m| m.size() as u64).sum::<u64>();
        s.immutable_memtables = sv.imms.len();
        s.no_space = self.no_space_flag.load(Ordering::Acquire);
        s.levels = sv
            .version
            .levels
            .iter()
            .map(|l| LevelStats {
                tables: l.len(),
                bytes: l.iter().map(|t| t.size()).sum(),
            })
            .collect();
        s.last_sequence = self.visible_seq.load(Ordering::Acquire);
        s.cache_usage_bytes = self.cache.usage();
        s.cache_capacity_bytes = self.cache.capacity() as u64;
        let wal_bytes: u64 = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".wal"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        s.disk_bytes = s.levels.iter().map(|l| l.bytes).sum::<u64>() + wal_bytes;
        s
    }
}
