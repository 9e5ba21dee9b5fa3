//! Workload generators for the load lab: what each request does (operation,
//! key, value size), never when it is sent. A `Workload` is parsed once (a
//! built-in name or a TOML file) and hands each worker (connection or
//! closed-loop client) its own `Generator`, seeded from the run's seed and
//! the worker's index (lesson 5) and sharing only what must be shared (the
//! insert counter, the sequential cursor). Must not pace requests, speak
//! HTTP or keep results: the driver (`load::driver`) does.
//!
//! See `docs/workloads.md` for every built-in workload and the TOML format.

pub mod counter;
pub mod highload;
pub mod keys;
pub mod libri;
pub mod mix;
pub mod spec;
pub mod values;
pub mod ycsb;
pub mod zipfian;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::load::segment::Segment;
pub use counter::KeyCounter;
pub use libri::libri_rate_from_uploads_per_day;

/// One operation to send. Keys are strings (the driver percent-encodes
/// them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Get {
        key: String,
    },
    Put {
        key: String,
        value_len: usize,
    },
    Delete {
        key: String,
    },
    /// GET /v0/entities?start=..&end=.. (end exclusive); `limit_hint` =
    /// the expected number of records.
    Range {
        start: String,
        end: String,
        limit_hint: usize,
    },
    /// YCSB F: GET then PUT of the same key, timed as one operation.
    ReadModifyWrite {
        key: String,
        value_len: usize,
    },
}

impl Op {
    /// The per-operation histogram name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Get { .. } => "get",
            Op::Put { .. } => "put",
            Op::Delete { .. } => "delete",
            Op::Range { .. } => "range",
            Op::ReadModifyWrite { .. } => "rmw",
        }
    }

    /// HTTP requests this operation sends.
    pub fn requests(&self) -> u64 {
        match self {
            Op::ReadModifyWrite { .. } => 2,
            _ => 1,
        }
    }

    /// The key (a range's start key).
    pub fn key(&self) -> &str {
        match self {
            Op::Get { key }
            | Op::Put { key, .. }
            | Op::Delete { key }
            | Op::ReadModifyWrite { key, .. } => key,
            Op::Range { start, .. } => start,
        }
    }
}

/// The next operation and, for counting distinct keys, its key's index in
/// the workload's key space (for unbounded key spaces, a 64-bit id or hash).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Next {
    pub op: Op,
    pub key_index: Option<u64>,
}

/// A stream of operations for one worker (connection or closed-loop client).
pub trait Generator: Send {
    /// The next operation, given the time since the run started (libri
    /// schedules reads 2–10 s after uploads).
    fn next(&mut self, now: Duration) -> Next;
}

#[derive(Clone, Debug)]
enum Kind {
    Kv(Arc<mix::KvSpec>),
    Libri(Arc<libri::LibriSpec>),
    HighloadUpsert,
    HighloadGet { max_id: u64 },
}

/// A parsed workload, built in or from a TOML file; cheap to clone and
/// share across workers (the shared state sits in `Arc`s inside).
#[derive(Clone, Debug)]
pub struct Workload {
    kind: Kind,
    /// The generator's share of the run (`load::segment`).
    segment: Segment,
}

/// The random stream of worker `index` of a run seeded with `seed`: the
/// same derivation as the driver's (seed ^ (index + 1) × golden ratio),
/// so workers differ and a (seed, index) pair always repeats its stream.
pub fn worker_rng(seed: u64, index: usize) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

impl Workload {
    /// A built-in workload (`spec::BUILTIN_NAMES`). `keys` is the key space
    /// (YCSB's record count; highload-get's largest id); `value_size` is
    /// used by `put`, `get` and `mixed` (YCSB records are 1000 B, libri and
    /// highload draw their own sizes).
    pub fn builtin(name: &str, keys: u64, value_size: usize) -> Result<Workload, String> {
        let kv = spec::simple_kv(name, keys, value_size).or_else(|| ycsb::params(name, keys));
        let kind = if let Some(p) = kv {
            Kind::Kv(Arc::new(mix::KvSpec::new(p)?))
        } else {
            match name {
                "libri" => Kind::Libri(Arc::new(libri::LibriSpec::default_spec())),
                "highload-upsert" => Kind::HighloadUpsert,
                "highload-get" => Kind::HighloadGet { max_id: keys },
                _ => {
                    return Err(format!(
                        "unknown workload {name:?}: expected one of {} or a .toml file",
                        spec::BUILTIN_NAMES.join(", ")
                    ))
                }
            }
        };
        Ok(Workload {
            kind,
            segment: Segment::default(),
        })
    }

