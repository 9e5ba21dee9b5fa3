//! Hinted handoff's store: writes a replica missed, kept durably by the
//! coordinator (in an engine of their own, `DATA/hints`, so they survive
//! the coordinator's restart) until the replica is back. Per peer, hints
//! are numbered in the order they were made and read back in that order;
//! they are bounded in bytes per peer and in age, and every hint refused
//! or expired is counted as dropped, never lost silently. Owns the hints
//! on disk and their accounting; must not send anything (the cluster's
//! delivery loop does).
//!
//! Key: `peer id u64 BE | seq u64 BE`. Value: `made at (ms) u64 LE | key
//! length u32 LE | key | record`.

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;

use bytes::{Buf, Bytes};
use parking_lot::Mutex;
use strata_engine::{Db, WriteBatch};

use crate::error::{ClusterError, Result};
use crate::hlc::WallClock;
use crate::record::Record;

#[derive(Clone, Copy, Debug)]
pub struct HintsConfig {
    /// Bytes of hints kept for one peer at most.
    pub max_bytes_per_peer: u64,
    /// Hints older than this are dropped instead of delivered.
    pub max_age_ms: u64,
    /// Hints delivered per second to one peer at most.
    pub rate: u32,
}

impl Default for HintsConfig {
    fn default() -> Self {
        HintsConfig {
            // 256 MiB: about 2.5 million 100-byte writes, an hour of a
            // peer's share of a busy node's writes at ~700/s.
            max_bytes_per_peer: 256 << 20,
            // An hour: longer than a restart or a network blip, short
            // enough that anti-entropy (not hints) brings back a node that
            // was away for longer; Cassandra's default hint window is 3 h.
            max_age_ms: 3_600_000,
            // Replay at most 5,000 writes/s per peer: a peer that missed a
            // 10k writes/s burst for 3 s is level in a few seconds, and the
            // replay adds well under a core's worth of work to it.
            rate: 5_000,
        }
    }
}

/// Counters of one peer's hints.
#[derive(Clone, Copy, Debug, Default)]
pub struct PeerHints {
    pub count: u64,
    pub bytes: u64,
    pub written: u64,
    pub delivered: u64,
    pub dropped: u64,
}

#[derive(Default)]
struct Peer {
    next_seq: u64,
    stats: PeerHints,
    /// Hints handed to the writer and not yet stored: pending too, so
    /// that a peer is never reported level while one is on its way.
    queued: u64,
}

pub struct Hints {
    db: Db,
    cfg: HintsConfig,
    peers: Mutex<HashMap<u64, Peer>>,
}

/// One hint read back for delivery.
pub struct Hint {
    pub seq: u64,
    pub made_ms: u64,
    pub key: Bytes,
    pub record: Record,
    bytes: u64,
}

fn hint_key(peer: u64, seq: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&peer.to_be_bytes());
    k[8..].copy_from_slice(&seq.to_be_bytes());
    k
}

fn decode(k: &[u8], v: &Bytes) -> Option<(u64, u64, Hint)> {
    if k.len() != 16 || v.len() < 12 {
        return None;
    }
    let peer = u64::from_be_bytes(k[..8].try_into().ok()?);
    let seq = u64::from_be_bytes(k[8..].try_into().ok()?);
    let mut b = v.clone();
    let made_ms = b.get_u64_le();
    let n = b.get_u32_le() as usize;
    if b.len() < n {
        return None;
    }
    let key = b.split_to(n);
    let record = Record::decode(&b).ok()?;
    Some((
        peer,
        seq,
        Hint {
            seq,
            made_ms,
            key,
            record,
            bytes: (k.len() + v.len()) as u64,
        },
    ))
}

/// The hint store's engine settings: a small memtable and cache (hints
/// are few, written once and read back in order), at `durability`.
pub fn engine_options(durability: strata_engine::Durability) -> strata_engine::Options {
    strata_engine::Options {
        durability,
        memtable_size: 8 << 20,
        block_cache_size: 8 << 20,
        ..Default::default()
    }
}

