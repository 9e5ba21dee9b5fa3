//! End-to-end behaviour of the engine through its public API: recovery,
//! corruption reports, large values, events, stalls and concurrency.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strata_engine::{Db, Durability, Error, Event, EventLog, Options, WriteBatch};

fn files_with(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

fn manifest_of(dir: &Path) -> PathBuf {
    let name = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    dir.join(name.trim())
}

fn flip(path: &Path, offset: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[offset] ^= 0x20;
    std::fs::write(path, b).unwrap();
}

fn fill(db: &Db, n: usize, tag: &str) {
    for i in 0..n {
        db.put(
            format!("key{i:06}").as_bytes(),
            format!("{tag}-{i}").as_bytes(),
        )
        .unwrap();
    }
}

#[test]
fn data_survives_reopen_with_every_durability() {
    for d in [Durability::Sync, Durability::Interval(5), Durability::None] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            durability: d,
            ..common::tiny()
        };
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        fill(&db, 500, "a");
        db.delete(b"key000007").unwrap();
        db.put(b"", b"empty key").unwrap();
        db.put(b"empty-value", b"").unwrap();
        drop(db);
        let db = Db::open(dir.path(), opts).unwrap();
        assert_eq!(db.get(b"key000499").unwrap().unwrap(), "a-499".as_bytes());
        assert_eq!(db.get(b"key000007").unwrap(), None);
        assert_eq!(db.get(b"").unwrap().unwrap(), "empty key".as_bytes());
        assert_eq!(db.get(b"empty-value").unwrap().unwrap(), "".as_bytes());
        assert_eq!(db.scan(..).unwrap().count(), 501);
    }
}

#[test]
fn operations_after_close_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::tiny()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.close().unwrap();
    db.close().unwrap();
    assert!(matches!(db.put(b"a", b"2"), Err(Error::Closed)));
    assert!(matches!(db.get(b"a"), Err(Error::Closed)));
}

#[test]
fn second_open_of_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _db = Db::open(dir.path(), common::tiny()).unwrap();
    match Db::open(dir.path(), common::tiny()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("in use")),
        other => panic!("expected refusal, got {:?}", other.err()),
    }
}

#[test]
fn torn_final_wal_record_is_discarded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        memtable_size: 1 << 20,
        ..common::tiny()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    fill(&db, 10, "v");
    drop(db);
    // Half of a record where the next one would go, over the zero-filled
    // space ahead of the records, as a crash in the middle of a write
    // would leave it.
    let wal = files_with(dir.path(), "wal").pop().unwrap();
    let mut bytes = std::fs::read(&wal).unwrap();
    let end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    let head = bytes[..20].to_vec();
    if bytes.len() < end + 20 {
        bytes.resize(end + 20, 0);
    }
    bytes[end..end + 20].copy_from_slice(&head);
    std::fs::write(&wal, &bytes).unwrap();
    let log = Arc::new(EventLog::default());
    let db = Db::open(
        dir.path(),
        Options {
            listener: Some(log.clone()),
            ..opts
        },
    )
    .unwrap();
    assert_eq!(db.scan(..).unwrap().count(), 10);
    assert_eq!(db.stats().torn_wal_records, 1);
    let events = log.events.lock();
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::TornWalRecord { file, .. } if *file == wal)));
}

#[test]
fn wal_damage_in_the_middle_names_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        memtable_size: 1 << 20,
        ..common::tiny()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    fill(&db, 100, "v");
    drop(db);
    let wal = files_with(dir.path(), "wal").pop().unwrap();
    // Flip a byte in the middle of the records (the file is zero-filled
    // beyond them).
    let bytes = std::fs::read(&wal).unwrap();
    let len = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    flip(&wal, len / 2);
    match Db::open(dir.path(), opts) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, wal);
            assert!(offset > 0 && (offset as usize) <= len / 2);
        }
        other => panic!("expected corruption, got {:?}", other.err()),
    }
}

