//! The recorder: every client logs its operations into a log of its own,
//! without locking, on one monotonic clock from the run's start, and the
//! logs merge into one `History` when the clients finish. Owns recording;
//! must not judge nor store a history.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{History, Kind, Op, Outcome};

/// Collects the clients' logs. Cloned into every client (on any thread);
/// each client records into a `ClientLog` of its own, without locking, and
/// hands it back once when it finishes.
#[derive(Clone)]
pub struct Recorder {
    start: Instant,
    logs: Arc<Mutex<Vec<Vec<Op>>>>,
}

impl Recorder {
    /// A recorder whose times run from now.
    pub fn new() -> Recorder {
        Recorder::starting_at(Instant::now())
    }

    pub fn starting_at(start: Instant) -> Recorder {
        Recorder {
            start,
            logs: Arc::default(),
        }
    }

    /// The time since the run's start.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// A log for `client`.
    pub fn client(&self, client: u32) -> ClientLog {
        ClientLog {
            client,
            recorder: self.clone(),
            ops: Vec::with_capacity(1024),
        }
    }

    /// Everything handed back so far, merged.
    pub fn history(&self) -> History {
        let logs = std::mem::take(&mut *self.logs.lock().expect("recorder lock"));
        History::merge(logs)
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

/// One client's operations. Handed back to its recorder when dropped.
pub struct ClientLog {
    client: u32,
    recorder: Recorder,
    ops: Vec<Op>,
}

/// An operation invoked and not yet completed.
pub struct Pending {
    kind: Kind,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    node: Arc<str>,
    invoked: Duration,
    final_read: bool,
}

impl Pending {
    /// The node that served it, once known (a client library chooses the
    /// node as it sends, and may move to another).
    pub fn served_by(&mut self, node: &Arc<str>) {
        self.node = node.clone();
    }
}

impl ClientLog {
    pub fn client(&self) -> u32 {
        self.client
    }

    /// The operations completed so far and not yet handed back.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Note the invocation of an operation: call just before sending it.
    pub fn invoke(
        &self,
        kind: Kind,
        key: &[u8],
        value: Option<&[u8]>,
        node: &Arc<str>,
        final_read: bool,
    ) -> Pending {
        Pending {
            kind,
            key: key.to_vec(),
            value: value.map(<[u8]>::to_vec),
            node: node.clone(),
            invoked: self.recorder.now(),
            final_read,
        }
    }

    /// Note its completion (call as soon as the answer, the error or the
    /// timeout is known). For a read, `read` is the value read (`None`:
    /// absent or no answer); for writes and deletes it is ignored.
    pub fn complete(
        &mut self,
        p: Pending,
        outcome: Outcome,
        status: Option<u16>,
        read: Option<&[u8]>,
    ) -> &Op {
        let completed = self.recorder.now();
        let value = match p.kind {
            Kind::Read => read.map(<[u8]>::to_vec),
            _ => p.value,
        };
        self.ops.push(Op {
            client: self.client,
            kind: p.kind,
            key: p.key,
            value,
            invoked: p.invoked,
            completed,
            outcome,
            status,
            node: p.node,
            final_read: p.final_read,
            quorum: None,
        });
        self.ops.last().expect("just pushed")
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

impl Drop for ClientLog {
    fn drop(&mut self) {
        let ops = std::mem::take(&mut self.ops);
        if !ops.is_empty() {
            if let Ok(mut logs) = self.recorder.logs.lock() {
                logs.push(ops);
            }
        }
    }
}
