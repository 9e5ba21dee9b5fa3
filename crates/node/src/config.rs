//! The node's configuration: every option with its default, read from the
//! command line, `STRATA_*` environment variables and a TOML file, in that
//! order of precedence. Owns parsing and validation; must not start anything.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use strata_engine::Durability;

/// `strata serve` flags. Every flag can also be set by its `STRATA_*`
/// environment variable or in the `--config` TOML file (same names, with
/// underscores: `data_dir = "/var/lib/strata"`).
#[derive(clap::Args, Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeArgs {
    /// TOML file with any of these options.
    #[arg(long, env = "STRATA_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "STRATA_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Data directory, created if missing [default: ./strata-data].
    #[arg(long, env = "STRATA_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Durability: sync, interval(MS) or none [default: sync].
    #[arg(long, env = "STRATA_DURABILITY")]
    #[serde(default, deserialize_with = "de_parse")]
    pub durability: Option<Durability>,
    /// Requests in service at once [default: 256].
    #[arg(long, env = "STRATA_MAX_IN_SERVICE")]
    pub max_in_service: Option<usize>,
    /// Admission mode: `fixed` (the limit is max-in-service) or `adaptive`
    /// (AIMD on service time, between min-in-service and max-in-service;
    /// a cut that does not lower service time is undone)
    /// [default: fixed].
    #[arg(long, env = "STRATA_ADMISSION")]
    pub admission: Option<String>,
    /// Adaptive mode: the service time to hold, in ms [default: 10].
    #[arg(long, env = "STRATA_TARGET_LATENCY_MS")]
    pub target_latency_ms: Option<u64>,
    /// Adaptive mode: the lowest limit [default: 4].
    #[arg(long, env = "STRATA_MIN_IN_SERVICE")]
    pub min_in_service: Option<usize>,
    /// Requests allowed to wait for a place in service [default: 1024].
    #[arg(long, env = "STRATA_MAX_WAITING")]
    pub max_waiting: Option<usize>,
    /// Longest wait for a place in service, in milliseconds [default: 100].
    #[arg(long, env = "STRATA_MAX_WAIT_MS")]
    pub max_wait_ms: Option<u64>,
    /// Largest value accepted, in bytes [default: 33554432 = 32 MiB].
    #[arg(long, env = "STRATA_MAX_VALUE_BYTES")]
    pub max_value_bytes: Option<usize>,
    /// Longest key accepted, in bytes [default: 16384]. At most 21,800: a
    /// key travels percent-encoded in the request's URI (a binary key's
    /// bytes take three characters each), and a URI is at most 65,534
    /// bytes long.
    #[arg(long, env = "STRATA_MAX_KEY_BYTES")]
    pub max_key_bytes: Option<usize>,
    /// Time allowed for a request's headers to arrive, in ms [default: 10000].
    #[arg(long, env = "STRATA_HEADER_TIMEOUT_MS")]
    pub header_timeout_ms: Option<u64>,
    /// Time allowed for a request's body to arrive, in ms [default: 30000].
    #[arg(long, env = "STRATA_BODY_TIMEOUT_MS")]
    pub body_timeout_ms: Option<u64>,
    /// Longest time in-flight requests get to finish at shutdown, in ms [default: 10000].
    #[arg(long, env = "STRATA_SHUTDOWN_TIMEOUT_MS")]
    pub shutdown_timeout_ms: Option<u64>,
    /// Most open connections; more wait in the kernel's backlog [default: 10000].
    #[arg(long, env = "STRATA_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Connections whose first request head has not all arrived, at most:
    /// past it, the oldest idle one of the address with the most is closed
    /// (never a newcomer; one younger than a second never) [default: 1024].
    #[arg(long, env = "STRATA_MAX_AWAITING_HEADS")]
    pub max_awaiting_heads: Option<usize>,
    /// The same, from one peer address [default: 128].
    #[arg(long, env = "STRATA_MAX_AWAITING_HEADS_PER_PEER")]
    pub max_awaiting_heads_per_peer: Option<usize>,
    /// The runtime lag (time a request that has arrived waits to be read)
    /// the node holds by limiting its client connections, in ms: past it the
    /// node stops accepting and closes connections at their next answer.
    /// 0 turns the limit off (only --max-connections applies) [default: 5].
    #[arg(long, env = "STRATA_OVERLOAD_LAG_MS")]
    pub overload_lag_ms: Option<u64>,
    /// The fewest client connections the overload limit keeps [default: 16].
    #[arg(long, env = "STRATA_MIN_CONNECTIONS")]
    pub min_connections: Option<usize>,
    /// Memtable size in bytes [default: 67108864 = 64 MiB].
    #[arg(long, env = "STRATA_MEMTABLE_BYTES")]
    pub memtable_bytes: Option<usize>,
    /// Block cache size in bytes [default: 268435456 = 256 MiB].
    #[arg(long, env = "STRATA_BLOCK_CACHE_BYTES")]
    pub block_cache_bytes: Option<usize>,
    /// How table blocks are stored, per level from level 0, comma-separated:
    /// none, lz4, zstd or zstd:LEVEL; the last serves every deeper level
    /// (`none,lz4,zstd`) [default: lz4].
    #[arg(long, env = "STRATA_COMPRESSION")]
    pub compression: Option<String>,
    /// Runtime worker threads [default: the number of cores].
    #[arg(long, env = "STRATA_WORKER_THREADS")]
    pub worker_threads: Option<usize>,
    /// How the worker threads serve connections: per-core (one runtime
    /// per thread, a connection served on one thread from accept to
    /// close) or shared (one multi-threaded runtime) [default: per-core].
    #[arg(long, env = "STRATA_RUNTIME")]
    pub runtime: Option<String>,
    /// Log level: error, warn, info, debug or trace [default: info].
    #[arg(long, env = "STRATA_LOG_LEVEL")]
    pub log_level: Option<String>,
    /// Every member's URL, comma-separated, this node's included
    /// [default: none, a cluster of one].
    #[arg(long, env = "STRATA_CLUSTER")]
    pub cluster: Option<String>,
    /// Start outside any cluster, to be added by `strata cluster join`
    /// through this member's URL. Used until the node has adopted a
    /// layout (then DATA/layout.json names the members); the data
    /// directory must be empty.
    #[arg(long, env = "STRATA_SEED", conflicts_with = "cluster")]
    pub seed: Option<String>,
    /// This node's entry in --cluster [default: http:// + the listen address].
    #[arg(long, env = "STRATA_ADVERTISE")]
    pub advertise: Option<String>,
    /// Replicas per key [default: min(3, cluster size)].
    #[arg(long, env = "STRATA_REPLICATION")]
    pub replication: Option<usize>,
    /// The secret shared by the cluster's members (at least 16 bytes).
    #[arg(long, env = "STRATA_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// A file holding the cluster secret.
    #[arg(long, env = "STRATA_CLUSTER_SECRET_FILE")]
    pub cluster_secret_file: Option<PathBuf>,
    /// Time a coordinator waits for enough replicas before it answers 504,
    /// in ms [default: 1000].
    #[arg(long, env = "STRATA_REPLICA_TIMEOUT_MS")]
    pub replica_timeout_ms: Option<u64>,
    /// Bytes of hints kept for one peer at most [default: 268435456 = 256 MiB].
    #[arg(long, env = "STRATA_HINT_MAX_BYTES")]
    pub hint_max_bytes: Option<u64>,
    /// Hints older than this many seconds are dropped (and counted)
    /// [default: 3600].
    #[arg(long, env = "STRATA_HINT_MAX_AGE_S")]
    pub hint_max_age_s: Option<u64>,
    /// Hints delivered to one peer per second at most [default: 5000].
    #[arg(long, env = "STRATA_HINT_RATE")]
    pub hint_rate: Option<u32>,
    /// A tombstone is dropped only this many seconds after its delete, and
    /// only once every member holds it or something newer; must exceed
    /// --hint-max-age-s [default: 7200].
    #[arg(long, env = "STRATA_TOMBSTONE_GRACE_S")]
    pub tombstone_grace_s: Option<u64>,
    /// Milliseconds between the tombstone reaper's passes; at least
    /// --replica-timeout-ms [default: 60000].
    #[arg(long, env = "STRATA_REAPER_INTERVAL_MS")]
    pub reaper_interval_ms: Option<u64>,
    /// Seconds between anti-entropy rounds (this node's Merkle trees
    /// compared with each other replica's, what differs exchanged); 0:
    /// only on demand, `POST /v0/cluster/repair` [default: 600].
    #[arg(long, env = "STRATA_ANTI_ENTROPY_INTERVAL_S")]
    pub anti_entropy_interval_s: Option<u64>,
    /// Bytes of records anti-entropy moves a second at most
    /// [default: 16777216 = 16 MiB].
    #[arg(long, env = "STRATA_ANTI_ENTROPY_RATE")]
    pub anti_entropy_rate: Option<u64>,
    /// Bytes of table blocks the background scrub reads and checks against
    /// their checksums a second; a damaged table is set aside and its
    /// records pulled from the replicas. 0 turns it off
    /// [default: 8388608 = 8 MiB].
    #[arg(long, env = "STRATA_SCRUB_RATE")]
    pub scrub_rate: Option<u64>,
    /// Records younger than this many ms are left out of anti-entropy
    /// (the write path and hints are still at them) [default: 5000].
    #[arg(long, env = "STRATA_ANTI_ENTROPY_SETTLE_MS")]
    pub anti_entropy_settle_ms: Option<u64>,
    /// TLS on the node's port (clients and internal traffic): its
    /// certificate chain, a PEM file. Needs --tls-key; every member's URL
    /// is then https://. Read again on SIGHUP, and when the files change
    /// (checked every 10 s) [default: none, plain HTTP].
    #[arg(long, env = "STRATA_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, a PEM file (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "STRATA_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The certificate authority this node trusts when it dials its peers
    /// (set by the global --tls-ca or STRATA_TLS_CA; `tls_ca` in the file)
    /// [default: the system's].
    #[arg(skip)]
    pub tls_ca: Option<PathBuf>,
    /// The certificate authority a client certificate must be signed by
    /// (TLS only): a client that presents one is verified in the
    /// handshake, and its subject's `OU=` is its role (read, readwrite,
    /// monitor, operator; `node` for members, whose internal connections
    /// must then present one) [default: --tls-ca when given, else no
    /// client certificates].
    #[arg(long, env = "STRATA_CLIENT_CA")]
    pub client_ca: Option<PathBuf>,
    /// Bearer tokens, one a line: `ROLE NAME SHA256-HEX` (`strata token
    /// new` makes them). Read again on SIGHUP and when the file changes.
    /// Giving it makes --client-auth default to required.
    #[arg(long, env = "STRATA_AUTH_TOKENS")]
    pub auth_tokens: Option<PathBuf>,
    /// With --auth-tokens FILE that does not exist: create it (mode 0600)
    /// with an operator token `admin` and a readwrite token `app`, printed
    /// once on stderr (the file keeps their SHA-256 only). For a first
    /// start with no step before it (the container image's default).
    #[arg(long, env = "STRATA_CREATE_TOKENS", num_args = 0..=1, default_missing_value = "true")]
    pub create_tokens: Option<bool>,
    /// Who gets data and metrics without credentials (operator endpoints
    /// always need them; docs/security.md): `loopback`: callers on this
    /// machine's loopback only, as Redis's protected mode (a node listening
    /// beyond loopback is never open to the network by accident);
    /// `required`: nobody, everything but /v0/status needs a token or a
    /// client certificate whose role allows it; `open`: anyone who
    /// reaches the port (logged as a warning when the node listens beyond
    /// loopback) [default: required with --auth-tokens, else loopback].
    #[arg(long, env = "STRATA_CLIENT_AUTH")]
    pub client_auth: Option<String>,
    /// Internal connections per peer [default: one per worker thread, at
    /// least 2].
    #[arg(long, env = "STRATA_PEER_CONNECTIONS")]
    pub peer_connections: Option<usize>,
    /// Test only: shift this node's clock by this many ms (signed).
    #[arg(
        long,
        env = "STRATA_TEST_CLOCK_OFFSET_MS",
        hide = true,
        allow_hyphen_values = true
    )]
    pub test_clock_offset_ms: Option<i64>,
    /// Test only, deliberately unsafe: last write wins on bare wall clocks
    /// (proves the consistency checker catches it).
    #[arg(
        long,
        env = "STRATA_TEST_UNSAFE_WALL_CLOCK",
        hide = true,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub test_unsafe_wall_clock: Option<bool>,
    /// Before stamping a write at `2·ack > from`, learn the newest version
    /// of the key from `ack` of its replicas and stamp past it (as the ABD
    /// register algorithm does), so that no write is ever stamped twice:
    /// keys with many concurrent writers stay linearizable
    /// (docs/consistency.md). One round trip more per write. On by
    /// default; `--versions-from-quorum=false` stamps from the clock alone.
    #[arg(long, env = "STRATA_VERSIONS_FROM_QUORUM", num_args = 0..=1, default_missing_value = "true")]
    pub versions_from_quorum: Option<bool>,
    /// Test only, a fail point: each WAL fsync of the write path takes
    /// this many ms more (a slow disk).
    #[arg(long, env = "STRATA_TEST_FSYNC_DELAY_MS", hide = true)]
    pub test_fsync_delay_ms: Option<u64>,
    /// Test only, a fail point: the thread that commits writes (the
    /// applier) spends this many µs on a CPU per write (one busy thread).
    #[arg(long, env = "STRATA_TEST_WRITE_SPIN_US", hide = true)]
    pub test_write_spin_us: Option<u64>,
    /// Test only, a fail point: a thread of the engine takes the WAL's
    /// lock 10 ms after it last let go and holds it this many ms, asleep
    /// (a held lock).
    #[arg(long, env = "STRATA_TEST_LOCK_HOLD_MS", hide = true)]
    pub test_lock_hold_ms: Option<u64>,
    /// Test only: `POST /debug/clock?jump_ms=N` (operator) moves this
    /// running node's wall clock, the one behind versions (a clock fault).
    #[arg(
        long,
        env = "STRATA_TEST_CLOCK_HOOK",
        hide = true,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub test_clock_hook: Option<bool>,
}