impl Hints {
    /// Open (or create) the hint store and count what it holds.
    pub fn open(dir: &Path, opts: strata_engine::Options, cfg: HintsConfig) -> Result<Hints> {
        let db = Db::open(dir, opts)?;
        let mut peers: HashMap<u64, Peer> = HashMap::new();
        for e in db.scan::<(Bound<&[u8]>, Bound<&[u8]>)>((Bound::Unbounded, Bound::Unbounded))? {
            let (k, v) = e?;
            let Some((peer, seq, h)) = decode(&k, &v) else {
                return Err(ClusterError::Failed(format!(
                    "damaged hint in {}",
                    dir.display()
                )));
            };
            let p = peers.entry(peer).or_default();
            p.next_seq = p.next_seq.max(seq + 1);
            p.stats.count += 1;
            p.stats.bytes += h.bytes;
        }
        Ok(Hints {
            db,
            cfg,
            peers: Mutex::new(peers),
        })
    }

    /// Keep a write for `peer`, durably (blocking: an fsync under `sync`).
    /// Returns false if it was dropped (over the peer's bound).
    pub fn add(&self, peer: u64, key: &[u8], record: &Record, now_ms: u64) -> Result<bool> {
        let kept = self.add_many(
            &[(peer, Bytes::copy_from_slice(key), record.clone())],
            now_ms,
        )?;
        Ok(kept[0])
    }

    /// `peer`'s figures; `count` includes the hints still on their way to
    /// the store.
    pub fn stats(&self, peer: u64) -> PeerHints {
        self.peers
            .lock()
            .get(&peer)
            .map(|p| PeerHints {
                count: p.stats.count + p.queued,
                ..p.stats
            })
            .unwrap_or_default()
    }

    /// `n` more (or fewer) of `peer`'s hints on their way to the store.
    fn queued(&self, peer: u64, n: i64) {
        let mut peers = self.peers.lock();
        let p = peers.entry(peer).or_default();
        p.queued = p.queued.saturating_add_signed(n);
    }

    pub fn pending(&self, peer: u64) -> u64 {
        self.stats(peer).count
    }

    /// Up to `max` of `peer`'s oldest hints, in order. Expired ones are
    /// removed and counted as dropped on the way.
    pub fn oldest(&self, peer: u64, max: usize, now_ms: u64) -> Result<Vec<Hint>> {
        let lo = hint_key(peer, 0);
        let hi = hint_key(peer, u64::MAX);
        let mut out = Vec::new();
        let mut expired = Vec::new();
        for e in self
            .db
            .scan((Bound::Included(&lo[..]), Bound::Included(&hi[..])))?
        {
            let (k, v) = e?;
            let Some((_, _, h)) = decode(&k, &v) else {
                continue;
            };
            if now_ms.saturating_sub(h.made_ms) > self.cfg.max_age_ms {
                expired.push(h);
                continue;
            }
            out.push(h);
            if out.len() >= max {
                break;
            }
        }
        if !expired.is_empty() {
            self.remove(peer, &expired, false)?;
            self.count_dropped(peer, expired.len() as u64);
        }
        Ok(out)
    }

    /// Forget hints that were delivered.
    pub fn delivered(&self, peer: u64, hints: &[Hint]) -> Result<()> {
        self.remove(peer, hints, true)
    }

    fn remove(&self, peer: u64, hints: &[Hint], delivered: bool) -> Result<()> {
        if hints.is_empty() {
            return Ok(());
        }
        let mut b = WriteBatch::new();
        for h in hints {
            b.delete(&hint_key(peer, h.seq));
        }
        self.db.write(b)?;
        let mut peers = self.peers.lock();
        if let Some(p) = peers.get_mut(&peer) {
            p.stats.count -= hints.len() as u64;
            p.stats.bytes -= hints.iter().map(|h| h.bytes).sum::<u64>();
            if delivered {
                p.stats.delivered += hints.len() as u64;
            }
        }
        Ok(())
    }

    pub fn close(&self) -> Result<()> {
        Ok(self.db.close()?)
    }
}

/// Hints waiting for the writer thread at most; beyond, a hint is dropped
/// and counted (the coordinator never waits for a hint).
const WRITER_QUEUE: usize = 16_384;

