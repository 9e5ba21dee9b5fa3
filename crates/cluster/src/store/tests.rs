//! The store's tests: only newer versions applied, named writes once, groups, inline commits.

use super::*;

fn rec(hlc: u64, v: Option<&'static [u8]>) -> Record {
    Record {
        version: Version { hlc, node: 1 },
        value: v.map(Bytes::from_static),
        marks: Vec::new(),
    }
}

#[tokio::test]
async fn only_newer_versions_are_applied() {
    let d = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
    let s = Store::open(db, 64, false, None);
    let k = Bytes::from_static(b"k");
    assert_eq!(
        s.apply(k.clone(), rec(10, Some(b"new"))).await.unwrap(),
        Outcome::Applied
    );
    // Older and equal versions: the newer stays.
    assert_eq!(
        s.apply(k.clone(), rec(5, Some(b"old"))).await.unwrap(),
        Outcome::Superseded(Version { hlc: 10, node: 1 })
    );
    assert_eq!(
        s.apply(k.clone(), rec(10, Some(b"new"))).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(s.read(b"k").unwrap().unwrap(), rec(10, Some(b"new")));
    // A tombstone is a record like any other.
    s.apply(k.clone(), rec(11, None)).await.unwrap();
    assert!(s.read(b"k").unwrap().unwrap().is_tombstone());
    assert_eq!(
        s.apply(k.clone(), rec(9, Some(b"zombie"))).await.unwrap(),
        Outcome::Superseded(Version { hlc: 11, node: 1 })
    );
    // Purge only the very tombstone.
    assert!(matches!(
        s.purge(k.clone(), Version { hlc: 3, node: 1 })
            .await
            .unwrap(),
        Outcome::Superseded(_)
    ));
    assert_eq!(
        s.purge(k.clone(), Version { hlc: 11, node: 1 })
            .await
            .unwrap(),
        Outcome::Applied
    );
    assert!(s.read(b"k").unwrap().is_none());
}

/// A named record: the write `id`, at `hlc`.
fn named(hlc: u64, v: Option<&'static [u8]>, id: u128) -> Record {
    let mut r = rec(hlc, v);
    r.marks.push(crate::record::Mark {
        id: crate::record::WriteId(id),
        version: r.version,
    });
    r
}

#[tokio::test]
async fn a_named_write_takes_effect_once_on_a_sole_replica_whatever_its_version() {
    use crate::record::WriteId;
    let d = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
    let s = Store::open(db, 64, true, None);
    let k = Bytes::from_static(b"k");
    // Write 1 applied, then a later write 2 over it, unnamed.
    assert_eq!(
        s.apply(k.clone(), named(10, Some(b"one"), 1))
            .await
            .unwrap(),
        Outcome::Applied
    );
    assert_eq!(
        s.apply(k.clone(), rec(20, Some(b"two"))).await.unwrap(),
        Outcome::Applied
    );
    // Write 1 again, stamped anew past write 2: done here already, write
    // 2 stays (the unnamed write carried the mark on).
    assert_eq!(
        s.apply(k.clone(), named(30, Some(b"one"), 1))
            .await
            .unwrap(),
        Outcome::Applied
    );
    let now = s.read(b"k").unwrap().unwrap();
    assert_eq!(now.value.as_deref(), Some(&b"two"[..]));
    assert_eq!(now.applied(WriteId(1)), Some(Version { hlc: 10, node: 1 }));
    // A different write under the same key at that version is applied.
    assert_eq!(
        s.apply(k.clone(), named(30, Some(b"three"), 3))
            .await
            .unwrap(),
        Outcome::Applied
    );
    let now = s.read(b"k").unwrap().unwrap();
    assert_eq!(now.value.as_deref(), Some(&b"three"[..]));
    assert!(now.applied(WriteId(1)).is_some() && now.applied(WriteId(3)).is_some());
    // A named write that arrives after something newer is superseded,
    // and the replica remembers it reached it.
    assert_eq!(
        s.apply(k.clone(), named(25, Some(b"late"), 4))
            .await
            .unwrap(),
        Outcome::Superseded(Version { hlc: 30, node: 1 })
    );
    let now = s.read(b"k").unwrap().unwrap();
    assert_eq!(now.value.as_deref(), Some(&b"three"[..]));
    assert_eq!(now.applied(WriteId(4)), Some(Version { hlc: 25, node: 1 }));
    // Repeating a write the replica never saw applies it as usual; a
    // tombstone carries the marks on.
    assert_eq!(
        s.apply(k.clone(), named(40, None, 5)).await.unwrap(),
        Outcome::Applied
    );
    let now = s.read(b"k").unwrap().unwrap();
    assert!(now.is_tombstone());
    for id in [1, 3, 4, 5] {
        assert!(now.applied(WriteId(id)).is_some(), "write {id}");
    }
}

/// One replica's record after `writes` arrive in that order.
async fn after(writes: &[Record]) -> Record {
    let d = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
    let s = Store::open(db, 64, false, None);
    for w in writes {
        s.apply(Bytes::from_static(b"k"), w.clone()).await.unwrap();
    }
    s.read(b"k").unwrap().unwrap()
}

#[tokio::test]
async fn replicas_of_a_write_stamped_twice_end_equal_in_any_order() {
    use crate::record::WriteId;
    // Write 1 at 10, a later write 2 at 20, and write 1 stamped anew at
    // 30 by a coordinator that did not learn of the first attempt: a
    // replica that held the first attempt and one that never saw it end
    // with the same record, whatever order the copies (the fan-out, a
    // hint, read repair, anti-entropy) reach them in.
    let (first, later, again) = (
        named(10, Some(b"one"), 1),
        rec(20, Some(b"two")),
        named(30, Some(b"one"), 1),
    );
    let orders = [
        vec![first.clone(), later.clone(), again.clone()],
        vec![later.clone(), again.clone()],
        vec![again.clone(), first.clone(), later.clone()],
        vec![later.clone(), again.clone(), first.clone()],
        vec![again.clone(), later.clone()],
    ];
    let mut held = Vec::new();
    for o in &orders {
        held.push(after(o).await);
    }
    for h in &held {
        assert_eq!(h.version, again.version, "{held:?}");
        assert_eq!(h.value.as_deref(), Some(&b"one"[..]));
        assert_eq!(h.applied(WriteId(1)), Some(again.version));
    }
    // And a repeat at the version it was first applied at (the
    // coordinator's lookup found it) is superseded by the later write.
    let found = after(&[first.clone(), later.clone(), first.clone()]).await;
    assert_eq!(found.value.as_deref(), Some(&b"two"[..]));
    assert_eq!(found.applied(WriteId(1)), Some(first.version));
}

#[tokio::test]
async fn a_group_sees_its_own_writes() {
    let d = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
    let s = Arc::new(Store::open(db, 1024, false, None));
    highest_version_wins(&s).await;
}

/// Under `sync`, an idle store commits a write on its caller's thread,
/// fsync and all, only while commits are quick: after one that took
/// longer than INLINE_COMMIT_MAX (a slow disk), writes go to the
/// applier, and the caller's thread is not held.
#[tokio::test]
async fn fsynced_writes_apply_inline_only_while_the_disk_is_quick() {
    let d = tempfile::tempdir().unwrap();
    let opts = strata_engine::Options {
        test_sync_delay: INLINE_COMMIT_MAX * 5,
        ..Default::default()
    };
    let db = Arc::new(Db::open(d.path(), opts).unwrap());
    let s = Arc::new(Store::open(db.clone(), 1024, false, None));
    // No commit yet: nothing says the disk is slow.
    s.apply(Bytes::from_static(b"a"), rec(1, Some(b"v")))
        .await
        .unwrap();
    assert_eq!(s.applied_inline(), 1);
    assert!(db.last_commit_time() > INLINE_COMMIT_MAX);
    for (i, k) in [b"b", b"c", b"d"].into_iter().enumerate() {
        s.apply(Bytes::from_static(k), rec(2 + i as u64, Some(b"v")))
            .await
            .unwrap();
    }
    assert_eq!(
        s.applied_inline(),
        1,
        "writes held the caller behind a slow disk"
    );
    for k in [b"a", b"b", b"c", b"d"] {
        assert!(s.read(k).unwrap().is_some());
    }
}

/// Without fsync, an idle applier lets writes apply on their caller's
/// thread; concurrent writers (two runtime workers) mix that with the
/// applier's groups, and compare-then-write still holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_apply_inline_when_idle_and_in_order_all_the_same() {
    let d = tempfile::tempdir().unwrap();
    let opts = strata_engine::Options {
        durability: strata_engine::Durability::None,
        ..Default::default()
    };
    let db = Arc::new(Db::open(d.path(), opts).unwrap());
    let s = Arc::new(Store::open(db, 1024, false, None));
    s.apply(Bytes::from_static(b"alone"), rec(1, Some(b"v")))
        .await
        .unwrap();
    assert_eq!(
        s.applied_inline(),
        1,
        "an idle store applies on the caller's thread"
    );
    highest_version_wins(&s).await;
    assert_eq!(
        s.apply(Bytes::from_static(b"x"), rec(5, Some(b"old")))
            .await
            .unwrap(),
        Outcome::Superseded(Version { hlc: 300, node: 1 })
    );
}

async fn highest_version_wins(s: &Arc<Store>) {
    // Many concurrent writes of one key in random version order: the
    // highest version wins whatever the grouping.
    let mut tasks = Vec::new();
    let mut hlcs: Vec<u64> = (1..=300).collect();
    use rand::seq::SliceRandom;
    hlcs.shuffle(&mut rand::rng());
    for h in hlcs {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            s.apply(Bytes::from_static(b"x"), rec(h, Some(b"v")))
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(s.read(b"x").unwrap().unwrap().version.hlc, 300);
    let all: Vec<_> = s.scan(b"x", None).unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(all, [Bytes::from_static(b"x")]);
}
