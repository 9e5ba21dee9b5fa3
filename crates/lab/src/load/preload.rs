//! The load phase before a run: PUT every key a workload says must exist
//! (YCSB's records, the keys a `get` workload reads), as fast as a few
//! connections allow, and fail loudly if the store refuses any (after
//! backing off from 503s a bounded number of times). Owns that
//! phase; must not time or report it beyond a count.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::load::workload::Workload;
use strata_client::conn::{Conn, Target};

/// Tries of one PUT the node answers 503 to, and the pause before the
/// next, times the tries so far.
const BUSY_TRIES: u32 = 20;
const BUSY_BACKOFF: Duration = Duration::from_millis(10);

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
                    path.clear();
                    path.push_str("/v0/entity?id=");
                    strata_api::query::encode_into(&mut path, &key);
                    // A node past its capacity answers 503 (and may close
                    // the connection): the load phase backs off and tries
                    // again, as a client should, a bounded number of times.
                    let mut tries = 0;
                    let a = loop {
                        let a = conn
                            .request("PUT", &path, &value[..len])
                            .await
                            .map_err(|e| format!("preloading {key}: {e}"))?;
                        tries += 1;
                        if a.status != 503 || tries >= BUSY_TRIES {
                            break a;
                        }
                        tokio::time::sleep(BUSY_BACKOFF * tries).await;
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
