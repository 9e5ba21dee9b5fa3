//! The engine on a disk that really fills (a 12 MiB tmpfs mounted for the
//! test): under `sync` the WAL's zero-fill runs out of space before any
//! record byte is written, so the commit group that needed it is refused
//! (every writer in it gets `is_no_space`), nothing else is, no write
//! acknowledged before is lost, and writes go on once there is room, with
//! no reopen. Mounting needs root; without it the test says "not checked"
//! and why, and checks nothing (a failure under `STRATA_REQUIRE_TOOLS=1`).

// The strata tests' "not checked" helper (std only).
#[path = "../../strata/tests/support/require.rs"]
mod require;
mod tmpfs;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use strata_engine::{Db, Durability, Options, WriteBatch};
use tmpfs::Tmpfs;

fn value(i: u64) -> Vec<u8> {
    format!("{i:016}").repeat(64).into_bytes()
}

#[test]
fn a_full_wal_refuses_its_group_and_writes_resume_when_there_is_room() {
    let Some(disk) = require::require_ok("root, to mount a tmpfs", Tmpfs::mount("12m")) else {
        return;
    };
    let filler = disk.dir.join("filler");
    std::fs::write(&filler, vec![1u8; 8 << 20]).unwrap();
    let opts = || Options {
        durability: Durability::Sync,
        // No flush: the WAL alone fills the disk.
        memtable_size: 64 << 20,
        ..Default::default()
    };
    let db = Arc::new(Db::open(disk.dir.join("db"), opts()).unwrap());
    // Four writers at once, so that commit groups have followers.
    let acked = Arc::new(Mutex::new(Vec::new()));
    let full = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (db, acked, full) = (db.clone(), acked.clone(), full.clone());
            std::thread::spawn(move || {
                let mut refused = 0;
                for n in 0..20_000u64 {
                    let i = t * 1_000_000 + n;
                    let mut b = WriteBatch::new();
                    b.put(format!("k{i}").as_bytes(), &value(i));
                    match db.write(b) {
                        Ok(()) => acked.lock().unwrap().push(i),
                        Err(e) => {
                            assert!(e.is_no_space(), "not a full disk: {e}");
                            full.store(true, Ordering::Relaxed);
                            refused += 1;
                            if refused == 20 {
                                return;
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(full.load(Ordering::Relaxed), "the disk never filled");
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    assert!(
        acked.len() > 100,
        "only {} writes before the disk filled",
        acked.len()
    );
    for &i in &acked {
        assert_eq!(
            db.get(format!("k{i}").as_bytes()).unwrap(),
            Some(value(i).into())
        );
    }
    // Room again: the very next write goes through.
    std::fs::remove_file(&filler).unwrap();
    let mut b = WriteBatch::new();
    b.put(b"after", b"room");
    db.write(b).expect("a write once there is room again");
    db.close().unwrap();
    drop(db);
    // Everything acknowledged is in the log.
    let db = Db::open(disk.dir.join("db"), opts()).unwrap();
    for &i in &acked {
        assert_eq!(
            db.get(format!("k{i}").as_bytes()).unwrap(),
            Some(value(i).into()),
            "k{i} after reopening"
        );
    }
    assert_eq!(db.get(b"after").unwrap(), Some(b"room".to_vec().into()));
    db.close().unwrap();
}
