//! The background scrub's pace: every 100 ms a step of the engine's
//! checksum scrub (`Db::scrub_step`) over a tenth of `scrub_rate` bytes,
//! on the blocking pool, so a pass over the whole store takes its size
//! divided by the rate. What a step finds is logged with file and offset;
//! the engine has set the table aside, and `quarantine_loop`
//! (`antientropy/schedule.rs`) rebuilds the trees and pulls what this node lost
//! from the replicas. Owns the pacing; must not check blocks itself (the
//! engine does) nor repair (anti-entropy does).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::shared::Shared;

/// How often a step runs.
const EVERY: Duration = Duration::from_millis(100);

/// Scrub the local store at `inner.cfg.scrub_rate` bytes a second until
/// the cluster closes (never when the rate is 0).
pub(crate) async fn run(inner: Arc<Shared>) {
    let rate = inner.cfg.scrub_rate;
    if rate == 0 {
        return;
    }
    let per_step = (rate / 10).max(1);
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        let db = inner.store.db().clone();
        let Ok(step) = tokio::task::spawn_blocking(move || db.scrub_step(per_step)).await else {
            return;
        };
        if let Some(e) = step.found {
            tracing::error!(
                error = %e,
                "the scrub found a damaged table: set aside, its records are pulled from the replicas"
            );
        }
    }
}
