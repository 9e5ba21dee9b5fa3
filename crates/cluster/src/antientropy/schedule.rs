//! Anti-entropy's schedule: which home sets this node compares and with
//! whom, a round over them (every `interval`, or on demand), the Merkle
//! trees built after a start or after a table was set aside, and the
//! loops that run those. Owns when exchanges happen; an exchange itself is
//! in the parent module.

use std::sync::atomic::AtomicBool;

use super::*;
use crate::fence::Fence;

/// When exchanges run: one round at a time, the trees built once at a
/// time, never while fenced.
pub(crate) struct Rounds {
    pub(crate) ae: Arc<AntiEntropy>,
    fence: Arc<Fence>,
    /// One round at a time.
    lock: tokio::sync::Mutex<()>,
    /// A tree build runs (one at a time).
    building: AtomicBool,
}

impl Rounds {
    pub(crate) fn new(ae: Arc<AntiEntropy>, fence: Arc<Fence>) -> Rounds {
        Rounds {
            ae,
            fence,
            lock: tokio::sync::Mutex::new(()),
            building: AtomicBool::new(false),
        }
    }

    /// The home sets this node belongs to.
    pub(crate) fn my_home_sets(&self) -> Vec<HomeSet> {
        // None while the layout changes: the trees are rebuilt after.
        let t = self.ae.sh.topo();
        if t.previous.is_some() {
            return Vec::new();
        }
        let Some(me) = t.current.members.iter().position(|&m| m == self.ae.sh.me) else {
            return Vec::new();
        };
        let ids: Vec<u64> = t.current.members.iter().map(|&m| t.members[m].id).collect();
        let mut sets = home_sets(&ids, t.replication(), me);
        for s in &mut sets {
            for m in &mut s.members {
                *m = t.current.members[*m];
            }
        }
        sets
    }

    /// Exchange every home set this node belongs to with each of its other
    /// members (`all`), or only with those of higher id (the schedule: each
    /// pair once). One round at a time.
    pub(crate) async fn round(self: &Arc<Self>, all: bool) -> Vec<Exchange> {
        // Not before this node has asked the others whether it is still a
        // member (a few seconds at most after its start), and never once
        // it is fenced: its data must not spread.
        self.fence.ready().await;
        let _one = self.lock.lock().await;
        let mut out = Vec::new();
        if self.fence.check().is_err() {
            return out;
        }
        let now = Instant::now();
        let t = self.ae.sh.topo();
        for hs in self.my_home_sets() {
            for &m in &hs.members {
                if m == self.ae.sh.me || (!all && t.members[m].id < self.ae.sh.my_id) {
                    continue;
                }
                if self.ae.sh.is_down(m, now) {
                    out.push(Exchange {
                        set: hs.name,
                        peer: self.ae.sh.topo().members[m].url.clone(),
                        error: Some("the failure detector holds it down".into()),
                        ..Exchange::default()
                    });
                    continue;
                }
                out.push(self.ae.exchange(hs.name, m).await);
                if self.ae.sh.closed.load(Ordering::Acquire) {
                    return out;
                }
            }
        }
        out
    }

    /// Build the trees on a thread of their own (a scan of the store);
    /// `repair`: then exchange with every replica at once (the keys of a
    /// table set aside come back). One build at a time: false if one
    /// runs.
    pub(crate) fn spawn_tree_build(self: &Arc<Self>, repair: bool) -> bool {
        if self.ae.sh.store.merkle().is_none() || self.building.swap(true, Ordering::AcqRel) {
            return false;
        }
        let s = self.clone();
        let rt = tokio::runtime::Handle::try_current().ok();
        let build = move || {
            let built = s.ae.sh.store.build_trees();
            s.building.store(false, Ordering::Release);
            match built {
                Ok(n) => tracing::info!(records = n, "anti-entropy trees built"),
                // A damaged table is set aside on the way; the watcher
                // builds again.
                Err(e) => {
                    tracing::warn!(error = %e, "building the anti-entropy trees failed");
                    return;
                }
            }
            if let (true, Some(rt)) = (repair, rt) {
                rt.spawn(async move {
                    let xs = s.round(true).await;
                    let pulled: u64 = xs.iter().map(|x| x.pulled).sum();
                    let failed = xs.iter().filter(|x| x.error.is_some()).count();
                    tracing::warn!(
                        pulled,
                        failed,
                        "repaired from the replicas after a table was set aside"
                    );
                });
            }
        };
        if self.ae.sh.cfg.inline_io {
            build();
        } else {
            std::thread::Builder::new()
                .name(strata_api::threads::names::TREES.into())
                .spawn(build)
                .expect("spawn the tree builder");
        }
        true
    }

    /// Watch for tables the engine set aside (a checksum failed on a read,
    /// a scan or a compaction): their records left the store without the
    /// applier, so the trees are rebuilt, then every replica is asked for
    /// what this node lacks now.
    pub(crate) async fn quarantine_loop(self: Arc<Self>) {
        let count = |s: &Self| s.ae.sh.store.db().stats().tables_quarantined;
        let mut seen = 0;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if self.ae.sh.closed.load(Ordering::Acquire) {
                return;
            }
            let now = count(&self);
            if now == seen || self.building.load(Ordering::Acquire) {
                continue;
            }
            if let Some(m) = self.ae.sh.store.merkle() {
                m.clear();
            }
            if self.spawn_tree_build(true) {
                self.ae.stats.tables_set_aside.store(now, Ordering::Relaxed);
                seen = now;
            }
        }
    }

    pub(crate) async fn run(self: Arc<Self>) {
        let every = self.ae.sh.cfg.anti_entropy.interval;
        if every.is_zero() || self.ae.sh.store.merkle().is_none() {
            return;
        }
        // Spread the nodes' rounds: start after a random part of a period.
        let first = every.mul_f64(0.1 + 0.9 * rand::random::<f64>());
        tokio::time::sleep(first).await;
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if self.ae.sh.closed.load(Ordering::Acquire) {
                return;
            }
            let ready = self
                .ae
                .sh
                .store
                .merkle()
                .is_some_and(|m| m.state.lock().ready);
            if ready {
                self.round(false).await;
            }
        }
    }
}
