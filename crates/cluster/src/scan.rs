//! Ranges. `LiveIter` turns this node's stored records into live entries
//! (tombstones hidden, versions stripped): the contract's node-scoped range.
//! `ClusterScan` merges every reachable member's records into one ordered
//! stream without duplicates, the newest version of each key winning and
//! tombstones hidden, pulling peers' records in pages and handing entries
//! over a small bounded channel: memory holds one page per member whatever
//! the size of the range. Owns merging; must not know how entries reach
//! the client.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::error::Result;
use crate::record::Record;
use crate::shared::Shared;
use crate::store::RecordIter;
use crate::wire::{Request, Response};

/// Entries asked of a peer at a time.
const PAGE: u32 = 512;
/// Merged entries buffered ahead of the client.
const AHEAD: usize = 64;

/// Live entries of this node's store, in key order.
pub struct LiveIter(RecordIter);

impl LiveIter {
    pub(crate) fn new(it: RecordIter) -> LiveIter {
        LiveIter(it)
    }
}

impl Iterator for LiveIter {
    type Item = Result<(Bytes, Bytes)>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.0.next()? {
                Ok((k, r)) => {
                    if let Some(v) = r.value {
                        return Some(Ok((k, v)));
                    }
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// A cluster-wide range being merged in the background.
pub struct ClusterScan {
    rx: mpsc::Receiver<std::result::Result<(Bytes, Bytes), String>>,
}

impl ClusterScan {
    pub(crate) fn start(inner: Arc<Shared>, start: Bytes, end: Option<Bytes>) -> ClusterScan {
        let (tx, rx) = mpsc::channel(AHEAD);
        tokio::spawn(async move {
            if let Err(e) = merge(inner, start, end, &tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
        ClusterScan { rx }
    }

    /// The next merged entry (`None` at the end).
    pub fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<(Bytes, Bytes), String>>> {
        self.rx.poll_recv(cx)
    }

    pub async fn next(&mut self) -> Option<std::result::Result<(Bytes, Bytes), String>> {
        self.rx.recv().await
    }
}

/// A peer's records, a page at a time.
struct Cursor {
    member: usize,
    page: VecDeque<(Bytes, Record)>,
    /// Where the next page starts; `None` once the peer has no more.
    next: Option<Bytes>,
}

impl Cursor {
    async fn fill(
        &mut self,
        inner: &Shared,
        end: &Option<Bytes>,
    ) -> std::result::Result<(), String> {
        if !self.page.is_empty() {
            return Ok(());
        }
        let Some(start) = self.next.take() else {
            return Ok(());
        };
        let peer = inner.topo().peers[self.member].clone().expect("a peer");
        let req = Request::Scan {
            start,
            end: end.clone(),
            limit: PAGE,
        };
        match peer.call(req, inner.cfg.timeout).await {
            Ok(Response::Scanned { entries, more }) => {
                if more {
                    if let Some((k, _)) = entries.last() {
                        let mut n = k.to_vec();
                        n.push(0);
                        self.next = Some(Bytes::from(n));
                    }
                }
                self.page = entries.into();
                Ok(())
            }
            Ok(_) => Err(format!("{}: unexpected answer to a scan", peer.url)),
            Err(e) => Err(format!("{}: {e}", peer.url)),
        }
    }
}

async fn merge(
    inner: Arc<Shared>,
    start: Bytes,
    end: Option<Bytes>,
    tx: &mpsc::Sender<std::result::Result<(Bytes, Bytes), String>>,
) -> std::result::Result<(), String> {
    let now = Instant::now();
    let mut local = inner
        .store
        .scan(&start, end.as_deref())
        .map_err(|e| e.to_string())?
        .peekable();
    let t = inner.topo();
    let live: Vec<usize> = t
        .current
        .members
        .iter()
        .chain(t.previous.iter().flat_map(|p| p.members.iter()))
        .copied()
        .collect();
    let mut seen = Vec::new();
    let mut cursors: Vec<Cursor> = live
        .into_iter()
        .filter(|m| {
            let first = !seen.contains(m);
            seen.push(*m);
            first
        })
        .filter(|&m| m != inner.me && !inner.is_down(m, now))
        .map(|member| Cursor {
            member,
            page: VecDeque::new(),
            next: Some(start.clone()),
        })
        .collect();
    loop {
        for c in cursors.iter_mut() {
            c.fill(&inner, &end).await?;
        }
        // The smallest key at the head of any source.
        let mut min: Option<Bytes> = match local.peek() {
            Some(Ok((k, _))) => Some(k.clone()),
            Some(Err(_)) => {
                let e = local.next().expect("peeked").expect_err("peeked an error");
                return Err(e.to_string());
            }
            None => None,
        };
        for c in &cursors {
            if let Some((k, _)) = c.page.front() {
                if min.as_ref().is_none_or(|m| k < m) {
                    min = Some(k.clone());
                }
            }
        }
        let Some(key) = min else {
            return Ok(());
        };
        let mut newest: Option<Record> = None;
        let mut take = |r: Record| {
            if newest.as_ref().is_none_or(|n| r.version > n.version) {
                newest = Some(r);
            }
        };
        if matches!(local.peek(), Some(Ok((k, _))) if *k == key) {
            if let Some(Ok((_, r))) = local.next() {
                take(r);
            }
        }
        for c in cursors.iter_mut() {
            if c.page.front().is_some_and(|(k, _)| *k == key) {
                let (_, r) = c.page.pop_front().expect("front");
                take(r);
            }
        }
        if let Some(Record { value: Some(v), .. }) = newest {
            if tx.send(Ok((key, v))).await.is_err() {
                return Ok(()); // the client went away
            }
        }
    }
}
