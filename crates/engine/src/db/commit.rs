//! The write path: writers join a commit queue, the first without a leader
//! leads, writes the group's records to the WAL with one `write` (and one
//! fsync under `sync`), inserts them into the memtable and publishes the
//! sequence; a group that failed for want of space is answered to each of
//! its writers. Before joining, a writer waits while flush and compaction
//! are behind (a stall) or sleeps a little (a slowdown). Owns the queue and
//! the back-pressure; must not flush or compact (`background`).

use super::*;

pub(super) struct CommitQueue {
    pub(super) next_seq: u64,
    pub(super) buf: Vec<u8>,
    pub(super) batches: Vec<(u64, WriteBatch)>,
    pub(super) last_seq: u64,
    pub(super) leader: bool,
    pub(super) done_seq: u64,
    /// Writers whose records wait in `buf` (the next group's writers).
    pub(super) callers: usize,
    /// Commit groups that failed for want of space: their sequence range,
    /// the error, and how many of their writers have yet to see it. Each
    /// waiting writer finds its group here and answers the error (nothing
    /// of it was written); the entry goes when the last one has. A failed
    /// group still advances `done_seq`, so an entry must outlive every
    /// writer of its group: dropping it earlier would acknowledge writes
    /// that were never made.
    pub(super) failed: Vec<FailedGroup>,
}

pub(super) struct FailedGroup {
    pub(super) first: u64,
    pub(super) last: u64,
    pub(super) error: String,
    pub(super) waiting: usize,
}

impl Inner {
    pub(super) fn write(&self, batches: Vec<WriteBatch>) -> Result<WriteTiming> {
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
                self.last_commit_nanos
                    .store(led.elapsed().as_nanos() as u64, Ordering::Relaxed);
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
    pub(super) fn commit_group(
        &self,
        buf: &[u8],
        batches: Vec<(u64, WriteBatch)>,
        last: u64,
    ) -> Result<Option<Duration>> {
        // The lock at once, or timed: the wait is another thread's hold.
        let mut wal = match self.wal.try_lock() {
            Some(w) => w,
            None => {
                let t = Instant::now();
                let w = self.wal.lock();
                self.stats.add(
                    &self.stats.wal_lock_wait_nanos,
                    t.elapsed().as_nanos() as u64,
                );
                w
            }
        };
        if self.sv.load().mem.full() {
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
        if !self.opts.test_write_spin.is_zero() {
            let writes: u32 = batches.iter().map(|(_, b)| b.count).sum();
            let until = Instant::now() + self.opts.test_write_spin * writes;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
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
    pub(super) fn rotate(&self, wal: &mut Wal) -> Result<()> {
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

    pub(super) fn stall_reason(&self) -> Option<StallReason> {
        let sv = self.sv.load();
        if sv.imms.len() >= self.opts.max_immutable_memtables && sv.mem.full() {
            return Some(StallReason::TooManyImmutableMemtables);
        }
        if sv.version.levels[0].len() >= self.opts.l0_stop_trigger {
            return Some(StallReason::TooManyLevel0Tables);
        }
        None
    }

    /// Level 0 has grown to the slowdown trigger: each write sleeps a
    /// little so that compaction catches up.
    pub(super) fn slowed(&self) -> bool {
        self.sv.load().version.levels[0].len() >= self.opts.l0_slowdown_trigger
    }

    /// End a stall episode if its cause is gone.
    pub(super) fn end_stall_if_clear(&self) {
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
    pub(super) fn make_room(&self) -> Result<()> {
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
        if self.slowed() {
            self.stats.inc(&self.stats.slowdowns);
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }
}