fn de_parse<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Durability>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    s.map(|s| s.parse().map_err(serde::de::Error::custom))
        .transpose()
}

/// The longest key `--max-key-bytes` may allow: a binary key
/// percent-encodes to three characters a byte, and with the path and the
/// other parameters it must fit the longest URI the HTTP stack parses
/// (65,534 bytes, the `http` crate's limit).
pub const MAX_KEY_BYTES: usize = 21_800;

/// The resolved configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub durability: Durability,
    pub max_in_service: usize,
    pub admission: crate::admission::Mode,
    pub max_waiting: usize,
    pub max_wait: Duration,
    pub max_value_bytes: usize,
    pub max_key_bytes: usize,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub shutdown_timeout: Duration,
    pub max_connections: usize,
    pub max_awaiting_heads: usize,
    pub max_awaiting_heads_per_peer: usize,
    /// `None`: no overload limit on connections.
    pub overload_lag: Option<Duration>,
    pub min_connections: usize,
    pub memtable_bytes: usize,
    pub block_cache_bytes: usize,
    /// Per level from level 0; the last serves deeper levels.
    pub compression: Vec<strata_engine::Compression>,
    /// Test only: added to each WAL fsync.
    pub test_fsync_delay: Duration,
    pub test_write_spin: Duration,
    pub test_lock_hold: Duration,
    /// Test only: `/debug/clock` may move the wall clock.
    pub test_clock_hook: bool,
    pub worker_threads: usize,
    pub runtime: crate::shards::Shape,
    pub log_level: String,
    pub cluster: strata_cluster::ClusterConfig,
    /// `None`: plain HTTP.
    pub tls: Option<Tls>,
    /// Who may call what.
    pub access: Arc<crate::access::Access>,
}

