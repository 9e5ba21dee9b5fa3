//! The coordinator's work toward each peer between requests: heartbeats
//! for the failure detector, and the hints stored for a peer delivered
//! once it answers again. Owns those loops; must not decide a member's
//! state (that is `membership`).

use crate::membership::{State, HEARTBEAT};
use crate::ops::OpKind;
use crate::transport::CallError;
use crate::wire::{Request, Response};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use super::{Coordinator, HINT_BATCH};

impl Coordinator {
    pub(crate) async fn heartbeat_loop(self: Arc<Self>, i: usize) {
        let t = self.sh.topo();
        let peer = t.peers[i].clone().expect("a peer");
        let detector = t.detectors[i].clone();
        drop(t);
        let mut tick = tokio::time::interval(HEARTBEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            if self.sh.closed.load(Ordering::Acquire) {
                return;
            }
            match peer.call(Request::Ping, Duration::from_secs(1)).await {
                Ok(Response::Pong) => detector.heartbeat(Instant::now()),
                Err(CallError::Refused) => detector.refused(),
                _ => {}
            }
        }
    }

    /// Deliver member `i`'s hints while it is up: oldest first, in batches,
    /// at most `rate` a second.
    pub(crate) async fn hint_loop(self: Arc<Self>, i: usize) {
        let Some(hints) = &self.sh.hints else {
            return;
        };
        let (pid, detector) = {
            let t = self.sh.topo();
            (t.members[i].id, t.detectors[i].clone())
        };
        let rate = self.sh.cfg.hints.rate.max(1) as f64;
        loop {
            tokio::time::sleep(HEARTBEAT).await;
            if self.sh.closed.load(Ordering::Acquire) {
                return;
            }
            if hints.pending(pid) == 0
                || detector.state(Instant::now()) != State::Up
                || self.fence.check().is_err()
            {
                continue;
            }
            let (h, now) = (hints.clone(), self.sh.cfg.wall_clock.now_ms());
            let batch = match self
                .sh
                .blocking(move || h.oldest(pid, HINT_BATCH, now))
                .await
            {
                Some(Ok(b)) => b,
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "reading hints failed");
                    continue;
                }
                None => continue,
            };
            // A hint for a key this member no longer holds (the layout
            // changed since) is dropped: delivered after the member's
            // cleanup it would leave a stray record behind.
            let (batch, strays): (Vec<_>, Vec<_>) = {
                let t = self.sh.topo();
                let rf = t.replication();
                batch.into_iter().partition(|h| {
                    t.previous.is_some() || t.current.replicas(&h.key, rf).contains(&i)
                })
            };
            if !strays.is_empty() {
                let h = hints.clone();
                if let Some(Err(e)) = self.sh.blocking(move || h.delivered(pid, &strays)).await {
                    tracing::warn!(error = %e, "removing stray hints failed");
                }
            }
            let started = Instant::now();
            let sent = batch.len();
            let mut set = tokio::task::JoinSet::new();
            for (n, h) in batch.iter().enumerate() {
                let (s, k, rec) = (self.clone(), h.key.clone(), h.record.clone());
                set.spawn(
                    async move { (n, s.sh.send_write(0, i, k, rec, OpKind::Hint).await.is_ok()) },
                );
            }
            let mut ok = vec![false; batch.len()];
            while let Some(r) = set.join_next().await {
                if let Ok((n, true)) = r {
                    ok[n] = true;
                }
            }
            let failed = ok.iter().any(|o| !o);
            let done: Vec<_> = batch
                .into_iter()
                .zip(ok)
                .filter_map(|(h, o)| o.then_some(h))
                .collect();
            let h = hints.clone();
            let r = self.sh.blocking(move || h.delivered(pid, &done)).await;
            if let Some(Err(e)) = r {
                tracing::warn!(error = %e, "removing delivered hints failed");
            }
            let pace = Duration::from_secs_f64(sent as f64 / rate);
            let spent = started.elapsed();
            if failed {
                tokio::time::sleep(Duration::from_millis(500)).await;
            } else if spent < pace {
                tokio::time::sleep(pace - spent).await;
            }
        }
    }
}
