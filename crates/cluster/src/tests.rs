//! The door's rules on a single node: replication, reads and writes.

use std::sync::Arc;

use bytes::Bytes;
use strata_engine::Db;

use super::*;

#[tokio::test]
async fn replication_rules_for_a_single_node() {
    let d = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
    let c = Cluster::single(db);
    assert_eq!(
        c.replication(None, None).unwrap(),
        Replication { ack: 1, from: 1 }
    );
    for (a, f) in [
        (Some(0), None),
        (None, Some(0)),
        (Some(2), Some(1)),
        (Some(1), Some(2)),
        (None, Some(2)),
    ] {
        assert!(
            matches!(c.replication(a, f), Err(ClusterError::BadReplication(_))),
            "{a:?} {f:?}"
        );
    }
    let r = c.replication(None, None).unwrap();
    c.put(1, Bytes::from_static(b"k"), Bytes::from_static(b"v"), r)
        .await
        .unwrap();
    assert_eq!(c.get(2, b"k", r).await.unwrap().unwrap(), "v".as_bytes());
    c.delete(3, Bytes::from_static(b"k"), r).await.unwrap();
    assert!(c.get(4, b"k", r).await.unwrap().is_none());
    c.put(5, Bytes::from_static(b"a"), Bytes::from_static(b"1"), r)
        .await
        .unwrap();
    c.put(6, Bytes::from_static(b"b"), Bytes::from_static(b"2"), r)
        .await
        .unwrap();
    let keys: Vec<_> = c
        .scan(b"a", Some(b"c"))
        .unwrap()
        .map(|x| x.unwrap().0)
        .collect();
    assert_eq!(keys, [Bytes::from_static(b"a"), Bytes::from_static(b"b")]);
    // The deleted key is a tombstone on disk, hidden from scans.
    assert!(c.scan(b"k", None).unwrap().next().is_none());
}
