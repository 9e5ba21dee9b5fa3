//! The checked workload: a closed-loop pool of clients that writes `set/…`
//! keys once each, overwrites its own `reg/…` registers with increasing
//! sequence numbers and reads anyone's registers, each operation through
//! the client library's session or straight to a node picked at random,
//! recording everything into a history; then the
//! final pass, which reads every key at `ack=from` (retrying while the
//! cluster heals); then the checker's report. Runs on a thread of its own
//! (`spawn`) so that a test or a campaign injects faults meanwhile. Also
//! the `clap` arguments for a command. Owns the workload, its timing and
//! the final pass; must not judge the history (that is `check::checker`) nor
//! inject faults. One client's operations are `client.rs`'s.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;

mod client;

use client::{final_phase, main_phase, Client, Ctx};

use super::checker::{check, Quorum, Report};
use super::history::{register_key, set_key, shared_key, History, Recorder};
use strata_client::conn::Target;
use strata_client::session::Session;

/// The share of each operation (weights; they need not add up to 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    /// Writes of a new `set/…` key each.
    pub set_writes: f64,
    /// Overwrites of one of the client's own registers.
    pub register_writes: f64,
    /// Reads of any client's register.
    pub register_reads: f64,
    /// Writes, reads and deletes of the keys every client shares
    /// (`lin/…`, for the linearizability check).
    pub shared_writes: f64,
    pub shared_reads: f64,
    pub shared_deletes: f64,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            set_writes: 50.0,
            register_writes: 25.0,
            register_reads: 25.0,
            shared_writes: 0.0,
            shared_reads: 0.0,
            shared_deletes: 0.0,
        }
    }
}

impl Mix {
    /// The linearizability check's: only the shared keys, 40 % writes, 50 %
    /// reads, 10 % deletes.
    pub fn linearizable() -> Mix {
        Mix {
            set_writes: 0.0,
            register_writes: 0.0,
            register_reads: 0.0,
            shared_writes: 40.0,
            shared_reads: 50.0,
            shared_deletes: 10.0,
        }
    }

    /// The default mix with the shared keys beside it (the campaign's and
    /// `--check --linearizable`'s): set writes still pace a run.
    pub fn with_shared() -> Mix {
        Mix {
            set_writes: 40.0,
            register_writes: 15.0,
            register_reads: 15.0,
            shared_writes: 12.0,
            shared_reads: 15.0,
            shared_deletes: 3.0,
        }
    }

    /// `SET,REGWRITE,REGREAD[,PUT,GET,DELETE]` weights, e.g. `50,25,25` or
    /// `0,0,0,40,50,10`.
    pub fn parse(s: &str) -> Result<Mix, String> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let (a, b, c, shared) = match parts[..] {
            [a, b, c] => (a, b, c, None),
            [a, b, c, d, e, f] => (a, b, c, Some((d, e, f))),
            _ => {
                return Err(format!(
                    "{s}: give three weights: set writes, register writes, register reads (e.g. 50,25,25), and three more for the shared keys' writes, reads and deletes if wanted (e.g. 0,0,0,40,50,10)"
                ))
            }
        };
        let w = |p: &str| {
            p.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("{p}: not a weight (a number >= 0)"))
        };
        let (d, e, f) = shared.unwrap_or(("0", "0", "0"));
        let m = Mix {
            set_writes: w(a)?,
            register_writes: w(b)?,
            register_reads: w(c)?,
            shared_writes: w(d)?,
            shared_reads: w(e)?,
            shared_deletes: w(f)?,
        };
        m.validate()?;
        Ok(m)
    }

    fn total(&self) -> f64 {
        self.set_writes
            + self.register_writes
            + self.register_reads
            + self.shared_writes
            + self.shared_reads
            + self.shared_deletes
    }

    /// Whether the shared keys are used.
    pub fn shared(&self) -> bool {
        self.shared_writes + self.shared_reads + self.shared_deletes > 0.0
    }

    fn validate(&self) -> Result<(), String> {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        if ![
            self.set_writes,
            self.register_writes,
            self.register_reads,
            self.shared_writes,
            self.shared_reads,
            self.shared_deletes,
        ]
        .into_iter()
        .all(ok)
            || self.total() <= 0.0
        {
            return Err("the mix needs weights >= 0, at least one above 0".into());
        }
        Ok(())
    }
}