#[test]
fn sstable_damage_is_reported_not_returned() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::tiny()).unwrap();
    fill(&db, 2000, "v");
    db.compact().unwrap();
    drop(db);
    let tables = files_with(dir.path(), "sst");
    assert!(!tables.is_empty());
    let victim = &tables[0];
    flip(victim, 100);
    // Either open fails (damage in metadata) or reading the damaged block
    // fails; never a panic or a wrong value.
    match Db::open(dir.path(), common::tiny()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(&file, victim),
        Err(e) => panic!("unexpected error {e}"),
        Ok(db) => {
            let mut saw = false;
            for r in db.scan(..).unwrap() {
                match r {
                    Ok((k, v)) => {
                        let i: usize = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
                        assert_eq!(v, format!("v-{i}").as_bytes());
                    }
                    Err(Error::Corruption { file, offset, .. }) => {
                        assert_eq!(&file, victim);
                        assert!(offset <= 100);
                        saw = true;
                        break;
                    }
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
            assert!(saw, "the damaged block was never reported");
        }
    }
}

#[test]
fn manifest_damage_names_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::tiny()).unwrap();
    fill(&db, 2000, "v");
    db.flush().unwrap();
    fill(&db, 10, "w");
    db.flush().unwrap();
    drop(db);
    let m = manifest_of(dir.path());
    flip(&m, 20);
    match Db::open(dir.path(), common::tiny()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, m),
        other => panic!("expected corruption, got {:?}", other.err()),
    }
    // CURRENT naming garbage is reported too.
    std::fs::write(dir.path().join("CURRENT"), "garbage\n").unwrap();
    assert!(matches!(
        Db::open(dir.path(), common::tiny()),
        Err(Error::Corruption { .. })
    ));
}

#[test]
fn large_values_roundtrip_through_tables() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        memtable_size: 4 << 20,
        block_size: 4096,
        ..common::tiny()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let big: Vec<u8> = (0..(3 << 20)).map(|i| (i * 31 % 251) as u8).collect();
    for i in 0..6u8 {
        let mut v = big.clone();
        v[0] = i;
        db.put(&[b'b', i], &v).unwrap();
    }
    db.put(b"one-mib", &vec![7u8; 1 << 20]).unwrap();
    db.compact().unwrap();
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..6u8 {
        let v = db.get(&[b'b', i]).unwrap().unwrap();
        assert_eq!(v.len(), big.len());
        assert_eq!(v[0], i);
        assert_eq!(v[1..], big[1..]);
    }
    assert_eq!(db.get(b"one-mib").unwrap().unwrap().len(), 1 << 20);
}

#[test]
fn flush_and_compaction_events_and_stats() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EventLog::default());
    let db = Db::open(
        dir.path(),
        Options {
            listener: Some(log.clone()),
            ..common::tiny()
        },
    )
    .unwrap();
    fill(&db, 3000, "v");
    db.compact().unwrap();
    let s = db.stats();
    assert!(s.flushes >= 2, "{s:?}");
    assert!(s.compactions >= 1, "{s:?}");
    assert!(s.write_amplification() > 1.0);
    assert_eq!(s.levels[0].tables, 0);
    let events = log.events.lock();
    let started = events
        .iter()
        .filter(|e| matches!(e, Event::FlushStarted { .. }))
        .count();
    let finished = events
        .iter()
        .filter(|e| matches!(e, Event::FlushFinished { .. }))
        .count();
    assert_eq!(started, finished);
    assert!(events.iter().any(
        |e| matches!(e, Event::CompactionFinished { bytes_written, .. } if *bytes_written > 0)
    ));
}

/// A listener that blocks flushes, to provoke a write stall.
struct SlowFlush {
    release: AtomicBool,
    stalls: parking_lot::Mutex<Vec<String>>,
}

