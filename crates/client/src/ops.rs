//! The typed calls an application makes: `put`, `get`, `delete` and
//! `range` on a [`Client`], keys and values as bytes (the key
//! percent-encoded here, never by the caller), per-request `Options`, and
//! answers turned into results and typed errors. Each call borrows an
//! idle session from the client's pool (`Pool`, at most `POOL_IDLE` kept)
//! and gives it back, so any number of tasks may call at once; every
//! write is named with a fresh write id (`ids`), so the session sends it
//! again to another replica after an attempt that failed in doubt and the
//! nodes apply it once. A range streams from one member with
//! `scope=cluster` (the nodes merge their streams), one entry at a time.
//! Owns the typed calls; must not route, retry or pace (the session
//! does, or the caller).

use std::sync::Mutex;
use std::time::Duration;
use strata_api::routes;

use bytes::Bytes;
use strata_api::query::encode_into;

use crate::conn::Conn;
use crate::session::{Method, Request, Session};
use crate::{Client, Error};

/// Idle sessions kept for the typed calls: more concurrent calls than
/// this open sessions of their own, dropped when they end.
pub const POOL_IDLE: usize = 64;

/// The client's idle sessions.
#[derive(Default)]
pub struct Pool {
    idle: Mutex<Vec<Session>>,
}

/// What one request may set beyond the client's defaults.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// `ack`/`from` of this request (`None`: the client's default).
    pub replication: Option<(usize, usize)>,
    /// How long the whole request may take, failovers included (`None`:
    /// as long as its attempts take, each bounded by the client's
    /// timeout). A write that runs out of it may have been applied.
    pub timeout: Option<Duration>,
}

impl Options {
    /// Options with `ack`/`from`.
    pub fn replication(ack: usize, from: usize) -> Options {
        Options {
            replication: Some((ack, from)),
            ..Options::default()
        }
    }
}

/// A session borrowed from the pool, given back when dropped after its
/// request finished. A call cancelled mid-request (its future dropped, or
/// its timeout) drops the session instead: a connection may still carry
/// that request's answer, which must never be read as another's.
struct Borrowed<'a> {
    client: &'a Client,
    session: Option<Session>,
    finished: bool,
}

impl Drop for Borrowed<'_> {
    fn drop(&mut self) {
        if !self.finished {
            return;
        }
        if let (Some(s), Some(pool)) = (self.session.take(), self.client.pool()) {
            let mut idle = pool.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < POOL_IDLE {
                idle.push(s);
            }
        }
    }
}

impl Client {
    fn borrow(&self) -> Borrowed<'_> {
        let pooled = self
            .pool()
            .and_then(|p| p.idle.lock().unwrap_or_else(|e| e.into_inner()).pop());
        let session = pooled.unwrap_or_else(|| {
            let turn = self
                .stats()
                .requests
                .load(std::sync::atomic::Ordering::Relaxed) as usize;
            Session::new(self.core(), turn, turn)
        });
        Borrowed {
            client: self,
            session: Some(session),
            finished: false,
        }
    }

    /// `/v0/entity?id=KEY[&ack=A&from=F]`.
    fn entity_path(&self, key: &[u8], o: &Options) -> String {
        let mut p = String::with_capacity(24 + key.len() * 3);
        p.push_str(routes::ENTITY);
        p.push_str("?id=");
        encode_into(&mut p, key);
        if let Some((ack, from)) = o.replication.or(self.config().replication) {
            p.push_str(&format!("&ack={ack}&from={from}"));
        }
        p
    }

    /// Send one single-key request; the answer's status, its body, and
    /// the member that gave it.
    async fn call(
        &self,
        method: Method,
        (key, value): (&[u8], &[u8]),
        o: &Options,
    ) -> Result<(u16, Vec<u8>, String), Error> {
        let path = self.entity_path(key, o);
        let r = Request::new(method, key, &path, value);
        let mut b = self.borrow();
        let s = b.session.as_mut().expect("a session");
        let mut body = Vec::new();
        let sent = s.send(&r, Some(&mut body));
        let res = match o.timeout {
            None => sent.await,
            Some(t) => match tokio::time::timeout(t, sent).await {
                Ok(r) => r,
                Err(_) => {
                    // Cut mid-request: the session is not given back.
                    return Err(Error::Unavailable {
                        tried: vec![format!("no answer within {} ms", t.as_millis())],
                        sent: true,
                    });
                }
            },
        };
        b.finished = true;
        match res {
            Ok(reply) => {
                let url = s.members().urls.get(reply.member).cloned();
                Ok((reply.status, body, url.unwrap_or_default()))
            }
            Err(Error::Request { message, sent }) => {
                let mut tried = s.tried().to_vec();
                if tried.last() != Some(&message) {
                    tried.push(message);
                }
                Err(Error::Unavailable { tried, sent })
            }
            Err(e) => Err(e),
        }
    }

    /// The error for an answer that is not the call's success.
    fn refused((status, body, url): (u16, Vec<u8>, String)) -> Error {
        let reason = crate::said(&body);
        match status {
            401 => Error::Unauthorized { url, reason },
            403 => Error::Forbidden { url, reason },
            _ => Error::Status { status, reason },
        }
    }

    /// Store `value` under `key` (last write wins); returns once the
    /// cluster acknowledged it (`ack` replicas hold it durably).
    pub async fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<(), Error> {
        self.put_with(key, value, &Options::default()).await
    }

    /// `put` with this request's options.
    pub async fn put_with(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        o: &Options,
    ) -> Result<(), Error> {
        let key = key.as_ref();
        match self.call(Method::Put, (key, value.as_ref()), o).await? {
            (201, ..) => Ok(()),
            other => Err(Client::refused(other)),
        }
    }

    /// The value under `key`, `None` when there is none (never written,
    /// or deleted).
    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>, Error> {
        self.get_with(key, &Options::default()).await
    }

    /// `get` with this request's options.
    pub async fn get_with(
        &self,
        key: impl AsRef<[u8]>,
        o: &Options,
    ) -> Result<Option<Bytes>, Error> {
        let key = key.as_ref();
        match self.call(Method::Get, (key, b""), o).await? {
            (200, body, _) => Ok(Some(Bytes::from(body))),
            (404, ..) => Ok(None),
            other => Err(Client::refused(other)),
        }
    }

    /// Delete `key` (also when it has no value).
    pub async fn delete(&self, key: impl AsRef<[u8]>) -> Result<(), Error> {
        self.delete_with(key, &Options::default()).await
    }

    /// `delete` with this request's options.
    pub async fn delete_with(&self, key: impl AsRef<[u8]>, o: &Options) -> Result<(), Error> {
        let key = key.as_ref();
        match self.call(Method::Delete, (key, b""), o).await? {
            (202, ..) => Ok(()),
            other => Err(Client::refused(other)),
        }
    }

    /// The live entries with `start <= key < end` (`end` `None`: to the
    /// last key) across the cluster, in key order, streamed: call
    /// [`Range::next`] until it returns `None`. Memory stays at one entry
    /// whatever the range's size.
    pub fn range(&self, start: impl AsRef<[u8]>, end: Option<&[u8]>) -> Range {
        let mut path = format!("{}?start=", routes::ENTITIES);
        encode_into(&mut path, start.as_ref());
        if let Some(e) = end {
            path.push_str("&end=");
            encode_into(&mut path, e);
        }
        path.push_str("&scope=cluster");
        Range {
            client: self.clone(),
            path,
            conn: None,
            done: false,
            entry: Vec::new(),
        }
    }
}

