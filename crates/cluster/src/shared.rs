//! What every subsystem of this node's cluster layer shares (`Shared`: the
//! configuration, the roster and layouts, connections to the peers, the
//! clock, the local store, the hint store), the calls to a peer every
//! subsystem makes (a write, a read, a layout message, each with its
//! timeout and observed), and the helpers that build a roster entry, check
//! a layout and map keys to their home sets. Owns that state and those
//! calls; must not hold a subsystem's own state (the coordinator's,
//! anti-entropy's, the reaper's, the rebalance's and the fence's counters
//! and locks are theirs) nor decide anything a subsystem decides.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::config::ClusterConfig;
use crate::error::{ClusterError, Result};
use crate::hints::Hints;
use crate::hlc::Hlc;
use crate::layout::LayoutState;
use crate::layout::StreamStats;
use crate::membership::{Detector, Member, State};
use crate::ops::{Observer, OpKind};
use crate::record::{Record, Version, WriteId};
use crate::store::Outcome;
use crate::store::Store;
use crate::topology::Topology;
use crate::trace::LocalTiming;
use crate::transport::{CallError, Ctx, Peer};
use crate::wire::{Request, Response};
use crate::{hints, merkle, store};
use strata_api::placement::member_id;
use strata_api::placement::Placement;

/// What every subsystem shares. Each holds it as a named field (`sh`;
/// the anti-entropy rounds reach it through their `ae`), and reaches the
/// roster, store, clock, settings and the calls to a peer through it.
pub(crate) struct Shared {
    pub(crate) cfg: ClusterConfig,
    /// This node's index in every topology's roster.
    pub(crate) me: usize,
    pub(crate) my_id: u64,
    /// The roster and the live layouts, swapped whole on a change.
    pub(crate) topo: parking_lot::RwLock<Arc<Topology>>,
    /// What every connection to a peer shares (`None`: no secret, a
    /// cluster of one for good).
    pub(crate) ctx: Option<Arc<Ctx>>,
    pub(crate) hlc: Arc<Hlc>,
    pub(crate) store: Store,
    pub(crate) hints: Option<Arc<Hints>>,
    pub(crate) hint_writer: Option<hints::HintWriter>,
    pub(crate) observer: Option<Arc<dyn Observer>>,
    pub(crate) closed: AtomicBool,
}

/// The time a replica operation may take, beyond the replica timeout, per
/// byte it carries: 100 ns, as if the path moved 10 MB/s (a loaded
/// machine's WAL write and fsync of a large value are slower than the
/// network).
const PER_BYTE: Duration = Duration::from_nanos(100);

/// How long a layout message may take (the receiver waits for requests
/// under the stage before to finish; the last one waits for its cleanup,
/// a scan of its store).
pub(crate) const LAYOUT_CALL: Duration = Duration::from_secs(600);

/// The bytes a write of `record` to `key` carries.
pub(crate) fn record_bytes(key: &[u8], record: &Record) -> usize {
    key.len() + record.value.as_ref().map_or(0, |v| v.len())
}

impl Shared {
    pub(crate) fn topo(&self) -> Arc<Topology> {
        self.topo.read().clone()
    }