impl strata_engine::EventListener for SlowFlush {
    fn on_event(&self, e: &Event) {
        match e {
            Event::FlushStarted { .. } => {
                while !self.release.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            Event::WriteStallStarted { reason } => self.stalls.lock().push(reason.to_string()),
            _ => {}
        }
    }
}

#[test]
fn stalled_writes_fail_busy_after_bounded_wait_then_recover() {
    let dir = tempfile::tempdir().unwrap();
    let l = Arc::new(SlowFlush {
        release: AtomicBool::new(false),
        stalls: Default::default(),
    });
    let opts = Options {
        max_immutable_memtables: 1,
        stall_timeout: Duration::from_millis(200),
        listener: Some(l.clone()),
        ..common::tiny()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let mut busy = None;
    for i in 0..100_000 {
        match db.put(format!("k{i}").as_bytes(), &[0u8; 100]) {
            Ok(()) => {}
            Err(e) => {
                busy = Some(e);
                break;
            }
        }
    }
    let e = busy.expect("writes never stalled");
    assert!(e.is_busy(), "{e}");
    assert!(!l.stalls.lock().is_empty());
    l.release.store(true, Ordering::Release);
    // Once flush runs again, writes go through.
    db.put(b"after", b"ok").unwrap();
    assert_eq!(db.get(b"after").unwrap().unwrap(), "ok".as_bytes());
    assert!(db.stats().busy_errors >= 1);
}

#[test]
fn concurrent_writers_readers_and_scanners_under_flush_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), common::tiny()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    const WRITERS: usize = 4;
    const PER: usize = 3000;
    let mut handles = vec![];
    for w in 0..WRITERS {
        let db = db.clone();
        handles.push(std::thread::spawn(move || {
            for i in 0..PER {
                // Each writer owns its keys; values carry a version number
                // that only grows, so readers can check monotonicity.
                let k = format!("w{w}-{:04}", i % 500);
                let mut b = WriteBatch::new();
                b.put(k.as_bytes(), format!("{i:08}").as_bytes());
                b.put(
                    format!("w{w}-last").as_bytes(),
                    format!("{i:08}").as_bytes(),
                );
                db.write(b).unwrap();
                // Read your write: a group is visible before its writers
                // return, even while the next group is being logged.
                assert_eq!(
                    db.get(k.as_bytes()).unwrap().as_deref(),
                    Some(format!("{i:08}").as_bytes()),
                    "writer {w} does not see its own write {i}"
                );
                if i % 7 == 0 {
                    db.delete(format!("w{w}-del").as_bytes()).unwrap();
                }
            }
        }));
    }
    let mut readers = vec![];
    for r in 0..2 {
        let db = db.clone();
        let stop = stop.clone();
        readers.push(std::thread::spawn(move || {
            let mut last = [0u64; WRITERS];
            let mut scans = 0;
            while !stop.load(Ordering::Acquire) {
                for (w, seen) in last.iter_mut().enumerate() {
                    if let Some(v) = db.get(format!("w{w}-last").as_bytes()).unwrap() {
                        let n: u64 = std::str::from_utf8(&v).unwrap().parse().unwrap();
                        assert!(n >= *seen, "value went backwards");
                        *seen = n;
                    }
                }
                if r == 0 {
                    // A scan sees a sorted, duplicate-free snapshot.
                    let keys: Vec<_> = db.scan(..).unwrap().map(|x| x.unwrap().0).collect();
                    assert!(keys.windows(2).all(|p| p[0] < p[1]));
                    scans += 1;
                }
            }
            scans
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    db.compact().unwrap();
    stop.store(true, Ordering::Release);
    for r in readers {
        r.join().unwrap();
    }
    for w in 0..WRITERS {
        assert_eq!(
            db.get(format!("w{w}-last").as_bytes()).unwrap().unwrap(),
            format!("{:08}", PER - 1).as_bytes()
        );
        assert_eq!(db.get(format!("w{w}-del").as_bytes()).unwrap(), None);
    }
    let s = db.stats();
    assert!(s.flushes > 0 && s.compactions > 0, "{s:?}");
    assert_eq!(db.scan(..).unwrap().count(), WRITERS * 501);
}

#[test]
fn scan_sees_one_point_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::tiny()).unwrap();
    fill(&db, 1000, "old");
    let mut it = db.scan(..).unwrap();
    let first = it.next().unwrap().unwrap();
    fill(&db, 1000, "new");
    db.compact().unwrap();
    assert_eq!(first.1, "old-0".as_bytes());
    let rest: Vec<_> = it.map(|r| r.unwrap()).collect();
    assert_eq!(rest.len(), 999);
    assert!(rest.iter().all(|(_, v)| v.starts_with(b"old-")));
    // Tables compacted away while the scan held them are gone now.
    let live = db.stats().tables();
    assert_eq!(files_with(db.path(), "sst").len(), live);
}

#[test]
fn scan_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::tiny()).unwrap();
    fill(&db, 100, "v");
    let n = db
        .scan(&b"key000010"[..]..&b"key000020"[..])
        .unwrap()
        .count();
    assert_eq!(n, 10);
    let n = db
        .scan(&b"key000010"[..]..=&b"key000020"[..])
        .unwrap()
        .count();
    assert_eq!(n, 11);
    let n = db.scan(&b"key000095"[..]..).unwrap().count();
    assert_eq!(n, 5);
}

