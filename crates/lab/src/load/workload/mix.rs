//! Key-value mixes: a ratio of get / put / insert / delete / range /
//! read-modify-write operations over one key space, with a key chooser, a
//! value size and a range length. The built-ins `put`, `get`, `mixed`, the
//! YCSB core workloads and TOML mixes are all this. Owns the choice of the
//! next operation; must not parse files nor know HTTP.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::Rng;

use super::keys::{KeyChooser, KeyDist, KeySpace};
use super::values::ValueSize;
use super::{Generator, Next, Op};

/// Relative weights of the operations (need not sum to 1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ratios {
    pub get: f64,
    /// Overwrite an existing key (YCSB's update).
    pub put: f64,
    /// Write the next new key (YCSB's insert), growing the key space.
    pub insert: f64,
    pub delete: f64,
    /// A range read from a chosen key (YCSB's scan).
    pub range: f64,
    /// A get then a put of the same key (YCSB's read-modify-write).
    pub rmw: f64,
}

impl Ratios {
    fn as_array(&self) -> [f64; 6] {
        [
            self.get,
            self.put,
            self.insert,
            self.delete,
            self.range,
            self.rmw,
        ]
    }
    const NAMES: [&'static str; 6] = ["get", "put", "insert", "delete", "range", "rmw"];
}

/// How many records a range op asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RangeLen {
    Fixed(u64),
    /// Uniform over `[min, max]`, both inclusive (YCSB's scan length).
    Uniform {
        min: u64,
        max: u64,
    },
}

impl RangeLen {
    #[inline]
    fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        match *self {
            RangeLen::Fixed(n) => n,
            RangeLen::Uniform { min, max } => rng.random_range(min..=max),
        }
    }
    fn describe(&self) -> String {
        match self {
            RangeLen::Fixed(n) => format!("{n}"),
            RangeLen::Uniform { min, max } => format!("uniform({min}..={max})"),
        }
    }
}

/// A complete key-value mix, shared (in an `Arc`) by all its generators.
#[derive(Debug)]
pub struct KvSpec {
    pub name: String,
    pub ratios: Ratios,
    /// Cumulative normalized ratios, in `Ratios::NAMES` order.
    cumulative: [f64; 6],
    pub key: KeyDist,
    chooser: KeyChooser,
    pub space: KeySpace,
    pub value: ValueSize,
    pub range: RangeLen,
    /// Whether `preload` writes the records before the run.
    pub preload: bool,
}

/// Everything a mix is made of, before validation.
#[derive(Clone, Debug)]
pub struct KvParams {
    pub name: String,
    pub ratios: Ratios,
    pub key: KeyDist,
    pub records: u64,
    pub value: ValueSize,
    pub range: RangeLen,
    pub key_prefix: String,
    pub preload: bool,
}

impl KvSpec {
    pub fn new(p: KvParams) -> Result<KvSpec, String> {
        let arr = p.ratios.as_array();
        for (w, name) in arr.iter().zip(Ratios::NAMES) {
            if !(w.is_finite() && *w >= 0.0) {
                return Err(format!(
                    "mix: ratio `{name}` must be a non-negative number, got {w}"
                ));
            }
        }
        let total: f64 = arr.iter().sum();
        if total <= 0.0 {
            return Err(format!(
                "mix: the ratios ({}) must sum to more than 0",
                Ratios::NAMES.join(", ")
            ));
        }
        if p.records == 0 {
            return Err("keys: the key space must hold at least 1 key".into());
        }
        if let RangeLen::Uniform { min, max } = p.range {
            if min > max {
                return Err(format!("range: min {min} > max {max}"));
            }
        }
        if let KeyDist::Zipfian { theta, .. } | KeyDist::Latest { theta } = p.key {
            super::zipfian::check_theta(theta)?;
        }
        let mut cumulative = [0.0; 6];
        let mut acc = 0.0;
        for (c, w) in cumulative.iter_mut().zip(arr) {
            acc += w / total;
            *c = acc;
        }
        cumulative[5] = 1.0;
        Ok(KvSpec {
            chooser: KeyChooser::new(&p.key, p.records),
            space: KeySpace::new(p.records, p.ratios.insert > 0.0, p.key_prefix),
            name: p.name,
            ratios: p.ratios,
            cumulative,
            key: p.key,
            value: p.value,
            range: p.range,
            preload: p.preload,
        })
    }