/// A range's entries as they stream in (`Client::range`).
pub struct Range {
    client: Client,
    path: String,
    /// The connection the entries arrive on, once one member answered.
    conn: Option<Conn>,
    done: bool,
    entry: Vec<u8>,
}

impl Range {
    /// The next entry, `None` after the last. Before the first entry the
    /// range goes to the next member if one fails; after it, a failure
    /// ends the range with the error (the entries so far were true).
    pub async fn next(&mut self) -> Option<Result<(Bytes, Bytes), Error>> {
        if self.done {
            return None;
        }
        if self.conn.is_none() {
            match self.open().await {
                Ok(c) => self.conn = Some(c),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let c = self.conn.as_mut().expect("open");
        match c.next_chunk(&mut self.entry).await {
            Ok(false) => {
                self.done = true;
                None
            }
            Ok(true) => {
                let Some(nl) = self.entry.iter().position(|&b| b == b'\n') else {
                    self.done = true;
                    return Some(Err(Error::Status {
                        status: 200,
                        reason: "a range entry without the newline between key and value".into(),
                    }));
                };
                let value = Bytes::copy_from_slice(&self.entry[nl + 1..]);
                self.entry.truncate(nl);
                Some(Ok((Bytes::copy_from_slice(&self.entry), value)))
            }
            Err(e) => {
                self.done = true;
                Some(Err(Error::Unavailable {
                    tried: vec![format!("the range stream broke: {e}")],
                    sent: false,
                }))
            }
        }
    }

    /// Every entry left, gathered (for ranges known to be small).
    pub async fn collect(mut self) -> Result<Vec<(Bytes, Bytes)>, Error> {
        let mut all = Vec::new();
        while let Some(e) = self.next().await {
            all.push(e?);
        }
        Ok(all)
    }

    /// The first member that answers the range with `200`.
    async fn open(&mut self) -> Result<Conn, Error> {
        let members = self.client.members();
        let timeout = self.client.config().timeout;
        let mut tried = Vec::new();
        let mut order: Vec<usize> = (0..members.len())
            .filter(|&i| !members.health[i].is_down())
            .collect();
        order.extend((0..members.len()).filter(|&i| members.health[i].is_down()));
        for i in order {
            let url = &members.urls[i];
            let mut c = Conn::new(members.targets[i].clone());
            match tokio::time::timeout(timeout, c.open_chunks(&self.path)).await {
                Ok(Ok(200)) => return Ok(c),
                Ok(Ok(s @ (401 | 403 | 400))) => {
                    let reason = crate::said(c.error_body());
                    return Err(match s {
                        401 => Error::Unauthorized {
                            url: url.clone(),
                            reason,
                        },
                        403 => Error::Forbidden {
                            url: url.clone(),
                            reason,
                        },
                        _ => Error::Status { status: s, reason },
                    });
                }
                Ok(Ok(s)) => tried.push(format!(
                    "{url}: answered {s}: {}",
                    crate::said(c.error_body())
                )),
                Ok(Err(e)) => tried.push(format!("{url}: {e}")),
                Err(_) => tried.push(format!(
                    "{url}: no answer within {} ms",
                    timeout.as_millis()
                )),
            }
        }
        Err(Error::Unavailable { tried, sent: false })
    }
}
