//! One task's way into the cluster: its connections (one per member,
//! opened when first needed) and, for each request, the order of members
//! to try, the attempts, the hedge and the failover (see the crate's
//! door for the rules). A session is not shared between tasks; many
//! sessions share one `Client`. Owns the attempts of one request; must
//! not pace or record.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_api::routes;

use crate::conn::{Answer, Conn};
use crate::members::Members;
use crate::{Client, Error};

/// A request's method; it decides what is safe to repeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Put,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }
}

/// One request: its key (for routing), its path with the query (as the
/// node reads it), its body, and for a write its name (`write_id`, sent
/// as `strata-write-id`): a named write is safe to send again, and the
/// session does when an attempt fails in doubt; an unnamed one is not.
/// `Request::new` names every write with a fresh id.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub method: Method,
    pub key: &'a [u8],
    pub path: &'a str,
    pub body: &'a [u8],
    pub write_id: Option<u128>,
}

impl<'a> Request<'a> {
    /// A request; a PUT or DELETE is named with a fresh write id.
    pub fn new(method: Method, key: &'a [u8], path: &'a str, body: &'a [u8]) -> Request<'a> {
        Request {
            method,
            key,
            path,
            body,
            write_id: (method != Method::Get).then(crate::ids::next),
        }
    }

    /// Whether sending it again cannot apply it twice.
    pub fn repeatable(&self) -> bool {
        self.method == Method::Get || self.write_id.is_some()
    }
}

/// What came back, and from whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub body_bytes: u64,
    /// The member that answered (an index into `Client::members().urls`).
    pub member: usize,
    /// Members tried (1: no failover).
    pub attempts: u32,
    /// A hedge was sent (whichever answered).
    pub hedged: bool,
    /// The answering attempt went out twice on its connection (the first
    /// copy met a connection the node had just closed, and may have been
    /// read): a write's refusal then does not prove it was not applied.
    pub resent: bool,
    /// With more than one attempt: the member tried first, and the time
    /// from the send to the start of the attempt that answered (what the
    /// members before it cost: a refusal, a failure or a silence until
    /// the attempt's timeout), so that a caller timing the request can
    /// tell that time from the answering member's.
    pub before: Option<(usize, Duration)>,
}

/// A task's session.
pub struct Session {
    client: Client,
    members: Arc<Members>,
    conns: Vec<Option<Conn>>,
    /// Where requests go without routing.
    home: usize,
    /// Rotates the first replica tried, so a key's replicas share its load.
    turn: usize,
    /// The answering member's `Server-Timing` (empty: none).
    timing: Vec<u8>,
    error_body: Vec<u8>,
    /// Whether the last answer's request went out twice.
    resent: bool,
    hedge_buf: Vec<u8>,
    /// What each failed attempt of the last request came to.
    tried: Vec<String>,
}

/// What one attempt came to.
enum Attempt {
    Answer(Answer, usize),
    Failed(Error, usize),
}

impl Session {
    /// A session whose requests go to member `home` when not routed (and
    /// first in failover order), `turn` seeds which replica goes first.
    pub fn new(client: Client, home: usize, turn: usize) -> Session {
        let members = client.members();
        let n = members.len();
        Session {
            client,
            home: home % n.max(1),
            conns: (0..n).map(|_| None).collect(),
            members,
            turn,
            timing: Vec::new(),
            error_body: Vec::new(),
            resent: false,
            hedge_buf: Vec::new(),
            tried: Vec::new(),
        }
    }

    /// What each attempt of the last request that did not answer it came
    /// to ("URL: why"), in order: a failover's story.
    pub fn tried(&self) -> &[String] {
        &self.tried
    }

    /// The last answer's `Server-Timing` header value.
    pub fn server_timing(&self) -> &[u8] {
        &self.timing
    }

    /// The last answer's body if it failed (`Conn::error_body`).
    pub fn error_body(&self) -> &[u8] {
        &self.error_body
    }

