//! A client of a Strata cluster, for applications and for the lab's load.
//!
//! An application builds one with [`Client::builder`] (seed URLs,
//! credentials, timeouts, the default `ack`/`from`) and calls
//! [`Client::put`], [`Client::get`], [`Client::delete`] and
//! [`Client::range`] (`ops`, `builder`); scripts use the same from
//! [`blocking::Client`] (`blocking`); operator tools, scrapes and
//! downloads send one control request at a time through the blocking
//! exchange (`control`). Both faces, async and blocking, decode answers
//! with one decoder (`answer`). Underneath, and for the lab's load: the client
//! learns the members from the nodes' cluster views (`members`) and keeps
//! them current; each task sends through a `Session` (`session`), which
//! holds its connections (`conn`, over `stream`) and, for each request:
//!
//! 1. orders the members for the key: its replicas first (`route`, by the
//!    nodes' own placement, so the request saves the forward hop), members
//!    marked down or stalled (requests outstanding, no answer for a few
//!    times the usual latency) last (`health`);
//! 2. sends to the first, with a timeout; a GET slower than a percentile
//!    of recent GETs is hedged to the next replica, the first answer wins
//!    and the other is dropped (`hedge`); a member that loses its races
//!    in a row counts as failing;
//! 3. on a refused connection, a reset, a timeout or a 503 fails over to
//!    the next member when the request is safe to repeat: a GET, and a
//!    PUT or DELETE named with a write id (`ids`; the nodes apply it
//!    once), always; an unnamed write only when the node cannot have
//!    applied it (the connection never opened, or a 503 marked
//!    `strata-not-applied`); and only while the retry budget allows
//!    (`budget`).
//!
//! Owns routing, failover, hedging and the members' health; must not pace
//! load or record latencies (the lab does), nor decide replication (the
//! nodes do).

/// The crate's README: its example is compiled with the crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctest;

pub mod answer;
pub mod blocking;
pub mod budget;
mod builder;
pub mod conn;
pub mod control;
pub mod health;
pub mod hedge;
pub mod ids;
pub mod members;
pub mod ops;
pub mod session;
pub mod stream;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

pub use builder::Builder;
pub use bytes::Bytes;
pub use conn::{Answer, Conn};
pub use ops::{Options, Range};
pub use session::{Method, Reply, Request, Session};
pub use stream::{Access, Target};

use budget::{Budget, BudgetConfig};
use health::HealthConfig;
use members::Members;

/// What a client does; each behaviour can be turned off, so a report can
/// show what it buys.
#[derive(Clone, Debug)]
pub struct Config {
    /// Send each key to one of its replicas (else to the session's home
    /// node, which forwards).
    pub route: bool,
    /// Try another member when one fails (within the budget).
    pub failover: bool,
    /// Send to a stalled member (requests outstanding, nothing answered
    /// for 4 times the median latency, at least `stall_floor`) only when
    /// nothing else is left.
    pub steer: bool,
    pub stall_floor: Duration,
    /// Hedge GETs slower than this percentile of recent GETs (`None`: no
    /// hedging).
    pub hedge: Option<f64>,
    /// The shortest wait before a hedge.
    pub hedge_floor: Duration,
    /// How long one attempt may take before it counts as failed.
    pub timeout: Duration,
    pub budget: BudgetConfig,
    pub health: HealthConfig,
    /// How often the members are fetched again.
    pub refresh: Duration,
    /// The client's own credentials (`Access::default()`: none; the
    /// process's only with `Access::process()`, the lab's opt-in).
    pub access: Access,
    /// The `ack`/`from` of every request that does not say (`None`: the
    /// nodes' own defaults).
    pub replication: Option<(usize, usize)>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            route: true,
            failover: true,
            steer: true,
            stall_floor: Duration::from_millis(2),
            hedge: Some(0.95),
            hedge_floor: Duration::from_millis(1),
            timeout: Duration::from_secs(2),
            budget: BudgetConfig::default(),
            health: HealthConfig::default(),
            refresh: Duration::from_secs(5),
            access: Access::default(),
            replication: None,
        }
    }
}

