//! Opening a database: the directory and its lock, the manifest, every
//! table, the WALs replayed into memtables (a torn tail cut off, a damaged
//! record reported with its file and offset), and the background threads
//! started. Owns recovery; must not serve requests.

use super::*;

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
                // The first memtable fills at a random 50-100 % of the
                // size: stores started together (a cluster's nodes under
                // one load) then flush at different moments, not all at
                // once for ever after.
                mem: Arc::new(
                    Memtable::new(new_wal, opts.memtable_size)
                        .with_limit(first_limit(opts.memtable_size)),
                ),
                imms: vec![],
                version,
            }),
            sv_lock: Mutex::new(()),
            next_file,
            visible_seq: AtomicU64::new(last_seq),
            last_commit_nanos: AtomicU64::new(0),
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
            scrub: Mutex::new(Default::default()),
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
        threads.push(spawn(strata_api::threads::names::FLUSH, move || {
            i.flush_loop()
        }));
        let i = inner.clone();
        threads.push(spawn(strata_api::threads::names::COMPACT, move || {
            i.compaction_loop()
        }));
        if let Durability::Interval(ms) = inner.opts.durability {
            let i = inner.clone();
            threads.push(spawn(strata_api::threads::names::WALSYNC, move || {
                i.sync_loop(ms)
            }));
        }
        if !inner.opts.test_lock_hold.is_zero() {
            let i = inner.clone();
            threads.push(spawn(strata_api::threads::names::LOCK_HOLD, move || {
                i.lock_hold_loop()
            }));
        }
        *inner.threads.lock() = threads;
        inner.kick();
        Ok(Db { inner })
    }
}

/// Where the first memtable after opening is full: a random point in
/// the upper half of `size`.
fn first_limit(size: usize) -> usize {
    size / 2 + rand::random_range(0..=size / 2)
}
