//! libri's user simulator (seed 003; libri-experiments `pkg/sim`) as one
//! stream of requests per worker. Each upload is 4 PUTs: the entry (size
//! gamma, shape 1.5, scale 170 KiB: mean ≈ 255 KiB), the author's own
//! envelope and one envelope per share (2 shares; envelopes ≈ 200 B). Each
//! share's reader waits uniform 2–10 s after the share, then GETs the
//! envelope and the entry: 8 requests per upload. Owns that schedule;
//! must not pace requests (the driver does: its rate is requests/s, see
//! `libri_rate_from_uploads_per_day`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::Rng;

use super::values::ValueSize;
use super::{Generator, Next, Op};

/// Requests per upload: 4 PUTs and 4 GETs.
pub const REQUESTS_PER_UPLOAD: u64 = 8;

/// The driver's rate (requests/s) that simulates `uploads_per_day` uploads
/// a day, as seed 003's UPD axis: u × 8 / 86400.
pub fn libri_rate_from_uploads_per_day(uploads_per_day: f64) -> f64 {
    uploads_per_day * REQUESTS_PER_UPLOAD as f64 / 86_400.0
}

/// The simulator's parameters (libri-experiments' defaults).
#[derive(Clone, Debug)]
pub struct LibriSpec {
    /// Entry (document) size: gamma, shape 1.5, rate 1/170 per KiB.
    pub entry: ValueSize,
    pub envelope_bytes: usize,
    /// Readers each upload is shared with.
    pub shares: usize,
    pub wait_min: Duration,
    pub wait_max: Duration,
}

impl LibriSpec {
    pub fn default_spec() -> LibriSpec {
        LibriSpec {
            entry: ValueSize::gamma(1.5, 170.0 * 1024.0).expect("valid gamma"),
            envelope_bytes: 200,
            shares: 2,
            wait_min: Duration::from_secs(2),
            wait_max: Duration::from_secs(10),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "libri: per upload PUT entry ({}), PUT {} envelopes ({} B), then per share after uniform {}-{} s GET envelope + GET entry ({} requests/upload)",
            self.entry.describe(),
            self.shares + 1,
            self.envelope_bytes,
            self.wait_min.as_secs_f64(),
            self.wait_max.as_secs_f64(),
            2 + 3 * self.shares
        )
    }

    pub fn requests_per_upload(&self) -> usize {
        2 + 3 * self.shares
    }
}

/// 16 lowercase hex digits: libri's ids are random, so are these keys.
pub fn hex_key(id: u64) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(16);
    for i in (0..16).rev() {
        s.push(HEX[((id >> (i * 4)) & 0xf) as usize] as char);
    }
    s
}

/// One worker's uploads and downloads.
pub struct LibriGenerator {
    spec: LibriSpec,
    rng: SmallRng,
    /// Reads not yet sent: (due, sequence for FIFO among equal times, key id).
    pending: BinaryHeap<Reverse<(Duration, u64, u64)>>,
    seq: u64,
    /// The upload in progress: entry id, then envelope ids; next put.
    entry: u64,
    envelopes: Vec<u64>,
    next_put: usize,
}

impl LibriGenerator {
    pub fn new(spec: LibriSpec, rng: SmallRng) -> LibriGenerator {
        let puts = spec.shares + 2;
        LibriGenerator {
            envelopes: Vec::with_capacity(spec.shares + 1),
            spec,
            rng,
            pending: BinaryHeap::new(),
            seq: 0,
            entry: 0,
            next_put: puts,
        }
    }

    fn schedule(&mut self, due: Duration, id: u64) {
        self.pending.push(Reverse((due, self.seq, id)));
        self.seq += 1;
    }

    /// Reads scheduled but not yet due or sent.
    pub fn pending_reads(&self) -> usize {
        self.pending.len()
    }
}

impl Generator for LibriGenerator {
    fn next(&mut self, now: Duration) -> Next {
        if let Some(Reverse((due, _, id))) = self.pending.peek().copied() {
            if due <= now {
                self.pending.pop();
                return Next {
                    op: Op::Get { key: hex_key(id) },
                    key_index: Some(id),
                };
            }
        }
        let puts = self.spec.shares + 2;
        if self.next_put >= puts {
            self.entry = self.rng.random();
            self.envelopes.clear();
            for _ in 0..=self.spec.shares {
                let e = self.rng.random();
                self.envelopes.push(e);
            }
            self.next_put = 0;
        }
        let i = self.next_put;
        self.next_put += 1;
        let (id, value_len) = if i == 0 {
            (self.entry, self.spec.entry.sample(&mut self.rng))
        } else {
            (self.envelopes[i - 1], self.spec.envelope_bytes)
        };
        // Envelopes 2.. are the shares: once shared, the reader waits and
        // then reads the envelope and the entry.
        if i >= 2 {
            let wait = self
                .rng
                .random_range(self.spec.wait_min..=self.spec.wait_max);
            let due = now + wait;
            self.schedule(due, id);
            self.schedule(due, self.entry);
        }
        Next {
            op: Op::Put {
                key: hex_key(id),
                value_len,
            },
            key_index: Some(id),
        }
    }
}
