//! Anti-entropy, the peer's side: answering another replica's exchange
//! from this node's trees and store (hashes of a tree level, keys and
//! versions a page at a time, records fetched), and applying the records
//! it pushes. Owns those answers; the asking side and the schedule are in
//! the parent module.

use std::sync::Arc;

use bytes::Bytes;

use super::*;

impl AntiEntropy {
    pub(crate) fn answer_hashes(&self, set: u64, level: u8, branches: &[u16]) -> Response {
        let Some(m) = self.sh.store.merkle() else {
            return not_kept();
        };
        let st = m.state.lock();
        let hashes = match level {
            0 => Vec::new(),
            1 => st.trees.branches(set),
            _ => st.trees.leaves(set, branches),
        };
        Response::Hashes {
            ready: st.ready,
            keys: st.trees.keys(set),
            root: st.trees.root(set),
            hashes,
        }
    }

    /// Keys of `set` in `leaves` after `after`: blocking (a store scan).
    pub(crate) fn answer_keys(
        &self,
        set: u64,
        leaves: &Leaves,
        after: Option<&[u8]>,
        limit: u32,
    ) -> Response {
        let limit = limit.clamp(1, KEYS_PAGE) as usize;
        let it = match self.sh.store.scan(after.unwrap_or(b""), None) {
            Ok(it) => it,
            Err(e) => return e.into_response(),
        };
        let mut entries = Vec::new();
        let mut last: Option<Bytes> = None;
        for (n, r) in it.enumerate() {
            let (k, rec) = match r {
                Ok(x) => x,
                Err(e) => return e.into_response(),
            };
            if after == Some(&k[..]) {
                continue;
            }
            if n >= KEYS_EXAMINE || entries.len() >= limit {
                return Response::Keys {
                    entries,
                    resume: last,
                };
            }
            if leaves.contains(merkle::leaf_of(&k)) && self.home_of(&k) == set {
                entries.push((k.clone(), rec.version, rec.is_tombstone()));
            }
            last = Some(k);
        }
        Response::Keys {
            entries,
            resume: None,
        }
    }

    /// A `KEYS` request, on the blocking pool.
    pub(crate) async fn keys_request(
        self: &Arc<Self>,
        set: u64,
        all: bool,
        leaves: Vec<u16>,
        after: Option<Bytes>,
        limit: u32,
    ) -> Response {
        let s = self.clone();
        let wanted = Leaves::new(all, &leaves);
        self.sh
            .blocking(move || s.answer_keys(set, &wanted, after.as_deref(), limit))
            .await
            .unwrap_or_else(|| ClusterError::Closed.into_response())
    }

    /// Records of `keys`, as many as fit `BATCH_BYTES` (at least one).
    pub(crate) fn answer_fetch(&self, keys: &[Bytes]) -> Response {
        let mut out = Vec::new();
        let mut bytes = 0;
        for k in keys.iter().take(BATCH) {
            if bytes >= BATCH_BYTES {
                break;
            }
            match self.sh.store.read(k) {
                Ok(r) => {
                    bytes += r.as_ref().map_or(0, |r| r.encoded_len()) + k.len();
                    out.push(r);
                }
                Err(e) => return e.into_response(),
            }
        }
        Response::Fetched(out)
    }

    pub(crate) async fn answer_push(self: &Arc<Self>, entries: Vec<(Bytes, Record)>) -> Response {
        match self.apply_many(entries).await {
            Ok((applied, _)) => {
                self.stats.received.fetch_add(applied, Ordering::Relaxed);
                Response::Pushed {
                    applied: applied as u32,
                }
            }
            Err(e) => e.into_response(),
        }
    }

    /// Apply records as repairs, side by side (one commit group, not one
    /// fsync each): (applied, already here or newer here).
    pub(super) async fn apply_many(
        self: &Arc<Self>,
        entries: Vec<(Bytes, Record)>,
    ) -> crate::error::Result<(u64, u64)> {
        let mut already = 0;
        let mut set = tokio::task::JoinSet::new();
        for (k, r) in entries {
            // What was already here is overstreaming: counted, not applied.
            if self
                .sh
                .store
                .read(&k)?
                .is_some_and(|h| h.version >= r.version)
            {
                already += 1;
                continue;
            }
            let s = self.clone();
            set.spawn(async move { s.sh.store.apply(k, r).await });
        }
        let mut applied = 0;
        let mut failed = None;
        while let Some(r) = set.join_next().await {
            match r {
                Ok(Ok(Outcome::Applied)) => applied += 1,
                Ok(Ok(Outcome::Superseded(_))) => already += 1,
                Ok(Err(e)) => failed = Some(e),
                Err(e) => failed = Some(ClusterError::Failed(e.to_string())),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok((applied, already)),
        }
    }
}