    pub fn from_toml_file(path: &Path) -> Result<Workload, String> {
        let s = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Workload::from_toml_str(&s).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn from_toml_str(s: &str) -> Result<Workload, String> {
        let p = spec::parse_toml(s)?;
        Ok(Workload {
            kind: Kind::Kv(Arc::new(mix::KvSpec::new(p)?)),
            segment: Segment::default(),
        })
    }

    /// This workload as `segment`'s share of a run cut in `segment.count`:
    /// its inserts and sequential steps every `count`-th of the run's, its
    /// preload every `count`-th record. Call before sharing it.
    pub fn with_segment(mut self, segment: Segment) -> Result<Workload, String> {
        if let Kind::Kv(s) = &mut self.kind {
            Arc::get_mut(s)
                .ok_or("a workload's segment is set before it is shared")?
                .space
                .segment = segment;
        }
        self.segment = segment;
        Ok(self)
    }

    pub fn segment(&self) -> Segment {
        self.segment
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        let whole = self.describe_whole();
        if self.segment.is_whole() {
            whole
        } else {
            format!("{whole} (segment {})", self.segment)
        }
    }

    fn describe_whole(&self) -> String {
        match &self.kind {
            Kind::Kv(s) => s.describe(),
            Kind::Libri(s) => s.describe(),
            Kind::HighloadUpsert => format!(
                "highload-upsert: PUT random [a-z]{{{min},{max}}} keys, values {min}-{max} B (seed 002 upsertrand.lua)",
                min = highload::MIN_LEN,
                max = highload::MAX_LEN
            ),
            Kind::HighloadGet { max_id } => format!(
                "highload-get: GET uniform decimal ids 0..={max_id} (seed 002 getrand.lua)"
            ),
        }
    }

    /// HTTP requests per generator operation on average (a read-modify-write
    /// is 2; every other operation, libri's included, is 1).
    pub fn requests_per_op(&self) -> f64 {
        match &self.kind {
            Kind::Kv(s) => s.requests_per_op(),
            _ => 1.0,
        }
    }

    /// The generator of worker `index`, seeded from `seed` and `index`.
    pub fn generator(&self, index: usize, seed: u64) -> Box<dyn Generator> {
        let rng = worker_rng(seed, index);
        match &self.kind {
            Kind::Kv(s) => Box::new(mix::KvGenerator::new(s.clone(), rng)),
            Kind::Libri(s) => Box::new(libri::LibriGenerator::new((**s).clone(), rng)),
            Kind::HighloadUpsert => Box::new(highload::UpsertGenerator::new(rng)),
            Kind::HighloadGet { max_id } => Box::new(highload::GetGenerator::new(rng, *max_id)),
        }
    }

    /// Size of the key space for distinct-key counting (None if unbounded:
    /// workloads that insert, random-string or random-id keys).
    pub fn key_space(&self) -> Option<u64> {
        match &self.kind {
            Kind::Kv(s) => s.key_space(),
            Kind::HighloadGet { max_id } => Some(max_id.saturating_add(1)),
            _ => None,
        }
    }

    /// Keys to write before the run (YCSB's load phase; the records GETs
    /// should find), each with a value length; empty when none are needed.
    /// A share of a run writes every `count`-th of them, with the sizes the
    /// whole run's preload gives them.
    pub fn preload(&self) -> Box<dyn Iterator<Item = (String, usize)> + Send> {
        let all: Box<dyn Iterator<Item = (String, usize)> + Send> = match &self.kind {
            Kind::Kv(s) => Box::new(mix::KvPreload::new(s.clone())),
            Kind::HighloadGet { max_id } => Box::new(highload::GetPreload::new(*max_id)),
            _ => Box::new(std::iter::empty()),
        };
        if self.segment.is_whole() {
            return all;
        }
        let seg = self.segment;
        Box::new(
            all.enumerate()
                .filter(move |(i, _)| seg.owns(*i as u64))
                .map(|(_, kv)| kv),
        )
    }
}