/// Writes a table larger than 4 GiB (64-bit offsets) and reads it back.
/// Takes minutes and ~5 GiB of disk: run with `cargo test --release -- --ignored huge`.
#[test]
#[ignore]
fn huge_table_over_4gib() {
    let dir = tempfile::tempdir_in(std::env::var("STRATA_HUGE_DIR").unwrap_or_else(|_| ".".into()))
        .unwrap();
    let opts = Options {
        durability: Durability::None,
        memtable_size: 5 << 30,
        max_immutable_memtables: 1,
        target_file_size: u64::MAX,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let v: Vec<u8> = (0..(1 << 20)).map(|i| (i % 253) as u8).collect();
    let n = 4200u32; // 4200 MiB of values
    for i in 0..n {
        db.put(&i.to_be_bytes(), &v).unwrap();
    }
    db.flush().unwrap();
    let s = db.stats();
    assert_eq!(s.levels[0].tables, 1);
    assert!(s.levels[0].bytes > 4 << 30, "{s:?}");
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    for i in [0u32, 1, 2047, 4095, 4096, n - 1] {
        assert_eq!(db.get(&i.to_be_bytes()).unwrap().unwrap(), v);
    }
    assert_eq!(db.scan(..).unwrap().count(), n as usize);
}

#[test]
fn write_batches_commits_a_group_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        durability: Durability::Sync,
        ..common::tiny()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut a = WriteBatch::new();
    a.put(b"x", b"1").put(b"y", b"1");
    let mut b = WriteBatch::new();
    b.delete(b"x");
    let mut c = WriteBatch::new();
    c.put(b"z", b"3");
    db.write_batches(vec![a, WriteBatch::new(), b, c]).unwrap();
    let s = db.stats();
    assert_eq!(
        (s.writes, s.wal_syncs),
        (3, 1),
        "one group, one fsync: {s:?}"
    );
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get(b"x").unwrap(), None);
    assert_eq!(db.get(b"y").unwrap().unwrap(), "1".as_bytes());
    assert_eq!(db.get(b"z").unwrap().unwrap(), "3".as_bytes());
}

/// Stores opened together under the same writes do not switch memtables
/// together: the first memtable fills at a random 50-100 % of the size,
/// so a cluster's nodes started at once do not flush at once ever after.
#[test]
fn first_memtables_fill_at_different_points() {
    let size = 256 << 10;
    let opts = || strata_engine::Options {
        memtable_size: size,
        durability: strata_engine::Durability::None,
        ..strata_engine::Options::default()
    };
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    let dbs: Vec<_> = dirs
        .iter()
        .map(|d| strata_engine::Db::open(d.path(), opts()).unwrap())
        .collect();
    let mut first_switch = vec![None; dbs.len()];
    let value = [7u8; 100];
    for i in 0..20_000u32 {
        let key = format!("key{i:08}");
        for (n, db) in dbs.iter().enumerate() {
            db.put(key.as_bytes(), &value).unwrap();
            let s = db.stats();
            if first_switch[n].is_none() && (s.immutable_memtables > 0 || s.flushes > 0) {
                first_switch[n] = Some(i);
            }
        }
        if first_switch.iter().all(Option::is_some) {
            break;
        }
    }
    let at: Vec<u32> = first_switch
        .iter()
        .map(|s| s.expect("every store switched"))
        .collect();
    let (lo, hi) = (*at.iter().min().unwrap(), *at.iter().max().unwrap());
    // Four draws from the upper half all within 2 % of each other: about
    // one chance in 10^4 with the jitter, certain without it.
    assert!(
        hi - lo > hi / 50,
        "the first switches came together: {at:?}"
    );
    // None before half the size's worth of writes.
    assert!(lo as usize * 100 > size / 2 / 4, "{at:?}");
}

#[test]
fn a_deleted_tables_blocks_leave_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    // Two overlapping tables in level 0 and no compaction until asked:
    // the compaction below merges (rewrites) both.
    let db = Db::open(
        dir.path(),
        Options {
            block_cache_size: 8 << 20,
            memtable_size: 4 << 20,
            l0_compaction_trigger: 100,
            ..common::tiny()
        },
    )
    .unwrap();
    fill(&db, 3000, "a");
    db.flush().unwrap();
    fill(&db, 3000, "v");
    db.flush().unwrap();
    assert_eq!(db.stats().levels[0].tables, 2);
    let read_all = || {
        for i in (0..3000).step_by(7) {
            let want = format!("v-{i}");
            let got = db.get(format!("key{i:06}").as_bytes()).unwrap();
            assert_eq!(got.as_deref(), Some(want.as_bytes()), "key{i:06}");
        }
    };
    read_all();
    let warm = db.stats().cache_usage_bytes;
    assert!(warm > 0, "reads filled no cache");
    // Compaction replaces both tables and reads without filling the
    // cache: every block the cache held was a deleted table's.
    db.compact().unwrap();
    assert_eq!(db.stats().levels[0].tables, 0);
    assert_eq!(
        db.stats().cache_usage_bytes,
        0,
        "blocks of deleted tables still cached (held {warm} before)"
    );
    read_all();
    assert!(db.stats().cache_usage_bytes > 0);
}