    fn fraction(&self, i: usize) -> f64 {
        self.cumulative[i] - if i == 0 { 0.0 } else { self.cumulative[i - 1] }
    }

    pub fn requests_per_op(&self) -> f64 {
        1.0 + self.fraction(5)
    }

    /// None when inserts make the key space grow without a bound.
    pub fn key_space(&self) -> Option<u64> {
        match self.space.inserts {
            Some(_) => None,
            None => Some(self.space.records),
        }
    }

    pub fn describe(&self) -> String {
        let ops: Vec<String> = Ratios::NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.fraction(*i) > 0.0)
            .map(|(i, n)| format!("{n} {:.1}%", self.fraction(i) * 100.0))
            .collect();
        let mut s = format!(
            "{}: {}; {} keys{}, {}; values {}",
            self.name,
            ops.join(" / "),
            self.space.records,
            if self.space.inserts.is_some() {
                " (+ inserts)"
            } else {
                ""
            },
            self.key.describe(),
            self.value.describe(),
        );
        if self.ratios.range > 0.0 {
            s += &format!("; range length {}", self.range.describe());
        }
        s
    }
}

/// One worker's stream of a mix.
pub struct KvGenerator {
    spec: Arc<KvSpec>,
    rng: SmallRng,
    chooser: KeyChooser,
}

impl KvGenerator {
    pub fn new(spec: Arc<KvSpec>, rng: SmallRng) -> KvGenerator {
        KvGenerator {
            chooser: spec.chooser.clone(),
            spec,
            rng,
        }
    }
}

impl Generator for KvGenerator {
    #[inline]
    fn next(&mut self, _now: Duration) -> Next {
        let spec = &*self.spec;
        let u: f64 = self.rng.random();
        let which = spec.cumulative.iter().position(|c| u < *c).unwrap_or(5);
        let space = &spec.space;
        let index = if which == 2 {
            space.next_insert()
        } else {
            self.chooser.choose(&mut self.rng, space)
        };
        let key = space.key(index);
        let op = match which {
            0 => Op::Get { key },
            1 | 2 => Op::Put {
                key,
                value_len: spec.value.sample(&mut self.rng),
            },
            3 => Op::Delete { key },
            4 => {
                let len = spec.range.sample(&mut self.rng).max(1);
                let end = space.key(index.saturating_add(len));
                let limit_hint = len.min(space.current().saturating_sub(index)) as usize;
                Op::Range {
                    start: key,
                    end,
                    limit_hint,
                }
            }
            _ => Op::ReadModifyWrite {
                key,
                value_len: spec.value.sample(&mut self.rng),
            },
        };
        Next {
            op,
            key_index: Some(index),
        }
    }
}

/// The records of a mix with a value size each, drawn from a fixed seed so
/// every preload of the same workload writes the same sizes.
pub struct KvPreload {
    spec: Arc<KvSpec>,
    next: u64,
    rng: SmallRng,
}

impl KvPreload {
    pub fn new(spec: Arc<KvSpec>) -> KvPreload {
        KvPreload {
            spec,
            next: 0,
            rng: rand::SeedableRng::seed_from_u64(0x5EED_10AD),
        }
    }
}

impl Iterator for KvPreload {
    type Item = (String, usize);
    fn next(&mut self) -> Option<(String, usize)> {
        if !self.spec.preload || self.next >= self.spec.space.records {
            return None;
        }
        let k = self.spec.space.key(self.next);
        self.next += 1;
        Some((k, self.spec.value.sample(&mut self.rng)))
    }
}
