//! One client of the checked run: its operations (straight to a node or
//! through the client library's session), each recorded into its log, the
//! main phase's mix and the final pass's reads. Owns sending and recording
//! one operation; must not judge the history nor decide the run's length
//! (the run's `Ctx` says when the main phase is over).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_api::routes;

use rand::rngs::SmallRng;
use rand::Rng;

use super::super::history::{
    register_key, register_value, set_key, shared_key, ClientLog, Kind, Outcome, Pending,
};
use super::{Config, Progress, Smart};
use strata_api::query::encode_into;
use strata_client::conn::{Conn, Target};
use strata_client::session::{Method, Request, Session};

/// What every client shares (one thread: `Rc`).
pub(super) struct Ctx {
    pub(super) cfg: Config,
    pub(super) targets: Vec<Target>,
    pub(super) nodes: Vec<Arc<str>>,
    pub(super) progress: Arc<Progress>,
    pub(super) deadline: Instant,
}

impl Ctx {
    pub(super) fn main_phase_over(&self) -> bool {
        self.progress.stop.load(Ordering::Relaxed)
            || Instant::now() >= self.deadline
            || self
                .cfg
                .target_writes
                .is_some_and(|t| self.progress.acknowledged() >= t)
    }
}

/// One client: its log, random stream, connections (one per node, opened
/// when first used) and buffers.
pub(super) struct Client {
    pub(super) id: u32,
    pub(super) log: ClientLog,
    pub(super) rng: SmallRng,
    pub(super) conns: Vec<Option<Conn>>,
    /// Through the client library instead of `conns`, when configured.
    pub(super) session: Option<Session>,
    pub(super) path: String,
    pub(super) body: Vec<u8>,
    pub(super) value: Vec<u8>,
    pub(super) set_written: u64,
    pub(super) seq: u64,
}

const NO_ANSWER_PAUSE: Duration = Duration::from_millis(10);

/// What an operation is.
enum Req<'a> {
    Write(&'a [u8]),
    Delete,
    Read,
    FinalRead,
}

impl Client {
    /// Send one operation to node `node`, recording it; its outcome.
    async fn op(&mut self, ctx: &Ctx, node: usize, key: &[u8], req: Req<'_>) -> Outcome {
        let (kind, method, value, final_read) = match req {
            Req::Write(v) => (Kind::Write, "PUT", Some(v), false),
            Req::Delete => (Kind::Delete, "DELETE", None, false),
            Req::Read => (Kind::Read, "GET", None, false),
            Req::FinalRead => (Kind::Read, "GET", None, true),
        };
        let q = ctx.cfg.quorum;
        let ack = match (kind, final_read) {
            (Kind::Read, true) => q.from,
            (Kind::Read, false) => q.ack_read,
            _ => q.ack_write,
        };
        self.path.clear();
        self.path.push_str(routes::ENTITY);
        self.path.push_str("?id=");
        encode_into(&mut self.path, key);
        if let Some(a) = ack {
            self.path.push_str(&format!("&ack={a}"));
        }
        if let Some(f) = q.from {
            self.path.push_str(&format!("&from={f}"));
        }
        if self.session.is_some() {
            return self
                .op_through_client(ctx, node, key, kind, value, final_read)
                .await;
        }
        let conn = self.conns[node].get_or_insert_with(|| Conn::new(ctx.targets[node].clone()));
        let pending = self
            .log
            .invoke(kind, key, value, &ctx.nodes[node], final_read);
        let answer = tokio::time::timeout(
            ctx.cfg.timeout,
            conn.request_into(
                method,
                &self.path,
                value.unwrap_or_default(),
                &mut self.body,
            ),
        )
        .await;
        let (outcome, status) = match answer {
            Ok(Ok(a)) => (
                Outcome::of_status(kind, a.status, conn.resent()),
                Some(a.status),
            ),
            // Refused: the request never left (unless this was its second
            // copy, after the first went out on a connection found closed).
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused && !conn.resent() => {
                (Outcome::Failed, None)
            }
            // The connection already dropped its stream.
            Ok(Err(_)) => (Outcome::Unknown, None),
            Err(_) => {
                // Abandoned halfway: the connection's state is unknown.
                self.conns[node] = None;
                (Outcome::Unknown, None)
            }
        };
        self.record(ctx, pending, kind, outcome, status).await
    }

    /// `op` through the client library's session: it picks the node (one
    /// of the key's replicas; `node` only labels the operation until the
    /// answer says who served it), fails over what is safe to repeat and
    /// hedges reads. A write that went out and got no answer is of
    /// unknown outcome, as it is straight.
    async fn op_through_client(
        &mut self,
        ctx: &Ctx,
        node: usize,
        key: &[u8],
        kind: Kind,
        value: Option<&[u8]>,
        final_read: bool,
    ) -> Outcome {
        let session = self.session.as_mut().expect("a session");
        let mut pending = self
            .log
            .invoke(kind, key, value, &ctx.nodes[node], final_read);
        let method = match kind {
            Kind::Read => Method::Get,
            Kind::Write => Method::Put,
            Kind::Delete => Method::Delete,
        };
        // A write is named: the session sends it again after an attempt
        // that failed in doubt, and the nodes apply it once.
        let r = Request::new(method, key, &self.path, value.unwrap_or_default());
        let answer =
            tokio::time::timeout(ctx.cfg.timeout, session.send(&r, Some(&mut self.body))).await;
        let (outcome, status) = match answer {
            Ok(Ok(reply)) => {
                if let Some(n) = ctx.nodes.get(reply.member) {
                    pending.served_by(n);
                }
                // A refusal after more than one copy went out does not
                // say the write was not applied by an earlier one.
                let repeated = reply.resent || reply.attempts > 1;
                (
                    Outcome::of_status(kind, reply.status, repeated),
                    Some(reply.status),
                )
            }
            // No member took it: nothing was written.
            Ok(Err(strata_client::Error::Request { sent: false, .. }))
            | Ok(Err(strata_client::Error::Unreachable(_))) => (Outcome::Failed, None),
            Ok(Err(_)) => (Outcome::Unknown, None),
            Err(_) => {
                // Abandoned halfway: its connections' state is unknown.
                let Smart(c) = ctx.cfg.client.as_ref().expect("a client");
                self.session = Some(Session::new(c.clone(), self.id as usize, self.id as usize));
                (Outcome::Unknown, None)
            }
        };
        self.record(ctx, pending, kind, outcome, status).await
    }

