//! Checkpoints of an open database: every write acknowledged before the
//! checkpoint is in it, taken while writers go on; the copy opens as a
//! database of its own (its WAL tail replayed), its tables are hard links,
//! and the source is untouched.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use strata_engine::{Db, Durability, Options};

fn opts(d: Durability) -> Options {
    Options {
        durability: d,
        // Small memtables: tables, flushes and compactions during the run.
        memtable_size: 256 << 10,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

#[test]
fn a_checkpoint_under_writes_holds_every_acknowledged_write() {
    for d in [
        Durability::Sync,
        Durability::Interval(100),
        Durability::None,
    ] {
        let src = tempfile::tempdir().unwrap();
        let dst = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(src.path(), opts(d)).unwrap());
        for i in 0..20_000 {
            db.put(&key(i), &[b'v'; 100]).unwrap();
        }
        // Writers keep going; `acked` is the highest index written.
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicU64::new(19_999));
        let w = {
            let (db, stop, acked) = (db.clone(), stop.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut i = 20_000;
                while !stop.load(Ordering::Relaxed) {
                    db.put(&key(i), &[b'w'; 100]).unwrap();
                    acked.store(i, Ordering::Release);
                    i += 1;
                }
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        let before = acked.load(Ordering::Acquire);
        let dir = dst.path().join("cp");
        let info = db.checkpoint(&dir).unwrap();
        stop.store(true, Ordering::Relaxed);
        w.join().unwrap();
        assert!(info.tables > 0, "{d:?}: {info:?}");
        assert_eq!(info.linked, info.tables, "same file system: links");
        assert!(info.wal_segments >= 1, "{info:?}");
        // A second checkpoint into the same place is refused.
        assert!(db.checkpoint(&dir).is_err());

        let cp = Db::open(&dir, opts(d)).unwrap();
        for i in 0..=before {
            assert!(cp.get(&key(i)).unwrap().is_some(), "{d:?}: key {i} missing");
        }
        // No hole: what the copy holds past `before` is a prefix of the
        // writes (one writer, in order).
        let mut i = before + 1;
        while cp.get(&key(i)).unwrap().is_some() {
            i += 1;
        }
        let mut holes = 0;
        for j in i..i + 1000 {
            holes += cp.get(&key(j)).unwrap().is_some() as u32;
        }
        assert_eq!(holes, 0, "{d:?}: a later write without an earlier one");
        // The copy is its own database; the source goes on.
        cp.put(b"only-in-copy", b"1").unwrap();
        assert!(db.get(b"only-in-copy").unwrap().is_none());
        db.put(b"only-in-source", b"1").unwrap();
        assert!(cp.get(b"only-in-source").unwrap().is_none());
        db.compact().unwrap();
        cp.compact().unwrap();
        for i in (0..=before).step_by(97) {
            assert!(cp.get(&key(i)).unwrap().is_some());
            assert!(db.get(&key(i)).unwrap().is_some());
        }
    }
}