/// Why the client could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// No node could be reached.
    Unreachable(String),
    /// The URL answered, but not as a Strata node.
    NotStrata(String),
    /// The members report different member lists for one layout.
    Disagree(String),
    /// A view the client could not use, or a URL or setting it could not
    /// parse.
    View(String),
    /// The node wants credentials, or refused the ones shown (`401`), in
    /// the node's words.
    Unauthorized { url: String, reason: String },
    /// The credentials are good but may not do this (`403`), in the
    /// node's words.
    Forbidden { url: String, reason: String },
    /// Every member tried failed: what each attempt came to, in order.
    /// `sent`: the last attempt's request went out whole, so an unnamed
    /// write may have been applied (a named one, `Request::new`, was
    /// applied at most once either way).
    Unavailable { tried: Vec<String>, sent: bool },
    /// The node answered the request with an error status (`400` a bad
    /// request, `413`/`414` past a limit, `503` overloaded, `504` too few
    /// replicas answered, ...), in its words.
    Status { status: u16, reason: String },
    /// One attempt failed (the request may or may not have been applied
    /// when `sent`): what a `Session` returns.
    Request { message: String, sent: bool },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Unreachable(m) => write!(f, "no node reachable: {m}"),
            Error::NotStrata(m) | Error::Disagree(m) | Error::View(m) => f.write_str(m),
            Error::Unauthorized { url, reason } => {
                write!(f, "{url} refused the request: unauthorized (401): {reason}")
            }
            Error::Forbidden { url, reason } => {
                write!(f, "{url} refused the request: forbidden (403): {reason}")
            }
            Error::Unavailable { tried, .. } => {
                write!(
                    f,
                    "no member could serve the request; tried {}",
                    tried.join("; ")
                )
            }
            Error::Status { status, reason } => write!(f, "the node answered {status}: {reason}"),
            Error::Request { message, .. } => f.write_str(message),
        }
    }
}

/// What a node said in an answer's body, as one line (white space
/// collapsed), whole: a node's reasons (its longest, the 401 of a node
/// that serves loopback only, is under 1 KiB) end with how to fix what
/// was refused, and the caller gets all of it. Only a body past
/// `conn::ERROR_BODY` (8 KiB: no node's reason is that long) is cut
/// there, and says how much more there was.
pub(crate) fn said(body: &[u8]) -> String {
    let cut = body.len().saturating_sub(conn::ERROR_BODY);
    let text = String::from_utf8_lossy(&body[..body.len() - cut]);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return "(no reason given)".into();
    }
    if cut == 0 {
        return text;
    }
    format!("{text}… ({cut} more bytes)")
}

impl std::error::Error for Error {}

/// Counters of what the client did beyond sending.
#[derive(Debug, Default)]
pub struct Stats {
    pub requests: AtomicU64,
    /// Second tries on another member.
    pub retries: AtomicU64,
    /// Failures not retried because the budget was spent.
    pub budget_refused: AtomicU64,
    /// Failures not retried because the request could have been applied.
    pub unsafe_to_retry: AtomicU64,
    pub hedges: AtomicU64,
    /// Hedges whose answer came first.
    pub hedge_wins: AtomicU64,
    pub probes: AtomicU64,
    pub refreshes: AtomicU64,
}

impl Stats {
    /// `(name, value)` of every counter, for reports.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        vec![
            ("requests", g(&self.requests)),
            ("retries", g(&self.retries)),
            ("budget_refused", g(&self.budget_refused)),
            ("unsafe_to_retry", g(&self.unsafe_to_retry)),
            ("hedges", g(&self.hedges)),
            ("hedge_wins", g(&self.hedge_wins)),
            ("probes", g(&self.probes)),
            ("refreshes", g(&self.refreshes)),
        ]
    }
}

/// A client of one cluster, shared by its sessions and its tasks (cheap to
/// clone: clones share the members, the connections and the budget).
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    /// Idle sessions for the typed calls (`ops`); `None` in the sessions
    /// the pool itself holds, so that they do not hold the pool.
    pool: Option<Arc<ops::Pool>>,
}

struct Shared {
    cfg: Config,
    origin: Instant,
    members: RwLock<Arc<Members>>,
    refreshed: RwLock<Instant>,
    refreshing: AtomicBool,
    budget: Budget,
    window: hedge::Window,
    /// The median of every answered request's latency (stall detection).
    median: hedge::Window,
    stats: Stats,
}