    /// The members this session routes over.
    pub fn members(&self) -> &Members {
        &self.members
    }

    /// Take up members the client fetched since; connections follow their
    /// members.
    fn reload(&mut self) {
        let m = self.client.members();
        if Arc::ptr_eq(&m, &self.members) {
            return;
        }
        let mut conns: Vec<Option<Conn>> = (0..m.len()).map(|_| None).collect();
        for (i, c) in self.conns.drain(..).enumerate() {
            if let Some(j) = m.index_of(&self.members.urls[i]) {
                conns[j] = c;
            }
        }
        if let Some(j) = m.index_of(&self.members.urls[self.home]) {
            self.home = j;
        } else {
            self.home %= m.len().max(1);
        }
        self.conns = conns;
        self.members = m;
    }

    /// The members to try for `r`, best first.
    fn order(&mut self, r: &Request<'_>) -> Vec<usize> {
        let m = &self.members;
        let cfg = self.client.config();
        let mut up = Vec::with_capacity(m.len());
        let mut down = Vec::new();
        let quiet = cfg.steer.then(|| self.client.stall_quiet());
        let push = |i: usize, up: &mut Vec<usize>, down: &mut Vec<usize>| {
            if m.health[i].is_down() || quiet.is_some_and(|q| m.health[i].is_stalled(q)) {
                down.push(i);
            } else {
                up.push(i);
            }
        };
        if cfg.route {
            let pref = m.preference(r.key, r.method == Method::Get);
            let reps = m.replication.min(pref.len());
            self.turn = self.turn.wrapping_add(1);
            let first = self.turn % reps.max(1);
            for k in 0..reps {
                push(pref[(first + k) % reps], &mut up, &mut down);
            }
            for &i in &pref[reps..] {
                push(i, &mut up, &mut down);
            }
        } else {
            for k in 0..m.len() {
                push((self.home + k) % m.len(), &mut up, &mut down);
            }
        }
        up.extend(down);
        up
    }