    /// Run blocking work on tokio's blocking pool, or on this task in the
    /// simulation's inline mode (`ClusterConfig::inline_io`). `None` if the
    /// blocking task failed.
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        if self.cfg.inline_io {
            Some(f())
        } else {
            tokio::task::spawn_blocking(f).await.ok()
        }
    }

    pub(crate) fn is_down(&self, m: usize, now: Instant) -> bool {
        // A read guard, not a clone of the topology: on every request.
        self.topo.read().detectors[m].state(now) == State::Down
    }

    /// One request to peer `m`, observed; no answer in time, or an error
    /// answer, is an error.
    pub(crate) async fn call_peer(
        &self,
        id: u64,
        m: usize,
        op: OpKind,
        req: Request,
        timeout: Duration,
    ) -> Result<Response> {
        let peer = self.topo().peers[m].clone().expect("a peer, not this node");
        if let Some(o) = &self.observer {
            o.replica_send(id, &peer.url, op);
        }
        let t = Instant::now();
        let r = peer.call(req, timeout).await;
        if let Some(o) = &self.observer {
            o.replica_answer(id, &peer.url, op, t.elapsed(), r.is_ok());
        }
        if let Err(CallError::Remote {
            read_only: true, ..
        }) = &r
        {
            // Its store refuses writes: the next writes go to the other
            // replicas (and hints) for a while.
            self.topo.read().detectors[m].refused_write(Instant::now());
        }
        r.map_err(|e| ClusterError::Failed(format!("{}: {e}", peer.url)))
    }

    /// Member `m`'s URL, read under the topology's lock (no clone of it:
    /// on the path of every replicated request).
    pub(crate) fn member_url(&self, m: usize) -> String {
        self.topo.read().members[m].url.clone()
    }

    pub(crate) fn unexpected(&self, m: usize, what: &str) -> ClusterError {
        let url = self.topo().members[m].url.clone();
        ClusterError::Failed(format!("{url}: unexpected answer to a {what}"))
    }

    /// One write to a peer; a failure is an error (the caller keeps a
    /// hint).
    pub(crate) async fn send_write(
        &self,
        id: u64,
        m: usize,
        key: Bytes,
        record: Record,
        op: OpKind,
    ) -> Result<Outcome> {
        self.send_write_timed(id, m, key, record, op)
            .await
            .map(|(o, _)| o)
    }

    /// `send_write`, and the peer's own stages as it reported them.
    pub(crate) async fn send_write_timed(
        &self,
        id: u64,
        m: usize,
        key: Bytes,
        record: Record,
        op: OpKind,
    ) -> Result<(Outcome, LocalTiming)> {
        let timeout = self.timeout_for(record_bytes(&key, &record));
        let req = if op == OpKind::Repair {
            Request::Repair { key, record }
        } else {
            Request::Write { key, record }
        };
        match self.call_peer(id, m, op, req, timeout).await? {
            Response::Written(o, t) => Ok((o, t)),
            _ => Err(self.unexpected(m, "write")),
        }
    }

    pub(crate) async fn send_read(&self, id: u64, m: usize, key: Bytes) -> Result<Option<Record>> {
        // The answer's size is not known before it comes: the call may
        // take as long as the largest record would; the coordinator's own
        // deadline decides how long a read waits.
        let timeout = self.timeout_for(crate::wire::MAX_FRAME);
        match self
            .call_peer(id, m, OpKind::Read, Request::Read { key }, timeout)
            .await?
        {
            Response::Read(rec) => Ok(rec),
            _ => Err(self.unexpected(m, "read")),
        }
    }

    /// The newest version member `m` holds of `key`, without its value,
    /// and the version the named write `write` was applied at there.
    pub(crate) async fn send_version(
        &self,
        id: u64,
        m: usize,
        key: Bytes,
        write: Option<WriteId>,
    ) -> Result<(Option<Version>, Option<Version>)> {
        let timeout = self.timeout_for(key.len());
        match self
            .call_peer(
                id,
                m,
                OpKind::Version,
                Request::Version { key, write },
                timeout,
            )
            .await?
        {
            Response::Version(v, applied) => Ok((v, applied)),
            _ => Err(self.unexpected(m, "version")),
        }
    }

    /// How long a replica operation carrying `bytes` may take: the
    /// replica timeout, and `PER_BYTE` more for each byte (a 32 MiB value
    /// gets 3.4 s more), so that a large value is not timed out on its way.
    pub(crate) fn timeout_for(&self, bytes: usize) -> Duration {
        self.cfg.timeout + PER_BYTE * bytes.min(u32::MAX as usize) as u32
    }

    /// Keep a write that member `m` missed, in the background.
    pub(crate) fn keep_hint(&self, m: usize, key: Bytes, record: Record) {
        if let Some(w) = &self.hint_writer {
            w.keep(self.topo().members[m].id, key, record);
        }
    }

    /// Index of `url` in the roster, if known.
    pub(crate) fn index_of(&self, url: &str) -> Option<usize> {
        self.topo().members.iter().position(|m| m.url == url)
    }

    pub(crate) async fn layout_call(
        &self,
        url: &str,
        req: Request,
    ) -> std::result::Result<(LayoutState, StreamStats), String> {
        let m = self
            .index_of(url)
            .ok_or_else(|| format!("{url} is not in this node's roster"))?;
        let peer = self.topo().peers[m]
            .clone()
            .ok_or_else(|| format!("no connection to {url}"))?;
        match peer.call(req, LAYOUT_CALL).await {
            Ok(Response::Layout { state, stream }) => Ok((state, stream)),
            Ok(Response::Error { message, .. }) => Err(format!("{url}: {message}")),
            Ok(_) => Err(format!("{url}: unexpected answer to a layout message")),
            Err(e) => Err(format!("{url}: {e}")),
        }
    }
}

/// A layout's own rules: distinct members, a replication factor they can
/// hold.
pub(crate) fn check_layout(s: &LayoutState) -> std::result::Result<(), String> {
    if s.version == 0 {
        return Ok(());
    }
    for list in std::iter::once(&s.members).chain(s.previous.iter()) {
        let mut ids: Vec<u64> = list.iter().map(|u| member_id(u)).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != list.len() {
            return Err("the cluster list names a member twice".into());
        }
        if s.replication < 1 || s.replication > list.len() {
            return Err(format!(
                "replication factor {} must be between 1 and the cluster's {} member(s)",
                s.replication,
                list.len()
            ));
        }
    }
    Ok(())
}

/// A roster entry: the member, its failure detector, its connections.
pub(crate) fn new_member(
    url: &str,
    me: &str,
    ctx: Option<&Arc<Ctx>>,
) -> (Member, Arc<Detector>, Option<Arc<Peer>>) {
    let id = member_id(url);
    let is_self = url == me;
    let d = Arc::new(Detector::default());
    let peer = match (is_self, ctx) {
        (false, Some(ctx)) => {
            let heard = d.clone();
            Some(Arc::new(Peer::new(
                url.to_string(),
                id,
                ctx.clone(),
                Arc::new(move || heard.heard(Instant::now())),
            )))
        }
        _ => None,
    };
    (
        Member {
            url: url.to_string(),
            id,
            is_self,
        },
        d,
        peer,
    )
}

/// The home set of each key under a topology's current layout.
pub(crate) fn home_fn(t: &Topology) -> store::HomeOf {
    let ids: Vec<u64> = t.current.members.iter().map(|&m| t.members[m].id).collect();
    let p = Placement::new(ids.clone());
    let rf = t.replication();
    Arc::new(move |k: &[u8]| {
        if ids.is_empty() {
            0
        } else {
            merkle::home_name(&p, &ids, rf, k)
        }
    })
}