impl Client {
    /// Learn the cluster from `seeds` (node URLs; one is enough): every
    /// seed is asked for its view (each within `timeout`), and the members
    /// of the newest layout are used.
    pub async fn connect(seeds: &[String], cfg: Config) -> Result<Client, Error> {
        if seeds.is_empty() {
            return Err(Error::View("no node URL given".into()));
        }
        let mut views = Vec::new();
        let mut last_err = None;
        for s in seeds {
            let t = Target::parse_with(s, &cfg.access).map_err(Error::View)?;
            // A node that never answers must not hang the client.
            let fetched = tokio::time::timeout(cfg.timeout, members::fetch(&t, s))
                .await
                .unwrap_or_else(|_| {
                    Err(Error::Unreachable(format!(
                        "{s}: no cluster view within {} ms",
                        cfg.timeout.as_millis()
                    )))
                });
            match fetched {
                Ok(v) => views.push((s.clone(), v)),
                Err(
                    e @ (Error::NotStrata(_)
                    | Error::Disagree(_)
                    | Error::Unauthorized { .. }
                    | Error::Forbidden { .. }),
                ) => return Err(e),
                Err(e) => last_err = Some(e),
            }
        }
        if views.is_empty() {
            return Err(last_err.unwrap_or_else(|| Error::Unreachable("no seed".into())));
        }
        let origin = Instant::now();
        let head = members::choose(&views)?;
        let m = Members::from_view(head, None, origin, (&cfg.health, &cfg.access))?;
        Ok(Client {
            shared: Arc::new(Shared {
                window: hedge::Window::new(cfg.hedge.unwrap_or(0.95), cfg.hedge_floor),
                median: hedge::Window::new(0.5, Duration::ZERO),
                budget: Budget::new(cfg.budget),
                cfg,
                origin,
                members: RwLock::new(Arc::new(m)),
                refreshed: RwLock::new(origin),
                refreshing: AtomicBool::new(false),
                stats: Stats::default(),
            }),
            pool: Some(Arc::new(ops::Pool::default())),
        })
    }

    /// This client without its pool (what a pooled session holds).
    pub(crate) fn core(&self) -> Client {
        Client {
            shared: self.shared.clone(),
            pool: None,
        }
    }

    pub(crate) fn pool(&self) -> Option<&Arc<ops::Pool>> {
        self.pool.as_ref()
    }

    /// `connect` from outside an async runtime (on a thread of its own, so
    /// it also works from inside one).
    pub fn connect_blocking(seeds: &[String], cfg: Config) -> Result<Client, Error> {
        let seeds = seeds.to_vec();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::View(e.to_string()))?
                .block_on(Client::connect(&seeds, cfg))
        })
        .join()
        .unwrap_or_else(|_| Err(Error::View("the discovery thread panicked".into())))
    }

    pub fn config(&self) -> &Config {
        &self.shared.cfg
    }

    /// The members as last fetched.
    pub fn members(&self) -> Arc<Members> {
        self.shared
            .members
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn stats(&self) -> &Stats {
        &self.shared.stats
    }

    pub(crate) fn budget(&self) -> &Budget {
        &self.shared.budget
    }

    pub(crate) fn window(&self) -> &hedge::Window {
        &self.shared.window
    }

    pub(crate) fn median(&self) -> &hedge::Window {
        &self.shared.median
    }

    /// How long a member with requests outstanding may answer nothing
    /// before it counts as stalled.
    pub(crate) fn stall_quiet(&self) -> Duration {
        (self.shared.median.delay() * 4).max(self.shared.cfg.stall_floor)
    }

    /// Whether the members are due to be fetched again; the one caller
    /// that gets `true` must call `refresh_with`.
    pub(crate) fn take_refresh(&self) -> bool {
        let last = *self
            .shared
            .refreshed
            .read()
            .unwrap_or_else(|e| e.into_inner());
        last.elapsed() >= self.shared.cfg.refresh
            && self
                .shared
                .refreshing
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// Fetch the view from a member that is up and swap the members in.
    pub(crate) async fn refresh(&self) {
        let m = self.members();
        let mut views = Vec::new();
        for i in 0..m.len() {
            if m.health[i].is_down() {
                continue;
            }
            let r = tokio::time::timeout(
                self.shared.cfg.timeout,
                members::fetch(&m.targets[i], &m.urls[i]),
            )
            .await;
            if let Ok(Ok(v)) = r {
                views.push((m.urls[i].clone(), v));
                break;
            }
        }
        if let Some((_, v)) = views.first() {
            if v.layout.version != m.version || v.layout.version == 0 {
                if let Ok(new) = Members::from_view(
                    v,
                    Some(&m),
                    self.shared.origin,
                    (&self.shared.cfg.health, &self.shared.cfg.access),
                ) {
                    *self
                        .shared
                        .members
                        .write()
                        .unwrap_or_else(|e| e.into_inner()) = Arc::new(new);
                }
            }
        }
        self.shared.stats.refreshes.fetch_add(1, Ordering::Relaxed);
        *self
            .shared
            .refreshed
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.shared.refreshing.store(false, Ordering::Release);
    }
}