/// Tables say how their blocks are stored: a store written with one
/// compression per level reads back whole under any other, and what it
/// compacts from then on is stored the new way.
#[test]
fn compression_can_change_between_opens() {
    use strata_engine::Compression;
    let dir = tempfile::tempdir().unwrap();
    let sizes = |dir: &Path| -> u64 {
        files_with(dir, "sst")
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum()
    };
    let opts = |c: Vec<Compression>| Options {
        compression: c,
        ..common::tiny()
    };
    let mut stored = Vec::new();
    for (round, c) in [
        vec![Compression::None],
        vec![Compression::Lz4, Compression::Zstd(3)],
        vec![Compression::Zstd(9)],
        vec![Compression::None],
    ]
    .into_iter()
    .enumerate()
    {
        let db = Db::open(dir.path(), opts(c)).unwrap();
        // What the last open wrote reads back before this one rewrites it.
        for i in (0..3000).step_by(7) {
            let v = format!("value {round} of key {i:06} {}", "repeated text ".repeat(4));
            if round > 0 {
                let old = v.replacen(
                    &format!("value {round}"),
                    &format!("value {}", round - 1),
                    1,
                );
                assert_eq!(
                    db.get(format!("key{i:06}").as_bytes()).unwrap().unwrap(),
                    old.as_bytes(),
                    "round {round}, key {i}"
                );
            }
        }
        for i in 0..3000 {
            let v = format!("value {round} of key {i:06} {}", "repeated text ".repeat(4));
            db.put(format!("key{i:06}").as_bytes(), v.as_bytes())
                .unwrap();
        }
        db.compact().unwrap();
        for i in (0..3000).step_by(7) {
            let v = format!("value {round} of key {i:06} {}", "repeated text ".repeat(4));
            assert_eq!(
                db.get(format!("key{i:06}").as_bytes()).unwrap().unwrap(),
                v.as_bytes(),
                "round {round}, key {i}"
            );
        }
        assert_eq!(db.scan(..).unwrap().count(), 3000, "round {round}");
        db.close().unwrap();
        drop(db);
        stored.push(sizes(dir.path()));
    }
    // Compressed, the same data takes well under its plain size; plain
    // again, it takes what it took at first.
    assert!(stored[1] < stored[0] * 3 / 4, "{stored:?}");
    assert!(stored[2] < stored[0] * 3 / 4, "{stored:?}");
    assert!(stored[3] > stored[1], "{stored:?}");
}

/// A full compaction stores the bottom level's newest versions with
/// sequence 0 (their trailers then compress away); what is written later
/// still wins over them, through flushes and compactions, and survives a
/// reopen.
#[test]
fn bottom_level_sequences_are_zeroed_and_newer_writes_still_win() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        compression: vec![strata_engine::Compression::None],
        ..common::tiny()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    fill(&db, 2000, "a");
    db.compact().unwrap();
    // Restart entries hold whole keys: `key000000` then a zero trailer.
    let zero_trailer = |k: &str| -> bool {
        let mut pat = k.as_bytes().to_vec();
        pat.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
        files_with(dir.path(), "sst").iter().any(|p| {
            let b = std::fs::read(p).unwrap();
            b.windows(pat.len()).any(|w| w == pat.as_slice())
        })
    };
    assert!(
        zero_trailer("key000000"),
        "no zeroed trailer after a full compaction"
    );
    for i in (0..2000).step_by(3) {
        db.put(format!("key{i:06}").as_bytes(), format!("b-{i}").as_bytes())
            .unwrap();
    }
    for i in (1..2000).step_by(3) {
        db.delete(format!("key{i:06}").as_bytes()).unwrap();
    }
    let check = |db: &Db, when: &str| {
        for i in 0..2000 {
            let got = db.get(format!("key{i:06}").as_bytes()).unwrap();
            let want = match i % 3 {
                0 => Some(format!("b-{i}")),
                1 => None,
                _ => Some(format!("a-{i}")),
            };
            assert_eq!(
                got.as_deref(),
                want.as_ref().map(|s| s.as_bytes()),
                "{when}: key {i}"
            );
        }
        assert_eq!(db.scan(..).unwrap().count(), 2000 - 667, "{when}");
    };
    check(&db, "before the flush");
    db.flush().unwrap();
    check(&db, "flushed over the zeroed level");
    db.compact().unwrap();
    check(&db, "compacted again");
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    check(&db, "reopened");
    db.put(b"key000001", b"c").unwrap();
    assert_eq!(db.get(b"key000001").unwrap().unwrap(), "c".as_bytes());
}
