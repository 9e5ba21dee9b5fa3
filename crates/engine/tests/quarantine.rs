//! A table that fails its checksum is set aside, not left to fail every
//! read: a read that meets the damaged block finds it, the table is
//! hard-linked under `quarantine/` and removed from the store by a
//! version edit, the read answers from what is left, a compaction goes on
//! without it, and the store reopens (the edit fits its manifest).

use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;

use strata_engine::{Db, Error, Options};

fn opts() -> Options {
    Options {
        memtable_size: 64 << 10,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn tables(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut t: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    t.sort();
    t
}

/// Flip bytes inside the first data block of `table` (the block starts
/// at offset 0; its index and footer at the end are left alone, so the
/// table still opens).
fn damage(table: &std::path::Path) {
    let mut f = std::fs::OpenOptions::new().write(true).open(table).unwrap();
    f.seek(SeekFrom::Start(16)).unwrap();
    f.write_all(&[0xde, 0xad, 0xbe, 0xef]).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn a_damaged_table_is_set_aside_and_the_store_goes_on() {
    let d = tempfile::tempdir().unwrap();
    // Old versions of every key, compacted to the bottom; then newer
    // versions of the first 2,000 in a table of their own.
    {
        let db = Db::open(d.path(), opts()).unwrap();
        for i in 0..4000 {
            db.put(&key(i), format!("old{i}").as_bytes()).unwrap();
        }
        db.compact().unwrap();
        for i in 0..2000 {
            db.put(&key(i), format!("new{i}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    // The newest table (highest number) holds new versions.
    let all = tables(d.path());
    let newest = all.last().unwrap().clone();
    damage(&newest);

    let db = Db::open(d.path(), opts()).unwrap();
    assert_eq!(db.stats().tables_quarantined, 0);
    // Reads that meet the damage answer from what is left: for the keys
    // of the damaged table, an older version if a deeper table has one
    // (a background compaction may have merged it away), else nothing.
    // None fails.
    let mut affected = 0;
    for i in 0..4000 {
        match db.get(&key(i)).unwrap() {
            Some(v) if v == format!("new{i}").as_bytes() => assert!(i < 2000),
            Some(v) if i >= 2000 => assert_eq!(v, format!("old{i}").as_bytes()),
            Some(v) => {
                assert_eq!(v, format!("old{i}").as_bytes());
                affected += 1;
            }
            None => affected += 1,
        }
    }
    assert!(affected > 0, "the damaged table held versions");
    assert_eq!(db.stats().tables_quarantined, 1);
    let moved = d
        .path()
        .join("quarantine")
        .join(newest.file_name().unwrap());
    assert!(moved.exists(), "{} kept for a post-mortem", moved.display());
    assert!(!tables(d.path()).contains(&newest), "out of the store");
    // Writes and a compaction go on.
    db.put(&key(5), b"after").unwrap();
    db.compact().unwrap();
    assert_eq!(db.get(&key(5)).unwrap().unwrap(), "after".as_bytes());
    db.close().unwrap();
    drop(db);
    // The edit that removed it is in the manifest: the store reopens.
    let db = Db::open(d.path(), opts()).unwrap();
    assert_eq!(db.get(&key(5)).unwrap().unwrap(), "after".as_bytes());
    for r in db.scan(..).unwrap() {
        r.unwrap();
    }
    db.close().unwrap();
}

#[test]
fn a_scan_reports_the_damage_with_file_and_offset_and_the_next_one_reads_past_it() {
    let d = tempfile::tempdir().unwrap();
    {
        let db = Db::open(d.path(), opts()).unwrap();
        for i in 0..3000 {
            db.put(&key(i), &[b'v'; 40]).unwrap();
        }
        db.compact().unwrap();
        db.close().unwrap();
    }
    let t = tables(d.path())[0].clone();
    damage(&t);
    let db = Db::open(d.path(), opts()).unwrap();
    let err = db
        .scan(..)
        .unwrap()
        .find_map(|r| r.err())
        .expect("the damaged block fails the scan");
    match &err {
        Error::Corruption { file, offset, .. } => {
            assert_eq!(file, &t);
            assert_eq!(*offset, 0, "the first block");
        }
        e => panic!("not a corruption: {e}"),
    }
    let to = db.set_aside(&err).expect("set aside");
    assert!(to.starts_with(d.path().join("quarantine")));
    // Not twice.
    assert!(db.set_aside(&err).is_none());
    // What is left scans cleanly (the other tables, if any).
    for r in db.scan(..).unwrap() {
        r.unwrap();
    }
    assert_eq!(db.stats().tables_quarantined, 1);
}

#[test]
fn a_table_whose_footer_is_damaged_is_set_aside_when_the_store_opens() {
    let d = tempfile::tempdir().unwrap();
    {
        let db = Db::open(d.path(), opts()).unwrap();
        for i in 0..3000 {
            db.put(&key(i), format!("old{i}").as_bytes()).unwrap();
        }
        db.compact().unwrap();
        for i in 0..100 {
            db.put(&key(i), format!("new{i}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let newest = tables(d.path()).last().unwrap().clone();
    let len = std::fs::metadata(&newest).unwrap().len();
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&newest)
            .unwrap();
        f.seek(SeekFrom::Start(len - 8)).unwrap();
        f.write_all(&[0xff; 8]).unwrap();
    }
    // Opens all the same, without that table; the store reopens again.
    for _ in 0..2 {
        let db = Db::open(d.path(), opts()).unwrap();
        assert!(!tables(d.path()).contains(&newest));
        assert_eq!(db.get(&key(2999)).unwrap().unwrap(), "old2999".as_bytes());
        for r in db.scan(..).unwrap() {
            r.unwrap();
        }
        db.close().unwrap();
    }
    let kept = d
        .path()
        .join("quarantine")
        .join(newest.file_name().unwrap());
    assert!(kept.exists());
    assert_eq!(std::fs::metadata(&kept).unwrap().len(), len);
}

/// The scrub finds a flipped bit that no read has touched: it checks every
/// block of every table a step at a time, sets the damaged table aside
/// (as a read would), counts it, and its next pass over what is left is
/// clean.
#[test]
fn the_scrub_finds_damage_no_read_landed_on() {
    let d = tempfile::tempdir().unwrap();
    {
        let db = Db::open(d.path(), opts()).unwrap();
        for i in 0..3000 {
            db.put(&key(i), format!("value{i}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let all = tables(d.path());
    assert!(all.len() >= 2, "{all:?}");
    let victim = all[all.len() / 2].clone();
    damage(&victim);
    let db = Db::open(d.path(), opts()).unwrap();
    // A clean pass would have to cross every table: steps of 4 KiB.
    let mut found = None;
    let mut steps = 0;
    while found.is_none() {
        let s = db.scrub_step(4096);
        assert!(
            s.bytes > 0 || s.found.is_some() || s.pass_done,
            "a step that did nothing"
        );
        assert!(
            s.bytes <= 4096 + 8192,
            "a step far past its budget: {}",
            s.bytes
        );
        found = s.found;
        steps += 1;
        assert!(steps < 10_000, "never found");
    }
    match found.unwrap() {
        Error::Corruption { file, .. } => assert_eq!(file, victim),
        e => panic!("{e}"),
    }
    let st = db.stats();
    assert_eq!(st.tables_quarantined, 1);
    assert_eq!(st.scrub_corruptions, 1);
    assert!(d.path().join("quarantine").read_dir().unwrap().count() == 1);
    // Finish the pass, then one more: nothing else is found.
    let passes = st.scrub_passes;
    while db.stats().scrub_passes < passes + 2 {
        assert!(db.scrub_step(1 << 20).found.is_none());
    }
    assert!(db.stats().scrub_bytes > 0);
}