/// A checked run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Base URLs of the nodes (`http://host:port`); each operation goes to
    /// one picked at random.
    pub urls: Vec<String>,
    /// Tag of this run's keys (`set/<run>/...`), so that values left by
    /// earlier runs on the same nodes are not taken for this run's.
    pub run: String,
    pub clients: u32,
    /// Client `c`'s random stream is seeded from `seed` and `c`.
    pub seed: u64,
    /// The main phase ends after this long, or ...
    pub duration: Duration,
    /// ... once this many `set/…` writes were acknowledged, if given.
    pub target_writes: Option<u64>,
    pub mix: Mix,
    /// Registers each client owns (`reg/<client>/0..n`).
    pub registers_per_client: u32,
    /// Keys every client shares (`lin/<run>/0..n`), when the mix uses
    /// them.
    pub shared_keys: u32,
    /// `set/…` values are padded to this size (at least `<client>:<n>`).
    pub value_size: usize,
    /// `ack`/`from` of reads and writes (`None`: the server's default).
    /// The final pass reads at `ack=from`.
    pub quorum: Quorum,
    /// A request not answered within this is abandoned (its connection
    /// dropped) and its outcome is unknown.
    pub timeout: Duration,
    /// The final pass tries each key this many times, waiting
    /// `final_backoff` (doubling, at most 1 s) in between...
    pub final_attempts: u32,
    pub final_backoff: Duration,
    /// ... and gives up on keys not read by then (they count as not
    /// verified).
    pub final_deadline: Duration,
    /// Each client starts an operation at most this often in the main
    /// phase (`None`: as soon as the last was answered). A long run needs
    /// it: the history is kept in memory and every `set/…` key is read
    /// back at the end.
    pub pace: Option<Duration>,
    /// Called on the run's thread after the main phase and before the
    /// final pass, with the main phase's history: a campaign looks at the
    /// nodes' own stores here, before the final reads repair anything.
    pub between_phases: Option<BetweenPhases>,
    /// The client library the operations go through (its members are then
    /// the nodes; each client has a session that routes, fails over and
    /// hedges as an application's would), or `None`: each operation
    /// straight to the node picked.
    pub client: Option<Smart>,
}

/// The client library, for `Config` (which is printed with `{:?}`).
#[derive(Clone)]
pub struct Smart(pub strata_client::Client);

impl std::fmt::Debug for Smart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Smart(..)")
    }
}

/// A hook run between the main phase and the final pass.
#[derive(Clone)]
pub struct BetweenPhases(pub Arc<dyn Fn(&History) + Send + Sync>);

impl std::fmt::Debug for BetweenPhases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BetweenPhases(..)")
    }
}

impl Config {
    /// Defaults: 16 clients, 10 s, the mix 50/25/25, 4 registers per
    /// client, the server's `ack`/`from`, 5 s timeout.
    pub fn new(urls: Vec<String>) -> Config {
        Config {
            urls,
            run: super::history::run_tag(),
            clients: 16,
            seed: 1,
            duration: Duration::from_secs(10),
            target_writes: None,
            mix: Mix::default(),
            registers_per_client: 4,
            shared_keys: 8,
            value_size: 0,
            quorum: Quorum::default(),
            timeout: Duration::from_secs(5),
            final_attempts: 10,
            final_backoff: Duration::from_millis(100),
            final_deadline: Duration::from_secs(60),
            pace: None,
            between_phases: None,
            client: None,
        }
    }

    /// URLs from a comma-separated list.
    pub fn parse_urls(list: &str) -> Vec<String> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.trim_end_matches('/').to_string())
            .collect()
    }

    /// Check the configuration; the nodes' targets on success.
    pub fn validate(&self) -> Result<Vec<Target>, String> {
        if self.urls.is_empty() {
            return Err("no node URL".into());
        }
        if self.clients == 0 {
            return Err("at least one client".into());
        }
        self.mix.validate()?;
        if self.registers_per_client == 0
            && self.mix.register_writes + self.mix.register_reads > 0.0
        {
            return Err("register operations need at least one register per client".into());
        }
        if self.shared_keys == 0 && self.mix.shared() {
            return Err("operations on shared keys need at least one shared key".into());
        }
        if self.timeout.is_zero() {
            return Err("the request timeout must be above zero".into());
        }
        let q = self.quorum;
        match q.from {
            None if q.ack_write.is_some() || q.ack_read.is_some() => {
                return Err(
                    "give from with ack: the final reads must ask every replica (ack=from)".into(),
                )
            }
            None => {}
            Some(f) => {
                for a in [q.ack_write, q.ack_read].into_iter().flatten() {
                    if a == 0 || a > f {
                        return Err(format!("ack {a} with from {f}: need 1 <= ack <= from"));
                    }
                }
                if f == 0 {
                    return Err("from must be at least 1".into());
                }
            }
        }
        self.urls.iter().map(|u| Target::parse(u)).collect()
    }
}