/// The thread that makes hints durable, many per fsync (or, inline, the
/// caller itself).
pub struct HintWriter {
    /// `None`: inline, each hint written on the caller's task.
    tx: Option<std::sync::mpsc::SyncSender<(u64, Bytes, Record)>>,
    hints: std::sync::Arc<Hints>,
    clock: WallClock,
}

impl HintWriter {
    pub fn start(hints: std::sync::Arc<Hints>, clock: WallClock) -> HintWriter {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(u64, Bytes, Record)>(WRITER_QUEUE);
        let (h, c) = (hints.clone(), clock.clone());
        std::thread::Builder::new()
            .name(strata_api::threads::names::HINTS.into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut group = vec![first];
                    while group.len() < 512 {
                        match rx.try_recv() {
                            Ok(x) => group.push(x),
                            Err(_) => break,
                        }
                    }
                    if let Err(e) = h.add_group(&group, c.now_ms(), true) {
                        // add_many counted them as dropped.
                        tracing::warn!(error = %e, hints = group.len(), "writing hints failed");
                    }
                }
            })
            .expect("spawn hint writer");
        HintWriter {
            tx: Some(tx),
            hints,
            clock,
        }
    }

    /// No thread: `keep` writes each hint before it returns (the
    /// deterministic simulation's `ClusterConfig::inline_io`).
    pub fn inline(hints: std::sync::Arc<Hints>, clock: WallClock) -> HintWriter {
        HintWriter {
            tx: None,
            hints,
            clock,
        }
    }

    /// Keep a write for `peer` (asynchronously, unless inline).
    pub fn keep(&self, peer: u64, key: Bytes, record: Record) {
        match &self.tx {
            Some(tx) => {
                // Counted before it is sent: the writer may store it (and
                // take it off the count) before try_send returns.
                self.hints.queued(peer, 1);
                if tx.try_send((peer, key, record)).is_err() {
                    self.hints.queued(peer, -1);
                    self.hints.count_dropped(peer, 1);
                }
            }
            None => {
                if let Err(e) = self
                    .hints
                    .add_many(&[(peer, key, record)], self.clock.now_ms())
                {
                    tracing::warn!(error = %e, "writing a hint failed");
                }
            }
        }
    }
}

impl Hints {
    /// Keep several hints with one write (one fsync); each is kept or
    /// dropped (over its peer's bound) on its own: the answer says which.
    /// On error none was kept, and all are counted as dropped.
    pub fn add_many(&self, items: &[(u64, Bytes, Record)], now_ms: u64) -> Result<Vec<bool>> {
        self.add_group(items, now_ms, false)
    }

    /// `add_many`; with `queued`, the items were counted as on their way
    /// (`HintWriter::keep`) and come off that count under the same lock
    /// that counts them stored, so a peer's count never shows one twice
    /// or not at all.
    fn add_group(
        &self,
        items: &[(u64, Bytes, Record)],
        now_ms: u64,
        queued: bool,
    ) -> Result<Vec<bool>> {
        let mut batch = WriteBatch::new();
        let mut taken: Vec<(u64, u64)> = Vec::new();
        let mut kept = Vec::with_capacity(items.len());
        {
            let mut peers = self.peers.lock();
            for (peer, key, record) in items {
                let mut v = Vec::with_capacity(12 + key.len() + record.encoded_len());
                v.extend_from_slice(&now_ms.to_le_bytes());
                v.extend_from_slice(&(key.len() as u32).to_le_bytes());
                v.extend_from_slice(key);
                record.encode_into(&mut v);
                let bytes = (16 + v.len()) as u64;
                let p = peers.entry(*peer).or_default();
                if queued {
                    p.queued = p.queued.saturating_sub(1);
                }
                let fits = p.stats.bytes + bytes <= self.cfg.max_bytes_per_peer;
                kept.push(fits);
                if !fits {
                    p.stats.dropped += 1;
                    continue;
                }
                let seq = p.next_seq;
                p.next_seq += 1;
                p.stats.count += 1;
                p.stats.bytes += bytes;
                p.stats.written += 1;
                taken.push((*peer, bytes));
                batch.put(&hint_key(*peer, seq), &v);
            }
        }
        if batch.is_empty() {
            return Ok(kept);
        }
        if let Err(e) = self.db.write(batch) {
            let mut peers = self.peers.lock();
            for (peer, bytes) in &taken {
                if let Some(p) = peers.get_mut(peer) {
                    p.stats.count -= 1;
                    p.stats.bytes -= bytes;
                    p.stats.written -= 1;
                    p.stats.dropped += 1;
                }
            }
            return Err(e.into());
        }
        Ok(kept)
    }

