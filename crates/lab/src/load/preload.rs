//! The load phase before a run: PUT every key a workload says must exist
//! (YCSB's records, the keys a `get` workload reads), as fast as a few
//! connections allow, and fail loudly if the store refuses any (after
//! backing off from 503s for a bounded time). Owns that
//! phase; must not time or report it beyond a count.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use strata_api::routes;

use crate::load::workload::Workload;
use strata_client::conn::{Conn, Target};

/// How long one PUT the node answers 503 to is tried again, and the
/// pause before the next try: doubling from the first, at most the last.
/// (A slow node, say a debug build on one core, refuses 64 connections'
/// worth of PUTs for seconds on end; each PUT backing off leaves it room.)
const BUSY_FOR: Duration = Duration::from_secs(30);
const BUSY_BACKOFF: Duration = Duration::from_millis(10);
const BUSY_BACKOFF_MAX: Duration = Duration::from_millis(500);

/// `path` made the entity route of `key` (cleared first).
fn entity_path(path: &mut String, key: &str) {
    path.clear();
    path.push_str(routes::ENTITY);
    path.push_str("?id=");
    strata_api::query::encode_into(path, key);
}

/// Keys sampled, evenly over the load phase's keys, to tell whether a node
/// already holds them.
pub const SAMPLED: usize = 64;

/// Whether the node already holds the load phase's keys: `SAMPLED` of them,
/// spread evenly over `workload.preload()`, each answered 200 with a value
/// of the size the load phase writes. A second preload of the same keys
/// (a sweep after `strata calibrate`, a second sweep) would only add a
/// version of each, and a range read would then step over both: the run
/// after it would measure a store with twice the work per record.
pub fn already_loaded(target: &Target, workload: &Workload) -> Result<bool, String> {
    let n = workload.preload().count();
    if n == 0 {
        return Ok(false);
    }
    let step = (n / SAMPLED).max(1);
    let sample: Vec<(String, usize)> = workload
        .preload()
        .step_by(step)
        .take(SAMPLED)
        .map(|(k, len)| (k.to_string(), len))
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let mut conn = Conn::new(target.clone());
        for (key, len) in sample {
            let mut path = String::new();
            entity_path(&mut path, &key);
            let a = conn
                .request("GET", &path, &[])
                .await
                .map_err(|e| format!("checking {key}: {e}"))?;
            if a.status != 200 || a.body_bytes != len as u64 {
                return Ok(false);
            }
        }
        Ok(true)
    })
}

/// PUT each of `workload.preload()` over `connections` connections;
/// returns how many keys were written and how long it took.
pub fn preload(
    target: &Target,
    workload: &Workload,
    connections: usize,
) -> Result<(u64, Duration), String> {
    let items = Rc::new(RefCell::new(workload.preload()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let local = tokio::task::LocalSet::new();
    let t0 = Instant::now();
    let n = local.block_on(&rt, async {
        let mut tasks = Vec::new();
        for _ in 0..connections.max(1) {
            let items = items.clone();
            let mut conn = Conn::new(target.clone());
            tasks.push(tokio::task::spawn_local(async move {
                let mut value = Vec::new();
                let mut path = String::new();
                let mut done = 0u64;
                loop {
                    let Some((key, len)) = items.borrow_mut().next() else {
                        return Ok::<u64, String>(done);
                    };
                    if value.len() < len {
                        value.resize(len, b'v');
                    }
                    entity_path(&mut path, &key);
                    // A node past its capacity answers 503 (and may close
                    // the connection): the load phase backs off and tries
                    // again, as a client should, for a bounded time.
                    let first = Instant::now();
                    let mut pause = BUSY_BACKOFF;
                    let a = loop {
                        let a = conn
                            .request("PUT", &path, &value[..len])
                            .await
                            .map_err(|e| format!("preloading {key}: {e}"))?;
                        if a.status != 503 || first.elapsed() >= BUSY_FOR {
                            break a;
                        }
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(BUSY_BACKOFF_MAX);
                    };
                    if !(200..300).contains(&a.status) {
                        return Err(format!("preloading {key}: status {}", a.status));
                    }
                    done += 1;
                }
            }));
        }
        let mut n = 0;
        for t in tasks {
            n += t.await.map_err(|e| e.to_string())??;
        }
        Ok::<u64, String>(n)
    })?;
    Ok((n, t0.elapsed()))
}