/// TLS on the node's port: what it shows its clients, and what it trusts
/// and offers when it dials a peer.
#[derive(Clone)]
pub struct Tls {
    pub server: Arc<strata_tls::rustls::ServerConfig>,
    /// What `server` presents, reloaded on SIGHUP or when its files change.
    pub certificate: Arc<strata_tls::Certificate>,
    pub peers: Arc<strata_tls::rustls::ClientConfig>,
    /// What `peers` trusts when `--tls-ca` names a file (reloaded with the
    /// certificate); `None` for the system's roots.
    pub trust: Option<Arc<strata_tls::Trust>>,
    /// What client certificates are checked against, if anything (the
    /// same as `trust` unless `--client-ca` names another file).
    pub clients: Option<Arc<strata_tls::Trust>>,
    /// Client certificates are verified (`--client-ca` or `--tls-ca`):
    /// members prove themselves with node certificates, on top of the
    /// cluster secret.
    pub mutual: bool,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl Config {
    /// Merge command line and environment (already in `args`, clap reads
    /// both) over the TOML file, over the defaults.
    pub fn resolve(args: &ServeArgs) -> Result<Config, String> {
        let file: ServeArgs = match &args.config {
            Some(p) => {
                let text =
                    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
                toml::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))?
            }
            None => ServeArgs::default(),
        };
        macro_rules! pick {
            ($f:ident, $d:expr) => {
                args.$f.clone().or(file.$f.clone()).unwrap_or($d)
            };
            ($f:ident) => {
                args.$f.clone().or(file.$f.clone())
            };
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut c = Config {
            listen: pick!(listen, "127.0.0.1:8080".parse().unwrap()),
            data_dir: pick!(data_dir, PathBuf::from("strata-data")),
            durability: pick!(durability, Durability::Sync),
            max_in_service: pick!(max_in_service, 256),
            admission: match pick!(admission, "fixed".to_string()).as_str() {
                "fixed" => crate::admission::Mode::Fixed,
                "adaptive" => crate::admission::Mode::Adaptive {
                    target: Duration::from_millis(pick!(target_latency_ms, 10)),
                    min: pick!(min_in_service, 4),
                },
                other => {
                    return Err(format!(
                        "admission must be fixed or adaptive, not {other:?}"
                    ))
                }
            },
            max_waiting: pick!(max_waiting, 1024),
            max_wait: Duration::from_millis(pick!(max_wait_ms, 100)),
            max_value_bytes: pick!(max_value_bytes, 32 << 20),
            max_key_bytes: pick!(max_key_bytes, 16 << 10),
            header_timeout: Duration::from_millis(pick!(header_timeout_ms, 10_000)),
            body_timeout: Duration::from_millis(pick!(body_timeout_ms, 30_000)),
            shutdown_timeout: Duration::from_millis(pick!(shutdown_timeout_ms, 10_000)),
            max_connections: pick!(max_connections, 10_000),
            max_awaiting_heads: pick!(max_awaiting_heads, 1024).max(1),
            max_awaiting_heads_per_peer: pick!(max_awaiting_heads_per_peer, 128).max(1),
            overload_lag: Some(pick!(overload_lag_ms, 5))
                .filter(|&ms| ms > 0)
                .map(Duration::from_millis),
            min_connections: pick!(min_connections, 16),
            memtable_bytes: pick!(memtable_bytes, 64 << 20),
            block_cache_bytes: pick!(block_cache_bytes, 256 << 20),
            compression: strata_engine::Compression::parse_per_level(&pick!(
                compression,
                "lz4".to_string()
            ))?,
            test_fsync_delay: Duration::from_millis(pick!(test_fsync_delay_ms, 0)),
            test_write_spin: Duration::from_micros(pick!(test_write_spin_us, 0)),
            test_lock_hold: Duration::from_millis(pick!(test_lock_hold_ms, 0)),
            test_clock_hook: pick!(test_clock_hook, false),
            worker_threads: pick!(worker_threads, cores),
            runtime: pick!(runtime, "per-core".to_string()).parse()?,
            log_level: pick!(log_level, "info".to_string()),
            cluster: strata_cluster::ClusterConfig::default(),
            tls: None,
            access: Arc::new(crate::access::Access::new(
                None,
                crate::access::ClientAuth::Open,
                None,
            )?),
        };
        let tls_files = (
            args.tls_cert.clone().or(file.tls_cert.clone()),
            args.tls_key.clone().or(file.tls_key.clone()),
        );
        c.tls = match tls_files {
            (Some(cert), Some(key)) => {
                let ca = args.tls_ca.clone().or(file.tls_ca.clone());
                // A node shows its own certificate when it dials a peer
                // that verifies client certificates.
                let certificate = strata_tls::Certificate::load(&cert, &key)?;
                let (peers, trust) =
                    strata_tls::peer_config(ca.as_deref(), Some(certificate.clone()))?;
                // Client certificates are checked against --client-ca, or
                // the CA the peers are trusted by (reloaded with it).
                let clients = match pick!(client_ca) {
                    Some(f) => Some(strata_tls::Trust::load(&f)?),
                    None => trust.clone(),
                };
                let (server, certificate) =
                    strata_tls::server_config_with(certificate, clients.clone())?;
                Some(Tls {
                    server,
                    certificate,
                    peers,
                    trust,
                    mutual: clients.is_some(),
                    clients,
                })
            }
            (None, None) => None,
            _ => return Err("--tls-cert and --tls-key go together".into()),
        };
        let scheme = if c.tls.is_some() {
            "https://"
        } else {
            "http://"
        };
        let advertise = pick!(advertise, format!("{scheme}{}", c.listen));
        let members: Vec<String> = pick!(cluster, String::new())
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let seed = args.seed.clone().or(file.seed.clone());
        if seed.is_some() && !members.is_empty() {
            return Err("--seed and --cluster exclude each other: a node joins through a seed, or starts with the cluster's list".into());
        }
        if seed.is_some() && advertise.ends_with(":0") {
            return Err(format!(
                "a joining node's peers dial its URL, and {advertise} has no port: give --listen a port, or --advertise"
            ));
        }
        for m in members
            .iter()
            .chain(std::iter::once(&advertise))
            .chain(seed.iter())
        {
            if !m.starts_with(scheme) {
                return Err(if c.tls.is_some() {
                    format!("cluster member {m:?} must be an https:// URL: this node serves TLS (--tls-cert), and so must every member")
                } else {
                    format!("cluster member {m:?} must be an http:// URL (https:// needs --tls-cert and --tls-key)")
                });
            }
        }
        let secret = match (
            args.cluster_secret.clone().or(file.cluster_secret.clone()),
            args.cluster_secret_file
                .clone()
                .or(file.cluster_secret_file.clone()),
        ) {
            (Some(s), _) => Some(strata_cluster::Secret::new(s)?),
            (None, Some(f)) => {
                let b = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
                Some(strata_cluster::Secret::new(b).map_err(|e| format!("{}: {e}", f.display()))?)
            }
            (None, None) => None,
        };
        let tokens = pick!(auth_tokens);
        if pick!(create_tokens, false) {
            let Some(f) = &tokens else {
                return Err("--create-tokens needs --auth-tokens FILE".into());
            };
            if !f.exists() {
                let made = crate::access::create_tokens_file(f)?;
                eprintln!(
                    "strata: created the tokens file {} with these tokens, shown only now (the file keeps their SHA-256):",
                    f.display()
                );
                for (role, name, token) in made {
                    eprintln!("  {role} {name}: {token}");
                }
            }
        }
        let mode = match pick!(client_auth) {
            Some(m) => m.parse()?,
            None if tokens.is_some() => crate::access::ClientAuth::Required,
            None => crate::access::ClientAuth::Loopback,
        };
        c.access = Arc::new(crate::access::Access::new(
            tokens,
            mode,
            secret.as_ref().map(|s| s.as_bytes()),
        )?);
        let defaults = strata_cluster::HintsConfig::default();
        let reaper = strata_cluster::ReaperConfig::default();
        c.cluster = strata_cluster::ClusterConfig {
            members,
            seed,
            layout_dir: Some(c.data_dir.clone()),
            advertise,
            replication: args.replication.or(file.replication),
            secret,
            timeout: Duration::from_millis(pick!(replica_timeout_ms, 1000)),
            hints: strata_cluster::HintsConfig {
                max_bytes_per_peer: pick!(hint_max_bytes, defaults.max_bytes_per_peer),
                max_age_ms: pick!(hint_max_age_s, defaults.max_age_ms / 1000) * 1000,
                rate: pick!(hint_rate, defaults.rate),
            },
            transport: strata_cluster::TransportConfig {
                // One per runtime thread: each thread's calls to a peer
                // travel on a connection served by that thread.
                pool: pick!(peer_connections, pick!(worker_threads, cores).max(2)).max(1),
                ..Default::default()
            },
            reaper: strata_cluster::ReaperConfig {
                grace: Duration::from_secs(pick!(tombstone_grace_s, reaper.grace.as_secs())),
                interval: Duration::from_millis(pick!(
                    reaper_interval_ms,
                    reaper.interval.as_millis() as u64
                )),
                ..reaper
            },
            anti_entropy: {
                let d = strata_cluster::AntiEntropyConfig::default();
                strata_cluster::AntiEntropyConfig {
                    interval: Duration::from_secs(pick!(
                        anti_entropy_interval_s,
                        d.interval.as_secs()
                    )),
                    rate: pick!(anti_entropy_rate, d.rate).max(1),
                    settle: Duration::from_millis(pick!(
                        anti_entropy_settle_ms,
                        d.settle.as_millis() as u64
                    )),
                }
            },
            scrub_rate: pick!(scrub_rate, 8 << 20),
            apply_capacity: c.max_in_service.max(1024),
            clock_offset_ms: pick!(test_clock_offset_ms, 0),
            unsafe_wall_clock: pick!(test_unsafe_wall_clock, false),
            versions_from_quorum: pick!(versions_from_quorum, true),
            hints_dir: c.data_dir.join("hints"),
            hints_durability: c.durability,
            ..Default::default()
        };
        if c.max_key_bytes > MAX_KEY_BYTES {
            return Err(format!(
                "max_key_bytes {} is more than a URI can carry: at most {MAX_KEY_BYTES} (a key travels percent-encoded in the URI, three characters a byte at worst, and a URI is at most 65,534 bytes)",
                c.max_key_bytes
            ));
        }
        if c.max_in_service == 0 {
            return Err("max_in_service must be at least 1".into());
        }
        if c.worker_threads == 0 {
            return Err("worker_threads must be at least 1".into());
        }
        if !["error", "warn", "info", "debug", "trace"].contains(&c.log_level.as_str()) {
            return Err(format!("unknown log level {:?}", c.log_level));
        }
        Ok(c)
    }