    /// Probe every member whose back-off has passed (a task of its own).
    fn probes(&self) {
        let m = &self.members;
        for i in 0..m.len() {
            if m.health[i].marked() && m.health[i].take_probe() {
                let h = m.health[i].clone();
                let t = m.targets[i].clone();
                let cfg = self.client.config().health;
                let timeout = self.client.config().timeout;
                self.client.stats().probes.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    let mut c = Conn::new(t);
                    match tokio::time::timeout(timeout, c.request("GET", routes::STATUS, b"")).await
                    {
                        Ok(Ok(a)) if a.status == 200 => h.success(&cfg),
                        _ => h.failure(&cfg),
                    }
                });
            }
        }
    }

    /// Send `r`, and keep the answer's body in `out` when given. An
    /// answer of any status is `Ok`; `Err` when no member answered (or
    /// the one that failed may have applied a write).
    pub async fn send(
        &mut self,
        r: &Request<'_>,
        mut out: Option<&mut Vec<u8>>,
    ) -> Result<Reply, Error> {
        let client = self.client.clone();
        let cfg = client.config();
        client.stats().requests.fetch_add(1, Ordering::Relaxed);
        client.budget().deposit();
        if client.take_refresh() {
            let c = client.clone();
            tokio::spawn(async move { c.refresh().await });
        }
        self.reload();
        self.probes();
        self.tried.clear();
        let order = self.order(r);
        let began = Instant::now();
        let mut attempt_began = began;
        let mut attempts = 0u32;
        let mut hedged = false;
        let mut last: Option<Attempt> = None;
        let mut k = 0;
        while k < order.len() {
            if attempts > 0 {
                if !cfg.failover {
                    break;
                }
                if !client.budget().withdraw() {
                    client
                        .stats()
                        .budget_refused
                        .fetch_add(1, Ordering::Relaxed);
                    break;
                }
                client.stats().retries.fetch_add(1, Ordering::Relaxed);
            }
            attempts += 1;
            attempt_began = Instant::now();
            let hedge_to = (r.method == Method::Get && cfg.hedge.is_some())
                .then(|| order.get(k + 1).copied())
                .flatten()
                .filter(|&b| !self.members.health[b].is_down());
            let a = match hedge_to {
                Some(b) => {
                    let (a, h) = self.hedged(order[k], b, r, out.as_deref_mut()).await;
                    hedged |= h;
                    a
                }
                None => self.attempt(order[k], r, out.as_deref_mut()).await,
            };
            k += 1;
            match &a {
                Attempt::Answer(ans, i) => {
                    self.members.health[*i].success(&cfg.health);
                    // A refusal: another member may serve it, if it is safe.
                    let retry = ans.status == 503 && (r.repeatable() || ans.not_applied);
                    if retry {
                        let said = crate::said(&self.error_body);
                        self.tried
                            .push(format!("{}: answered 503: {said}", self.members.urls[*i]));
                    } else {
                        let before = (attempts > 1).then(|| (order[0], attempt_began - began));
                        return Ok(self.reply(*ans, *i, attempts, hedged, before));
                    }
                }
                Attempt::Failed(e, i) => {
                    self.members.health[*i].failure(&cfg.health);
                    self.tried.push(e.to_string());
                    let sent = matches!(e, Error::Request { sent: true, .. });
                    if sent && !r.repeatable() {
                        client
                            .stats()
                            .unsafe_to_retry
                            .fetch_add(1, Ordering::Relaxed);
                        return Err(e.clone());
                    }
                }
            }
            last = Some(a);
        }
        match last {
            Some(Attempt::Answer(ans, i)) => {
                let before = (attempts > 1).then(|| (order[0], attempt_began - began));
                Ok(self.reply(ans, i, attempts, hedged, before))
            }
            Some(Attempt::Failed(e, _)) => Err(e),
            None => Err(Error::Unreachable("the cluster has no members".into())),
        }
    }

    fn reply(
        &self,
        a: Answer,
        member: usize,
        attempts: u32,
        hedged: bool,
        before: Option<(usize, Duration)>,
    ) -> Reply {
        Reply {
            before,
            status: a.status,
            body_bytes: a.body_bytes,
            member,
            attempts,
            hedged,
            resent: self.resent,
        }
    }

    /// Open a connection to every member this session has none to
    /// (requests open them otherwise, on first use): a load generator
    /// does this before its clock starts. Stops at the first failure.
    pub async fn connect_all(&mut self) -> std::io::Result<()> {
        for i in 0..self.conns.len() {
            if self.conns[i].is_none() {
                let mut c = self.conn(i);
                let r = c.connect().await;
                self.conns[i] = Some(c);
                r?;
            }
        }
        Ok(())
    }

    fn conn(&mut self, i: usize) -> Conn {
        self.conns[i]
            .take()
            .unwrap_or_else(|| Conn::new(self.members.targets[i].clone()).with_stale_check())
    }

    /// One attempt on member `i`, within the timeout.
    async fn attempt(&mut self, i: usize, r: &Request<'_>, out: Option<&mut Vec<u8>>) -> Attempt {
        let mut c = self.conn(i);
        let timeout = self.client.config().timeout;
        let t0 = Instant::now();
        self.members.health[i].sending();
        let res = tokio::time::timeout(timeout, exchange(&mut c, r, out)).await;
        self.finish(c, i, r, t0, res)
    }

    /// Put a connection back (unless it is mid-answer) and say what came;
    /// a GET's latency from `t0`, its attempt's start, joins the window.
    fn finish(
        &mut self,
        c: Conn,
        i: usize,
        r: &Request<'_>,
        t0: Instant,
        res: Result<std::io::Result<Answer>, tokio::time::error::Elapsed>,
    ) -> Attempt {
        let url = &self.members.urls[i];
        match &res {
            Ok(Ok(_)) => self.members.health[i].answered(),
            _ => self.members.health[i].abandoned(),
        }
        match res {
            Ok(Ok(a)) => {
                let took = t0.elapsed();
                if r.method == Method::Get && a.status < 500 {
                    self.client.window().record(took);
                }
                self.client.median().record(took);
                self.timing.clear();
                self.timing.extend_from_slice(c.server_timing());
                self.error_body.clear();
                self.error_body.extend_from_slice(c.error_body());
                self.resent = c.resent();
                self.conns[i] = Some(c);
                Attempt::Answer(a, i)
            }
            Ok(Err(e)) => Attempt::Failed(
                Error::Request {
                    message: format!("{url}: {e}"),
                    sent: c.sent(),
                },
                i,
            ),
            Err(_) => Attempt::Failed(
                Error::Request {
                    message: format!(
                        "{url}: no answer within {} ms",
                        self.client.config().timeout.as_millis()
                    ),
                    sent: c.sent(),
                },
                i,
            ),
        }
    }

    /// A GET on `a`, hedged to `b` once it has taken longer than the
    /// client's hedge delay (and the budget allows): the first answer
    /// wins, the other's connection is dropped mid-request (HTTP/1.1 has
    /// no other way to cancel). Returns whether a hedge was sent.
    async fn hedged(
        &mut self,
        a: usize,
        b: usize,
        r: &Request<'_>,
        mut out: Option<&mut Vec<u8>>,
    ) -> (Attempt, bool) {
        let client = self.client.clone();
        let delay = client.window().delay();
        let t0 = Instant::now();
        let deadline = tokio::time::Instant::from_std(t0 + client.config().timeout);
        let mut ca = self.conn(a);
        self.members.health[a].sending();
        let mut cb: Option<Conn> = None;
        let mut buf_b = std::mem::take(&mut self.hedge_buf);
        let want = out.is_some();
        // When the hedge went out: its own attempt's latency counts from
        // there (the window must hold single attempts' latencies, or each
        // hedge would push the next hedge later).
        let mut tb = t0;
        let (res, winner) = {
            let fa = tokio::time::timeout_at(deadline, exchange(&mut ca, r, out.as_deref_mut()));
            tokio::pin!(fa);
            let early = tokio::select! {
                res = &mut fa => Some(res),
                _ = tokio::time::sleep(delay) => None,
            };
            match early {
                Some(res) => (res, a),
                None if !client.budget().withdraw() => (fa.await, a),
                None => {
                    client.stats().hedges.fetch_add(1, Ordering::Relaxed);
                    tb = Instant::now();
                    self.members.health[b].sending();
                    let c = cb.insert(self.conn(b));
                    buf_b.clear();
                    let fb = tokio::time::timeout_at(
                        deadline,
                        exchange(c, r, want.then_some(&mut buf_b)),
                    );
                    tokio::pin!(fb);
                    tokio::select! {
                        res = &mut fa => (res, a),
                        res = &mut fb => (res, b),
                    }
                }
            }
        };
        let hedged = cb.is_some();
        // The loser's request is cut: it ends without an answer.
        if hedged {
            self.members.health[if winner == a { b } else { a }].abandoned();
        }
        let attempt = if winner == a {
            self.finish(ca, a, r, t0, res)
        } else {
            // The first member lost to its hedge: past the percentile and
            // then slower than another replica. Losing in a row marks it
            // down like failing does (a stopped node is then left alone
            // instead of spending the budget on hedges).
            self.members.health[a].failure(&client.config().health);
            client.stats().hedge_wins.fetch_add(1, Ordering::Relaxed);
            if let Some(o) = out {
                std::mem::swap(o, &mut buf_b);
            }
            self.finish(cb.take().expect("the hedge"), b, r, tb, res)
        };
        self.hedge_buf = buf_b;
        (attempt, hedged)
    }
}

async fn exchange(
    c: &mut Conn,
    r: &Request<'_>,
    out: Option<&mut Vec<u8>>,
) -> std::io::Result<Answer> {
    c.request_named((r.method.as_str(), r.path), r.write_id, r.body, out)
        .await
}