    /// Record an operation's completion (a read's value is in `body`); after
    /// no answer at all, pause: a dead or unreachable node answers errors at
    /// once, and must not flood the history.
    async fn record(
        &mut self,
        ctx: &Ctx,
        pending: Pending,
        kind: Kind,
        outcome: Outcome,
        status: Option<u16>,
    ) -> Outcome {
        let read = (kind == Kind::Read && status == Some(200)).then_some(&self.body[..]);
        self.log.complete(pending, outcome, status, read);
        ctx.progress.ops.fetch_add(1, Ordering::Relaxed);
        if status.is_none() {
            tokio::time::sleep(NO_ANSWER_PAUSE).await;
        }
        outcome
    }

    /// The value of the client's `n`th `set/…` write.
    fn set_value(&mut self, n: u64, size: usize) {
        self.value.clear();
        self.value
            .extend_from_slice(register_value(self.id, n).as_bytes());
        if self.value.len() < size {
            self.value.resize(size, b'.');
        }
    }
}

pub(super) async fn main_phase(mut c: Client, ctx: Rc<Ctx>) -> Client {
    let mix = ctx.cfg.mix;
    let total = mix.total();
    let regs = ctx.cfg.registers_per_client;
    let mut next = tokio::time::Instant::now();
    while !ctx.main_phase_over() {
        if let Some(pace) = ctx.cfg.pace {
            // A client that fell behind starts again from now: no bursts.
            next = (next + pace).max(tokio::time::Instant::now());
            tokio::time::sleep_until(next).await;
            if ctx.main_phase_over() {
                break;
            }
        }
        let node = c.rng.random_range(0..ctx.targets.len());
        let x = c.rng.random::<f64>() * total;
        if x < mix.set_writes {
            let n = c.set_written;
            c.set_written += 1;
            let key = set_key(&ctx.cfg.run, c.id, n);
            c.set_value(n, ctx.cfg.value_size);
            let value = std::mem::take(&mut c.value);
            let o = c.op(&ctx, node, key.as_bytes(), Req::Write(&value)).await;
            c.value = value;
            if o == Outcome::Ok {
                ctx.progress.acknowledged.fetch_add(1, Ordering::Relaxed);
            }
        } else if x < mix.set_writes + mix.register_writes {
            // Sequential by construction: this client waits for each answer.
            c.seq += 1;
            let key = register_key(&ctx.cfg.run, c.id, c.rng.random_range(0..regs));
            let value = register_value(c.id, c.seq);
            c.op(&ctx, node, key.as_bytes(), Req::Write(value.as_bytes()))
                .await;
        } else if x < mix.set_writes + mix.register_writes + mix.register_reads {
            let owner = c.rng.random_range(0..ctx.cfg.clients);
            let key = register_key(&ctx.cfg.run, owner, c.rng.random_range(0..regs));
            c.op(&ctx, node, key.as_bytes(), Req::Read).await;
        } else {
            // The keys every client shares, for the linearizability check:
            // each value written once (`<client>:<seq>`).
            let y = x - (mix.set_writes + mix.register_writes + mix.register_reads);
            let key = shared_key(
                &ctx.cfg.run,
                c.rng.random_range(0..ctx.cfg.shared_keys.max(1)),
            );
            if y < mix.shared_writes {
                c.seq += 1;
                let value = register_value(c.id, c.seq);
                c.op(&ctx, node, key.as_bytes(), Req::Write(value.as_bytes()))
                    .await;
            } else if y < mix.shared_writes + mix.shared_reads {
                c.op(&ctx, node, key.as_bytes(), Req::Read).await;
            } else {
                c.op(&ctx, node, key.as_bytes(), Req::Delete).await;
            }
        }
    }
    c
}

/// Read keys from the shared queue until it is empty, each at `ack=from`,
/// through another node at each attempt, until one answers (200 or 404).
pub(super) async fn final_phase(
    mut c: Client,
    ctx: Rc<Ctx>,
    keys: Rc<RefCell<VecDeque<Vec<u8>>>>,
    deadline: Instant,
) {
    let n = ctx.targets.len();
    loop {
        let Some(key) = keys.borrow_mut().pop_front() else {
            return;
        };
        let first = c.rng.random_range(0..n);
        let mut wait = ctx.cfg.final_backoff;
        for attempt in 0..ctx.cfg.final_attempts.max(1) {
            if Instant::now() >= deadline {
                // Keys left unread are reported as not verified.
                return;
            }
            let node = (first + attempt as usize) % n;
            if c.op(&ctx, node, &key, Req::FinalRead).await == Outcome::Ok {
                break;
            }
            if attempt + 1 < ctx.cfg.final_attempts {
                tokio::time::sleep(wait.min(deadline.saturating_duration_since(Instant::now())))
                    .await;
                wait = (wait * 2).min(Duration::from_secs(1));
            }
        }
    }
}