/// What a checked run produced.
pub struct Checked {
    pub history: History,
    pub report: Report,
    /// The main phase, and the whole run with the final pass.
    pub main: Duration,
    pub total: Duration,
}

/// Live counts, readable while the run goes on.
#[derive(Debug, Default)]
pub struct Progress {
    ops: AtomicU64,
    acknowledged: AtomicU64,
    final_pass: AtomicBool,
    stop: AtomicBool,
}

impl Progress {
    /// Operations completed so far.
    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    /// `set/…` writes acknowledged so far.
    pub fn acknowledged(&self) -> u64 {
        self.acknowledged.load(Ordering::Relaxed)
    }

    /// The main phase is over and the final reads have begun.
    pub fn in_final_pass(&self) -> bool {
        self.final_pass.load(Ordering::Relaxed)
    }

    /// End the main phase now (the final pass follows).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A run going on in a thread of its own.
pub struct Running {
    progress: Arc<Progress>,
    thread: JoinHandle<Result<Checked, String>>,
    start: Instant,
}

impl Running {
    /// The instant the history's times count from.
    pub fn start(&self) -> Instant {
        self.start
    }

    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// End the main phase now; `join` then waits for the final pass.
    pub fn stop(&self) {
        self.progress.stop();
    }

    /// Block until `f` holds of the progress, the run reaches its final
    /// pass, or `limit` passes; whether `f` held. For tests: "wait for 500
    /// acknowledged writes, then kill a node".
    pub fn wait_for(&self, limit: Duration, f: impl Fn(&Progress) -> bool) -> bool {
        let until = Instant::now() + limit;
        loop {
            if f(&self.progress) {
                return true;
            }
            if self.progress.in_final_pass() || self.thread.is_finished() || Instant::now() >= until
            {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Wait for the end and the report.
    pub fn join(self) -> Result<Checked, String> {
        self.thread
            .join()
            .map_err(|_| "the checked run panicked".to_string())?
    }
}

/// Start a run on a thread of its own; faults may be injected meanwhile.
pub fn spawn(cfg: Config) -> Result<Running, String> {
    let targets = cfg.validate()?;
    let progress = Arc::new(Progress::default());
    let p = progress.clone();
    let start = Instant::now();
    let thread = std::thread::Builder::new()
        .name("strata-check".into())
        .spawn(move || execute(cfg, targets, p, start))
        .map_err(|e| e.to_string())?;
    Ok(Running {
        progress,
        thread,
        start,
    })
}

/// Run on the calling thread until the end.
pub fn run(cfg: &Config) -> Result<Checked, String> {
    let targets = cfg.validate()?;
    execute(cfg.clone(), targets, Arc::default(), Instant::now())
}

fn execute(
    cfg: Config,
    targets: Vec<Target>,
    progress: Arc<Progress>,
    start: Instant,
) -> Result<Checked, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    let recorder = Recorder::starting_at(start);
    let ctx = Rc::new(Ctx {
        nodes: cfg.urls.iter().map(|u| Arc::from(u.as_str())).collect(),
        targets,
        progress: progress.clone(),
        deadline: start + cfg.duration,
        cfg: cfg.clone(),
    });
    let (main, clients) = local.block_on(&rt, async {
        let mut tasks = Vec::new();
        for id in 0..cfg.clients {
            let c = Client {
                id,
                log: recorder.client(id),
                rng: SmallRng::seed_from_u64(
                    cfg.seed ^ (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                ),
                conns: (0..cfg.urls.len()).map(|_| None).collect(),
                session: cfg
                    .client
                    .as_ref()
                    .map(|Smart(c)| Session::new(c.clone(), id as usize, id as usize)),
                path: String::with_capacity(128),
                body: Vec::new(),
                value: Vec::new(),
                set_written: 0,
                seq: 0,
            };
            tasks.push(tokio::task::spawn_local(main_phase(c, ctx.clone())));
        }
        let mut clients = Vec::new();
        for t in tasks {
            clients.push(t.await.map_err(|e| e.to_string())?);
        }
        Ok::<_, String>((start.elapsed(), clients))
    })?;
    progress.final_pass.store(true, Ordering::Relaxed);
    if let Some(BetweenPhases(hook)) = &cfg.between_phases {
        hook(&History::merge(
            clients.iter().map(|c| c.log.ops().to_vec()),
        ));
    }

    // Every key any client may have written, in a queue the clients share.
    let mut keys = VecDeque::new();
    for c in &clients {
        for n in 0..c.set_written {
            keys.push_back(set_key(&cfg.run, c.id, n).into_bytes());
        }
    }
    if cfg.mix.register_writes + cfg.mix.register_reads > 0.0 {
        for id in 0..cfg.clients {
            for i in 0..cfg.registers_per_client {
                keys.push_back(register_key(&cfg.run, id, i).into_bytes());
            }
        }
    }
    if cfg.mix.shared() {
        for i in 0..cfg.shared_keys {
            keys.push_back(shared_key(&cfg.run, i).into_bytes());
        }
    }
    let keys = Rc::new(RefCell::new(keys));
    let final_deadline = Instant::now() + cfg.final_deadline;
    local.block_on(&rt, async {
        let mut tasks = Vec::new();
        for c in clients {
            tasks.push(tokio::task::spawn_local(final_phase(
                c,
                ctx.clone(),
                keys.clone(),
                final_deadline,
            )));
        }
        for t in tasks {
            t.await.map_err(|e| e.to_string())?;
        }
        Ok::<_, String>(())
    })?;
    let total = start.elapsed();
    drop(ctx);
    let history = recorder.history();
    let report = check(&history, cfg.quorum);
    Ok(Checked {
        history,
        report,
        main,
        total,
    })
}

/// How long a client waits after a request that got no answer.
#[cfg(test)]
mod tests {
    use super::*;
    use strata_api::query::encode_into;

    #[test]
    fn keys_are_percent_encoded() {
        let mut s = String::new();
        encode_into(&mut s, b"set/1/2 x\xff~");
        assert_eq!(s, "set%2F1%2F2%20x%FF~");
    }

    #[test]
    fn mixes_parse() {
        assert_eq!(Mix::parse("50,25,25").unwrap(), Mix::default());
        assert_eq!(
            Mix::parse("1, 0, 0").unwrap(),
            Mix {
                set_writes: 1.0,
                register_writes: 0.0,
                register_reads: 0.0,
                shared_writes: 0.0,
                shared_reads: 0.0,
                shared_deletes: 0.0,
            }
        );
        assert_eq!(Mix::parse("0,0,0,40,50,10").unwrap(), Mix::linearizable());
        assert!(Mix::parse("0,0,0,0,0,0").is_err());
        assert!(Mix::parse("1,2").is_err());
        assert!(Mix::parse("0,0,0").is_err());
        assert!(Mix::parse("-1,2,2").is_err());
    }

    #[test]
    fn configs_are_validated() {
        let ok = Config::new(vec!["http://127.0.0.1:1".into()]);
        assert!(ok.validate().is_ok());
        let mut c = ok.clone();
        c.quorum.ack_write = Some(1);
        assert!(c.validate().unwrap_err().contains("give from"));
        c.quorum.from = Some(3);
        assert!(c.validate().is_ok());
        c.quorum.ack_read = Some(4);
        assert!(c.validate().unwrap_err().contains("ack 4 with from 3"));
        let mut c = ok.clone();
        c.urls.clear();
        assert!(c.validate().is_err());
        let mut c = ok;
        c.urls = vec!["https://x".into()];
        assert!(c.validate().is_err());
    }

    #[test]
    fn urls_parse() {
        assert_eq!(
            Config::parse_urls("http://a:1/, http://b:2,"),
            vec!["http://a:1".to_string(), "http://b:2".to_string()]
        );
    }
}
