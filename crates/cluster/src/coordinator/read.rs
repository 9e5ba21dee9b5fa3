//! A read through the coordinator: `ack` of the key's `from` replicas
//! asked in parallel, the newest answer taken and written back to the
//! replicas that were stale before answering (read repair); and the page
//! of a scan a peer asks this node for. Owns the read side of the
//! protocol; must not write except to repair.

use crate::error::{ClusterError, Result};
use crate::ops::{OpKind, Replication};
use crate::record::Record;
use crate::shared::record_bytes;
use crate::trace::{PeerWait, Trace};
use crate::wire::Response;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Coordinator, MAX_PAGE};

impl Coordinator {
    pub(crate) async fn read(
        self: Arc<Self>,
        id: u64,
        key: Bytes,
        r: Replication,
        trace: &mut Trace,
    ) -> Result<Option<Bytes>> {
        let t = self.sh.topo().pin();
        if t.current.is_empty() {
            return Err(ClusterError::NotMember);
        }
        let replicas = t.read_set(&key, r.from);
        if replicas == [self.sh.me] {
            let began = Instant::now();
            let rec = self.sh.store.read(&key);
            trace.read = Some(began.elapsed());
            return Ok(rec?.and_then(|r| r.value));
        }
        let reach = self.reachable(&replicas);
        let live = reach.iter().filter(|&&x| x).count();
        if live < r.ack {
            return Err(self.not_enough(live, r.ack));
        }
        let (tx, mut rx) = mpsc::channel::<(usize, Result<Option<Record>>)>(replicas.len());
        let mut answers: Vec<(usize, Option<Record>)> = Vec::with_capacity(replicas.len());
        let mut outstanding = 0usize;
        let mut local_err = None;
        let began = Instant::now();
        let mut local_done = None;
        for (&m, &reach) in replicas.iter().zip(&reach) {
            if m == self.sh.me {
                let at = Instant::now();
                match self.sh.store.read(&key) {
                    Ok(rec) => answers.push((m, rec)),
                    Err(e) => local_err = Some(e),
                }
                trace.read = Some(at.elapsed());
                local_done = Some(Instant::now());
            } else if reach {
                let (s, tx, k) = (self.clone(), tx.clone(), key.clone());
                tokio::spawn(async move {
                    let r = s.sh.send_read(id, m, k).await;
                    let _ = tx.send((m, r)).await;
                });
                outstanding += 1;
            }
        }
        drop(tx);
        // A large record read here is as large on the other replicas: their
        // answers get the time it takes to carry it.
        let local_bytes = answers
            .iter()
            .filter_map(|(_, rec)| rec.as_ref())
            .map(|rec| record_bytes(&key, rec))
            .max()
            .unwrap_or(0);
        let deadline = tokio::time::Instant::now() + self.sh.timeout_for(local_bytes);
        while answers.len() < r.ack && answers.len() + outstanding >= r.ack {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some((m, res))) => {
                    outstanding -= 1;
                    if let Ok(rec) = res {
                        answers.push((m, rec));
                        if answers.len() == r.ack {
                            trace.peer = Some(PeerWait {
                                url: self.sh.member_url(m),
                                waited: local_done.unwrap_or(began).elapsed(),
                                own: None,
                            });
                        }
                    }
                }
                _ => break,
            }
        }
        if answers.len() < r.ack {
            if let (Some(e), 1) = (local_err, replicas.len()) {
                return Err(e);
            }
            return Err(self.not_enough(answers.len(), r.ack));
        }
        let newest = answers
            .iter()
            .filter_map(|(_, rec)| rec.as_ref())
            .max_by_key(|rec| rec.version)
            .cloned();
        if let Some(newest) = &newest {
            let stale: Vec<usize> = answers
                .iter()
                .filter(|(_, rec)| rec.as_ref().is_none_or(|x| x.version < newest.version))
                .map(|(m, _)| *m)
                .collect();
            if !stale.is_empty() {
                // Bring the stale replicas level before answering, so the
                // newest version is on `ack` replicas and the next quorum
                // read cannot go back in time.
                let repaired = self.clone().repair(id, &key, newest, &stale).await;
                let mut holders = answers.len() - stale.len() + repaired;
                // A stale replica that could not take the repair (its
                // store refuses writes): a replica not heard yet may hold
                // the newest version already, and counts instead.
                while holders < r.ack && outstanding > 0 {
                    match tokio::time::timeout_at(deadline, rx.recv()).await {
                        Ok(Some((_, res))) => {
                            outstanding -= 1;
                            if let Ok(Some(rec)) = res {
                                if rec.version >= newest.version {
                                    holders += 1;
                                }
                            }
                        }
                        _ => break,
                    }
                }
                if holders < r.ack {
                    return Err(self.not_enough(holders, r.ack));
                }
            }
            if outstanding > 0 {
                // Late answers are repaired in the background.
                let (s, k, newest) = (self.clone(), key.clone(), newest.clone());
                let pin = t.clone();
                tokio::spawn(async move {
                    while let Some((m, res)) = rx.recv().await {
                        if let Ok(rec) = res {
                            if rec.as_ref().is_none_or(|x| x.version < newest.version) {
                                s.clone().repair(0, &k, &newest, &[m]).await;
                            }
                        }
                    }
                    drop(pin);
                });
            }
        }
        Ok(newest.and_then(|r| r.value))
    }

    /// Write `record` to the replicas in `stale`; returns how many took it.
    pub(super) async fn repair(
        self: Arc<Self>,
        id: u64,
        key: &Bytes,
        record: &Record,
        stale: &[usize],
    ) -> usize {
        let mut set = tokio::task::JoinSet::new();
        for &m in stale {
            self.stats.read_repairs.fetch_add(1, Ordering::Relaxed);
            let (s, k, rec) = (self.clone(), key.clone(), record.clone());
            set.spawn(async move {
                let r = if m == s.sh.me {
                    s.sh.store.apply(k.clone(), rec.clone()).await
                } else {
                    let r =
                        s.sh.send_write(id, m, k.clone(), rec.clone(), OpKind::Repair)
                            .await;
                    if r.is_err() {
                        s.sh.keep_hint(m, k, rec);
                    }
                    r
                };
                r.is_ok()
            });
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            if r.unwrap_or(false) {
                ok += 1;
            }
        }
        ok
    }

    pub(crate) fn scan_page(&self, start: &[u8], end: Option<&[u8]>, limit: u32) -> Response {
        let limit = limit.clamp(1, MAX_PAGE) as usize;
        let mut entries = Vec::new();
        let mut more = false;
        let it = match self.sh.store.scan(start, end) {
            Ok(it) => it,
            Err(e) => return e.into_response(),
        };
        for e in it {
            match e {
                Ok(kr) => {
                    if entries.len() == limit {
                        more = true;
                        break;
                    }
                    entries.push(kr);
                }
                Err(e) => return e.into_response(),
            }
        }
        Response::Scanned { entries, more }
    }
}
