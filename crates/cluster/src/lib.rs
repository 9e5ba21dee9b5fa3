//! The cluster layer between the node's HTTP API and the engine: it owns the
//! meaning of `ack`/`from`, placement of keys on replicas and the
//! coordinator that talks to them. Must not know about HTTP.
//!
//! Today a cluster has one member, the local engine (a node is a cluster of
//! size 1, as the API says); sharding, quorum replication, hinted handoff
//! and read repair will live here (issue 6 and on) behind the same calls.

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use strata_engine::{Db, DbIterator};

/// How many replicas a request goes to (`from`) and how many must answer
/// (`ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    pub ack: usize,
    pub from: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// `ack`/`from` out of range; the node answers 400.
    #[error("{0}")]
    BadReplication(String),
    /// Fewer than `ack` replicas answered in time; the node answers 504.
    #[error("not enough replicas: got {got} of {need}")]
    NotEnoughReplicas { got: usize, need: usize },
    /// The store refused for now (write stall); the node answers 503.
    #[error("busy: {0}")]
    Busy(String),
    /// The store is closed (shutting down); the node answers 503.
    #[error("store is closed")]
    Closed,
    #[error("storage error: {0}")]
    Storage(strata_engine::Error),
    /// A failure shared by every write of a failed group (already logged).
    #[error("storage error: {0}")]
    Failed(String),
}

impl ClusterError {
    /// The same error for another member of a failed group.
    pub fn share(&self) -> ClusterError {
        match self {
            ClusterError::BadReplication(m) => ClusterError::BadReplication(m.clone()),
            ClusterError::NotEnoughReplicas { got, need } => ClusterError::NotEnoughReplicas {
                got: *got,
                need: *need,
            },
            ClusterError::Busy(m) => ClusterError::Busy(m.clone()),
            ClusterError::Closed => ClusterError::Closed,
            e @ (ClusterError::Storage(_) | ClusterError::Failed(_)) => {
                ClusterError::Failed(e.to_string())
            }
        }
    }
}

/// One write of a group.
pub enum Write {
    Put(Vec<u8>, bytes::Bytes),
    Delete(Vec<u8>),
}

impl From<strata_engine::Error> for ClusterError {
    fn from(e: strata_engine::Error) -> Self {
        match e {
            strata_engine::Error::Busy(m) => ClusterError::Busy(m),
            strata_engine::Error::Closed => ClusterError::Closed,
            e => ClusterError::Storage(e),
        }
    }
}

pub type Result<T> = std::result::Result<T, ClusterError>;

/// The cluster as seen from one node.
pub struct Cluster {
    db: Arc<Db>,
    size: usize,
    replication_factor: usize,
}

impl Cluster {
    /// A cluster of one node: this node's engine.
    pub fn single(db: Arc<Db>) -> Self {
        Cluster {
            db,
            size: 1,
            replication_factor: 1,
        }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// The local engine (for stats and shutdown).
    pub fn local(&self) -> &Arc<Db> {
        &self.db
    }

    /// Resolve `ack`/`from` against the cluster: defaults are `from` = the
    /// replication factor and `ack` = `from / 2 + 1`.
    pub fn replication(&self, ack: Option<usize>, from: Option<usize>) -> Result<Replication> {
        let from = from.unwrap_or(self.replication_factor);
        let ack = ack.unwrap_or(from / 2 + 1);
        if from < 1 || ack < 1 {
            return Err(ClusterError::BadReplication(
                "ack and from must be at least 1".into(),
            ));
        }
        if ack > from {
            return Err(ClusterError::BadReplication(format!(
                "ack={ack} is more than from={from}"
            )));
        }
        if from > self.size {
            return Err(ClusterError::BadReplication(format!(
                "from={from} is more than the cluster's {} node(s)",
                self.size
            )));
        }
        Ok(Replication { ack, from })
    }

    /// Blocking: may wait for the engine.
    pub fn get(&self, key: &[u8], _r: Replication) -> Result<Option<Bytes>> {
        Ok(self.db.get(key)?)
    }

    /// Blocking: returns once the write is durable as configured.
    pub fn put(&self, key: &[u8], value: &[u8], _r: Replication) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }

    pub fn delete(&self, key: &[u8], _r: Replication) -> Result<()> {
        Ok(self.db.delete(key)?)
    }

    /// Apply several writes as one commit group (one WAL write and fsync).
    /// Each write is atomic on its own; on error none was acknowledged.
    pub fn write_group(&self, writes: &[Write], _r: Replication) -> Result<()> {
        let batches = writes
            .iter()
            .map(|w| {
                let mut b = strata_engine::WriteBatch::new();
                match w {
                    Write::Put(k, v) => b.put(k, v),
                    Write::Delete(k) => b.delete(k),
                };
                b
            })
            .collect();
        Ok(self.db.write_batches(batches)?)
    }

    /// Live entries with `start <= key < end` on this node, streaming.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>) -> Result<DbIterator> {
        let end = end.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(self.db.scan((Bound::Included(start), end))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_rules_for_a_single_node() {
        let d = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
        let c = Cluster::single(db);
        assert_eq!(
            c.replication(None, None).unwrap(),
            Replication { ack: 1, from: 1 }
        );
        assert_eq!(
            c.replication(Some(1), Some(1)).unwrap(),
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
        c.put(b"k", b"v", r).unwrap();
        assert_eq!(c.get(b"k", r).unwrap().unwrap(), "v".as_bytes());
        c.delete(b"k", r).unwrap();
        assert!(c.get(b"k", r).unwrap().is_none());
        c.write_group(
            &[
                Write::Put(b"g1".to_vec(), Bytes::from_static(b"1")),
                Write::Delete(b"g1".to_vec()),
                Write::Put(b"g2".to_vec(), Bytes::new()),
            ],
            r,
        )
        .unwrap();
        assert!(c.get(b"g1", r).unwrap().is_none());
        assert_eq!(c.get(b"g2", r).unwrap().unwrap().len(), 0);
        c.put(b"a", b"1", r).unwrap();
        c.put(b"b", b"2", r).unwrap();
        let keys: Vec<_> = c
            .scan(b"a", Some(b"b"))
            .unwrap()
            .map(|x| x.unwrap().0)
            .collect();
        assert_eq!(keys, [Bytes::from_static(b"a")]);
    }
}
