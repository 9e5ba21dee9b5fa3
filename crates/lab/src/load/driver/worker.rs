//! One worker of the driver: a connection (open loop) or a client (closed
//! loop) with its key generator, the values it sends, and how one
//! operation becomes one or two HTTP requests, straight on its connection
//! or through the cluster client's session. Owns building and sending a
//! request; must not pace, time or record it (the driver does).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;
use strata_api::routes;

use strata_api::query::encode_into;
use strata_client::conn::Conn;
use strata_client::session::{Method, Request, Session};

use crate::load::workload::{Generator, Op};

/// Values to send: one buffer per thread, grown to the largest size asked.
pub(super) struct Values(pub(super) RefCell<Rc<[u8]>>);

impl Values {
    pub(super) fn get(&self, len: usize) -> Rc<[u8]> {
        let mut b = self.0.borrow_mut();
        if b.len() < len {
            *b = vec![b'v'; len.max(b.len() * 2)].into();
        }
        b.clone()
    }
}

/// A worker's counted request in flight: node, operation, intended time.
pub(super) type Current = Rc<std::cell::Cell<Option<(usize, usize, Instant)>>>;

/// What one connection (open loop) or client (closed loop) owns.
pub(super) struct Worker {
    /// The node `conn` talks to (an index into the plan's nodes).
    pub(super) node: usize,
    /// The node that answered the last request (`node`, unless the
    /// client's session routed or failed over), of `nodes`.
    pub(super) served: usize,
    /// The last request's time on members before the one that answered
    /// (the client's session failed over): the node tried first, and
    /// how long.
    pub(super) before: Option<(usize, std::time::Duration)>,
    pub(super) nodes: usize,
    /// Its counted request in flight, for the thread to count as
    /// unfinished if the run's end abandons it.
    pub(super) current: Current,
    pub(super) conn: Conn,
    /// With a cluster's client: routing and failover (then `conn` idles).
    pub(super) session: Option<Session>,
    pub(super) gen: Box<dyn Generator>,
    pub(super) path: String,
    /// The plan's `query`.
    pub(super) query: Rc<str>,
    pub(super) values: Rc<Values>,
}

impl Worker {
    /// Send one operation and read its answer(s); `None` if no answer came.
    pub(super) async fn send(&mut self, op: &Op) -> std::io::Result<u16> {
        self.path.clear();
        self.served = self.node;
        self.before = None;
        match op {
            Op::Get { key } | Op::Delete { key } => {
                self.path.push_str(routes::ENTITY);
                self.path.push_str("?id=");
                encode_into(&mut self.path, key);
                self.path.push_str(&self.query);
                let m = if matches!(op, Op::Get { .. }) {
                    Method::Get
                } else {
                    Method::Delete
                };
                self.one(m, key.as_ref(), b"").await
            }
            Op::Put { key, value_len } => {
                self.path.push_str(routes::ENTITY);
                self.path.push_str("?id=");
                encode_into(&mut self.path, key);
                self.path.push_str(&self.query);
                let v = self.values.get(*value_len);
                self.one(Method::Put, key.as_ref(), &v[..*value_len]).await
            }
            Op::Range { start, end, .. } => {
                self.path.push_str(routes::ENTITIES);
                self.path.push_str("?start=");
                encode_into(&mut self.path, start);
                self.path.push_str("&end=");
                encode_into(&mut self.path, end);
                // A range is the receiving node's: never routed.
                self.conn
                    .request("GET", &self.path, b"")
                    .await
                    .map(|a| a.status)
            }
            Op::ReadModifyWrite { key, value_len } => {
                self.path.push_str(routes::ENTITY);
                self.path.push_str("?id=");
                encode_into(&mut self.path, key);
                self.path.push_str(&self.query);
                let read = self.one(Method::Get, key.as_ref(), b"").await?;
                if super::record::failed_status(read) {
                    return Ok(read);
                }
                let v = self.values.get(*value_len);
                self.one(Method::Put, key.as_ref(), &v[..*value_len]).await
            }
        }
    }

    /// One single-key request on `self.path`, through the session when
    /// there is one.
    async fn one(&mut self, method: Method, key: &[u8], body: &[u8]) -> std::io::Result<u16> {
        match &mut self.session {
            None => self
                .conn
                .request(method.as_str(), &self.path, body)
                .await
                .map(|a| a.status),
            Some(s) => {
                // Writes named, as the client names them for an
                // application: safe to send again after a failure in doubt.
                let r = Request::new(method, key, &self.path, body);
                let reply = s.send(&r, None).await.map_err(std::io::Error::other)?;
                // The members are the run's nodes, in order (`Nodes::discover`);
                // a member that joined since counts as the last node.
                self.served = reply.member.min(self.nodes - 1);
                self.before = reply.before.map(|(m, d)| (m.min(self.nodes - 1), d));
                Ok(reply.status)
            }
        }
    }

    /// The last answer's body if it failed.
    pub(super) fn error_body(&self) -> &[u8] {
        match &self.session {
            Some(s) => s.error_body(),
            None => self.conn.error_body(),
        }
    }

    /// The last answer's `Server-Timing` value.
    pub(super) fn server_timing(&self) -> &[u8] {
        match &self.session {
            Some(s) => s.server_timing(),
            None => self.conn.server_timing(),
        }
    }
}
