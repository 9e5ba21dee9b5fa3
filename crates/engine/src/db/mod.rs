//! The database's door: point reads, scans, checkpoints, close and stats
//! here; opening and recovery in `open`, the write path with group commit
//! and back-pressure in `commit`, the WAL file in `wal`, the background
//! flush, compaction and WAL-sync threads in `background`, the checksum
//! scrub in `scrub`. Owns the
//! coordination between those parts; the formats and algorithms live in
//! their own modules and must stay there.
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
use crate::sstable::{Compression, Table, TableBuilder};
use crate::stats::{LevelStats, Stats, StatsSnapshot, WriteTiming};
use crate::version::{meta_of, Version};

mod background;
mod commit;
mod open;
mod scrub;
mod wal;

pub use scrub::ScrubStep;

use background::{flush_to_table, Files};
use commit::CommitQueue;
use wal::Wal;

/// What readers see: all sources at one moment.
struct SuperVersion {
    mem: Arc<Memtable>,
    /// Newest first.
    imms: Vec<Arc<Memtable>>,
    version: Arc<Version>,
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
    /// How long the last commit group took, in nanoseconds: its WAL write,
    /// its fsync (under `sync`) and its memtable inserts.
    last_commit_nanos: AtomicU64,
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
    /// Where the scrub stopped (`scrub`).
    scrub: Mutex<scrub::Cursor>,
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
        self.inner.opts.durability == Durability::Sync || self.would_stall()
    }

    /// Whether a write now would wait on flush and compaction (a stall or
    /// a slowdown), whatever the durability.
    pub fn would_stall(&self) -> bool {
        let i = &self.inner;
        i.stall_reason().is_some() || i.slowed()
    }

    /// How long the last commit group took to write, fsync (under `sync`)
    /// and insert: what a caller that commits on its own thread should
    /// expect to be held for. Zero before the first commit.
    pub fn last_commit_time(&self) -> Duration {
        Duration::from_nanos(self.inner.last_commit_nanos.load(Ordering::Relaxed))
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

    /// Why writes are refused now, if they are: a failed fsync or
    /// background job (read-only until reopened), or a full disk (until a
    /// retry finds room).
    pub fn write_refusal(&self) -> Option<String> {
        let i = &self.inner;
        i.check_bg_error()
            .and_then(|()| i.check_no_space())
            .err()
            .map(|e| e.to_string())
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
