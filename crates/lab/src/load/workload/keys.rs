//! Key choice for key-value mixes: which key index in the workload's key
//! space an operation touches (uniform, zipfian, latest, sequential), the
//! shared counters that inserts and sequential scans advance, and the key
//! string of an index. Owns key indexes and their formatting; must not
//! choose operations or value sizes.

use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;

use super::zipfian::{Scrambled, Zipfian};
use crate::load::segment::Segment;

/// How a key index is drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyDist {
    /// Every key of the current key space equally likely.
    Uniform,
    /// YCSB's zipfian; `scrambled` (the default, YCSB's
    /// `ScrambledZipfianGenerator`) spreads the hot keys over the key space,
    /// otherwise key 0 is the hottest, key 1 the next, and so on.
    Zipfian { theta: f64, scrambled: bool },
    /// YCSB's `SkewedLatestGenerator`: zipfian by age, the most recently
    /// inserted key the hottest.
    Latest { theta: f64 },
    /// One shared cursor over the key space, wrapping: across all workers
    /// the keys are 0, 1, 2, ... (YCSB's `SequentialGenerator`).
    Sequential,
}

impl KeyDist {
    pub fn describe(&self) -> String {
        match self {
            KeyDist::Uniform => "uniform".into(),
            KeyDist::Zipfian { theta, scrambled } => format!(
                "zipfian({theta}{})",
                if *scrambled { ", scrambled" } else { "" }
            ),
            KeyDist::Latest { theta } => format!("latest({theta})"),
            KeyDist::Sequential => "sequential".into(),
        }
    }
}

/// The key space shared by all workers of a workload.
#[derive(Debug)]
pub struct KeySpace {
    /// Keys that exist before the run (YCSB's record count).
    pub records: u64,
    /// When the workload inserts: how many new keys this generator has
    /// handed out. Its `k`-th new key is `records + segment.stripe(k)`, so
    /// the current key space is about `[0, records + count × inserts)`.
    pub inserts: Option<AtomicU64>,
    /// The sequential cursor (this share's steps; the key is its stripe).
    pub cursor: AtomicU64,
    /// The generator's share of the run: which new keys and which steps of
    /// the sequential cursor are its own (the whole run by default).
    pub segment: Segment,
    /// Prepended to the 16-digit index; empty by default so keys match
    /// what `strata load` has always written.
    pub prefix: String,
}

impl KeySpace {
    pub fn new(records: u64, inserting: bool, prefix: String) -> KeySpace {
        let records = records.max(1);
        KeySpace {
            records,
            inserts: inserting.then(|| AtomicU64::new(0)),
            cursor: AtomicU64::new(0),
            prefix,
            segment: Segment::default(),
        }
    }

    /// Keys that exist now: the records plus the inserts handed out (by
    /// every share, each assumed as far along as this one).
    #[inline]
    pub fn current(&self) -> u64 {
        match &self.inserts {
            Some(c) => self
                .records
                .saturating_add(c.load(Ordering::Relaxed).saturating_mul(self.segment.count))
                .max(1),
            None => self.records,
        }
    }

    /// Take the next key index to insert (shared by all workers; the
    /// shares of a run take every `count`-th one).
    #[inline]
    pub fn next_insert(&self) -> u64 {
        match &self.inserts {
            Some(c) => self
                .records
                .saturating_add(self.segment.stripe(c.fetch_add(1, Ordering::Relaxed))),
            None => self.records,
        }
    }

    /// The next step of the sequential cursor: 0, 1, 2, ... over the whole
    /// run, each share taking every `count`-th.
    #[inline]
    pub fn next_sequential(&self, n: u64) -> u64 {
        self.segment
            .stripe(self.cursor.fetch_add(1, Ordering::Relaxed))
            % n
    }

    #[inline]
    pub fn key(&self, index: u64) -> String {
        format_key(&self.prefix, index)
    }
}

/// `prefix` then `index` as at least 16 zero-padded decimal digits: the same
/// string as `format!("{prefix}{index:016}")`, built with one allocation.
pub fn format_key(prefix: &str, index: u64) -> String {
    let mut digits = [b'0'; 20];
    let mut n = index;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let start = i.min(digits.len() - 16);
    let mut s = String::with_capacity(prefix.len() + digits.len() - start);
    s.push_str(prefix);
    for &d in &digits[start..] {
        s.push(d as char);
    }
    s
}

/// One worker's key chooser: the distribution plus the per-worker state it
/// needs (a zipfian whose zeta it extends as inserts grow the key space).
#[derive(Clone, Debug)]
pub struct KeyChooser {
    dist: KeyDist,
    zipf: Option<Zipfian>,
    scrambled: Option<Scrambled>,
}

impl KeyChooser {
    /// Built once per workload (the zeta sum over the records is the
    /// expensive part) and cloned for each worker.
    pub fn new(dist: &KeyDist, records: u64) -> KeyChooser {
        let (zipf, scrambled) = match dist {
            KeyDist::Zipfian {
                theta,
                scrambled: true,
            } => (None, Some(Scrambled::new(*theta))),
            KeyDist::Zipfian { theta, .. } | KeyDist::Latest { theta } => {
                (Some(Zipfian::new(records, *theta)), None)
            }
            _ => (None, None),
        };
        KeyChooser {
            dist: dist.clone(),
            zipf,
            scrambled,
        }
    }

    /// A key index in the current key space.
    #[inline]
    pub fn choose<R: Rng>(&mut self, rng: &mut R, space: &KeySpace) -> u64 {
        let n = space.current();
        match self.dist {
            KeyDist::Uniform => rng.random_range(0..n),
            KeyDist::Sequential => space.next_sequential(n),
            KeyDist::Zipfian {
                scrambled: true, ..
            } => {
                let s = self.scrambled.as_ref().expect("scrambled zipfian");
                s.item(rng.random::<f64>(), n)
            }
            KeyDist::Zipfian { .. } => {
                let z = self.zipf.as_mut().expect("zipfian");
                z.grow_to(n);
                z.rank(rng.random::<f64>()).min(n - 1)
            }
            KeyDist::Latest { .. } => {
                let z = self.zipf.as_mut().expect("zipfian");
                z.grow_to(n);
                (n - 1).saturating_sub(z.rank(rng.random::<f64>()))
            }
        }
    }
}