    /// Count hints dropped before they reached the store.
    pub fn count_dropped(&self, peer: u64, n: u64) {
        let mut peers = self.peers.lock();
        let p = peers.entry(peer).or_default();
        p.stats.dropped += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Version;

    fn rec(h: u64) -> Record {
        Record {
            version: Version { hlc: h, node: 1 },
            value: Some(Bytes::from_static(b"value")),
            marks: Vec::new(),
        }
    }

    #[test]
    fn hints_survive_reopen_in_order_and_are_bounded() {
        let d = tempfile::tempdir().unwrap();
        let cfg = HintsConfig {
            max_bytes_per_peer: 10 * 60,
            max_age_ms: 1000,
            rate: 100,
        };
        {
            let h = Hints::open(d.path(), Default::default(), cfg).unwrap();
            for i in 0..5 {
                assert!(h.add(7, format!("k{i}").as_bytes(), &rec(i), 100).unwrap());
            }
            h.add(8, b"other", &rec(1), 100).unwrap();
            h.close().unwrap();
        }
        let h = Hints::open(d.path(), Default::default(), cfg).unwrap();
        assert_eq!(h.pending(7), 5);
        let got = h.oldest(7, 3, 200).unwrap();
        let keys: Vec<_> = got.iter().map(|x| x.key.clone()).collect();
        assert_eq!(keys, ["k0", "k1", "k2"]);
        h.delivered(7, &got).unwrap();
        assert_eq!(h.pending(7), 2);
        assert_eq!(h.stats(7).delivered, 3);
        // New hints continue the numbering after the reopen.
        h.add(7, b"k5", &rec(5), 200).unwrap();
        let keys: Vec<_> = h
            .oldest(7, 10, 200)
            .unwrap()
            .into_iter()
            .map(|x| x.key)
            .collect();
        assert_eq!(keys, ["k3", "k4", "k5"]);
        // Over the byte bound: dropped and counted.
        let mut dropped = 0;
        for i in 0..20 {
            if !h
                .add(7, format!("more{i}").as_bytes(), &rec(9), 200)
                .unwrap()
            {
                dropped += 1;
            }
        }
        assert!(dropped > 0);
        assert_eq!(h.stats(7).dropped, dropped);
        // Expired: dropped on read, counted.
        let before = h.stats(7);
        let left = h.oldest(7, 100, 100 + 5000).unwrap();
        assert!(left.is_empty());
        assert_eq!(h.stats(7).dropped, before.dropped + before.count);
        assert_eq!(h.pending(7), 0);
        assert_eq!(h.pending(8), 1);
    }

    /// A hint handed to the background writer is pending from that moment,
    /// not only once it is stored: a peer is never reported level (no hint
    /// pending) while one is on its way to the store.
    #[test]
    fn a_hint_is_pending_from_the_moment_it_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let h = std::sync::Arc::new(
            Hints::open(d.path(), Default::default(), Default::default()).unwrap(),
        );
        let w = HintWriter::start(h.clone(), WallClock::default());
        for i in 0..2000u64 {
            w.keep(7, Bytes::from(format!("k{i}")), rec(i + 1));
            assert_eq!(h.pending(7), i + 1, "after keeping hint {i}");
        }
        // And the count settles on what was stored.
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while h.oldest(7, 5000, 1).unwrap().len() < 2000 && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(h.oldest(7, 5000, 1).unwrap().len(), 2000);
        assert_eq!(h.pending(7), 2000);
    }
}
