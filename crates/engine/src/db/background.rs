//! The background threads: flush (immutable memtables to level-0 tables,
//! retired WALs synced first), compaction, and the periodic WAL sync of
//! `interval` durability (and, test only, the held-lock fail point).
//! Owns their loops; must not serve reads or writes
//! (`commit` and the door in `mod.rs` do).

use super::*;

/// Write a memtable's newest versions into a level-0 table.
pub(super) fn flush_to_table(
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
        Compression::for_level(&opts.compression, 0),
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
pub(super) struct Files<'a> {
    pub(super) dir: &'a Path,
    pub(super) next_file: &'a AtomicU64,
    pub(super) cache: &'a BlockCache,
    pub(super) stats: &'a Arc<Stats>,
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
    pub(super) fn flush_loop(self: Arc<Self>) {
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
    pub(super) fn sync_retired_wals(&self) -> Result<()> {
        let retired = std::mem::take(&mut *self.retired_wals.lock());
        if retired.is_empty() {
            return Ok(());
        }
        for (file, path) in &retired {
            synced(file.sync_data(), path)?;
        }
        manifest::sync_dir(&self.dir)
    }

    pub(super) fn flush_one(&self, imm: &Arc<Memtable>) -> Result<()> {
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

    pub(super) fn compaction_loop(self: Arc<Self>) {
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
    pub(super) fn compact_once(&self) -> Result<bool> {
        let mut pointers = self.compaction_lock.lock();
        let version = self.sv.load().version.clone();
        let Some(c) = compaction::pick(&version, &self.opts, &mut pointers) else {
            return Ok(false);
        };
        self.run_compaction(&c, &version)?;
        Ok(true)
    }

    pub(super) fn run_compaction(&self, c: &Compaction, version: &Version) -> Result<()> {
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
    pub(super) fn compact_all(&self) -> Result<()> {
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

    /// The held-lock fail point (`Options::test_lock_hold`): 10 ms after it
    /// let go, the WAL's lock taken again and held that long, asleep, until
    /// shutdown.
    pub(super) fn lock_hold_loop(self: Arc<Self>) {
        while self.wait_unless_shutdown(Duration::from_millis(10)) {
            let _w = self.wal.lock();
            std::thread::sleep(self.opts.test_lock_hold);
        }
    }

    /// Wait `period` (or until woken), then whether to go on: false once
    /// the engine is shutting down.
    fn wait_unless_shutdown(&self, period: Duration) -> bool {
        let mut g = self.bg.lock();
        if g.shutdown {
            return false;
        }
        self.bg_cv.wait_for(&mut g, period);
        !g.shutdown
    }

    pub(super) fn sync_loop(self: Arc<Self>, ms: u64) {
        let period = Duration::from_millis(ms);
        while self.wait_unless_shutdown(period) {
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
}