    pub fn engine_options(&self) -> strata_engine::Options {
        strata_engine::Options {
            durability: self.durability,
            memtable_size: self.memtable_bytes,
            block_cache_size: self.block_cache_bytes,
            compression: self.compression.clone(),
            test_sync_delay: self.test_fsync_delay,
            test_write_spin: self.test_write_spin,
            test_lock_hold: self.test_lock_hold,
            ..strata_engine::Options::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_beats_file_beats_defaults() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("strata.toml");
        std::fs::write(
            &f,
            "listen = \"127.0.0.1:9000\"\nmax_waiting = 7\ndurability = \"interval(20)\"\n",
        )
        .unwrap();
        let args = ServeArgs {
            config: Some(f.clone()),
            max_waiting: Some(9),
            ..Default::default()
        };
        let c = Config::resolve(&args).unwrap();
        assert_eq!(c.listen, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(c.max_waiting, 9);
        assert_eq!(c.durability, Durability::Interval(20));
        assert_eq!(c.max_in_service, 256);
        std::fs::write(&f, "no_such_option = 1\n").unwrap();
        assert!(Config::resolve(&args)
            .unwrap_err()
            .contains("no_such_option"));
        std::fs::write(&f, "durability = \"fast\"\n").unwrap();
        assert!(Config::resolve(&args).is_err());
    }

    #[test]
    fn compression_is_lz4_unless_asked_otherwise() {
        use strata_engine::Compression;
        let c = Config::resolve(&ServeArgs::default()).unwrap();
        assert_eq!(c.engine_options().compression, [Compression::Lz4]);
        let args = ServeArgs {
            compression: Some("none,lz4,zstd:6".into()),
            ..Default::default()
        };
        let c = Config::resolve(&args).unwrap();
        assert_eq!(
            c.engine_options().compression,
            [Compression::None, Compression::Lz4, Compression::Zstd(6)]
        );
        let args = ServeArgs {
            compression: Some("snappy".into()),
            ..Default::default()
        };
        let e = Config::resolve(&args).unwrap_err();
        assert!(e.contains("snappy"), "{e}");
    }

    #[test]
    fn the_runtime_is_per_core_unless_asked_otherwise() {
        use crate::shards::Shape;
        let c = Config::resolve(&ServeArgs::default()).unwrap();
        assert_eq!(c.runtime, Shape::PerCore);
        let shared = ServeArgs {
            runtime: Some("shared".into()),
            ..Default::default()
        };
        assert_eq!(Config::resolve(&shared).unwrap().runtime, Shape::Shared);
        let bad = ServeArgs {
            runtime: Some("fast".into()),
            ..Default::default()
        };
        let e = Config::resolve(&bad).unwrap_err();
        assert!(e.contains("per-core or shared"), "{e}");
    }
}
