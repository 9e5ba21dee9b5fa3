//! Workloads: what each request does (interim: uniform put and get; the
//! full set of mixes, YCSB, libri and highload-dht lands separately).
//! Owns the operation streams; must not send or time anything.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};

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
    Range {
        start: String,
        end: String,
        limit_hint: usize,
    },
    ReadModifyWrite {
        key: String,
        value_len: usize,
    },
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Get { .. } => "get",
            Op::Put { .. } => "put",
            Op::Delete { .. } => "delete",
            Op::Range { .. } => "range",
            Op::ReadModifyWrite { .. } => "rmw",
        }
    }
}

pub struct Next {
    pub op: Op,
    pub key_index: Option<u64>,
}

pub trait Generator: Send {
    fn next(&mut self, now: Duration) -> Next;
}

pub struct Workload {
    put: bool,
    keys: u64,
    value_size: usize,
}

impl Workload {
    pub fn builtin(name: &str, keys: u64, value_size: usize) -> Result<Workload, String> {
        let put = match name {
            "put" => true,
            "get" => false,
            _ => return Err(format!("unknown workload {name}")),
        };
        Ok(Workload {
            put,
            keys: keys.max(1),
            value_size,
        })
    }

    pub fn from_toml_file(path: &Path) -> Result<Workload, String> {
        Err(format!(
            "{}: workload files are not supported yet",
            path.display()
        ))
    }

    pub fn describe(&self) -> String {
        format!(
            "{} of uniform random keys of {}, {}-byte values",
            if self.put { "put" } else { "get" },
            self.keys,
            self.value_size
        )
    }

    pub fn generator(&self, index: usize, seed: u64) -> Box<dyn Generator> {
        Box::new(Uniform {
            put: self.put,
            keys: self.keys,
            value_size: self.value_size,
            rng: rand::rngs::StdRng::seed_from_u64(
                seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
        })
    }

    pub fn key_space(&self) -> Option<u64> {
        Some(self.keys)
    }
}

struct Uniform {
    put: bool,
    keys: u64,
    value_size: usize,
    rng: rand::rngs::StdRng,
}

impl Generator for Uniform {
    fn next(&mut self, _now: Duration) -> Next {
        let i = self.rng.random_range(0..self.keys);
        let key = format!("{i:016}");
        let op = if self.put {
            Op::Put {
                key,
                value_len: self.value_size,
            }
        } else {
            Op::Get { key }
        };
        Next {
            op,
            key_index: Some(i),
        }
    }
}

/// Distinct keys touched (interim: exact bitmap).
pub struct KeyCounter {
    bits: Vec<AtomicU64>,
}

impl KeyCounter {
    pub fn new(key_space: Option<u64>) -> KeyCounter {
        let n = key_space.unwrap_or(0).min(1 << 31).div_ceil(64) as usize;
        KeyCounter {
            bits: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    pub fn touch(&self, key_index: u64) {
        if let Some(w) = self.bits.get((key_index / 64) as usize) {
            w.fetch_or(1 << (key_index % 64), Ordering::Relaxed);
        }
    }

    pub fn count(&self) -> u64 {
        self.bits
            .iter()
            .map(|w| w.load(Ordering::Relaxed).count_ones() as u64)
            .sum()
    }
}
