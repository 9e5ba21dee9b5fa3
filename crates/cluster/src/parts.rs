//! This node's cluster layer put together: what every subsystem shares
//! and each subsystem, built in the order they depend on one another
//! (fence, reaper, anti-entropy and its rounds, coordinator, rebalance),
//! and the peers' internal requests, each handed to the subsystem that
//! answers it. Owns that wiring; must not decide anything itself (the
//! subsystems do) nor know HTTP.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::time::Instant;

use crate::antientropy::{AntiEntropy, Rounds};
use crate::coordinator::Coordinator;
use crate::fence::Fence;
use crate::reaper::Reaper;
use crate::rebalance::Rebalance;
use crate::shared::Shared;
use crate::transport::Handler;
use crate::wire::{Request, Response};

pub(crate) struct Parts {
    pub(crate) shared: Arc<Shared>,
    pub(crate) fence: Arc<Fence>,
    pub(crate) reaper: Arc<Reaper>,
    pub(crate) ae: Arc<AntiEntropy>,
    pub(crate) rounds: Arc<Rounds>,
    pub(crate) coord: Arc<Coordinator>,
    pub(crate) rebalance: Arc<Rebalance>,
}

impl Parts {
    pub(crate) fn new(shared: Arc<Shared>) -> Parts {
        let fence = Arc::new(Fence::new(shared.clone()));
        let reaper = Arc::new(Reaper::new(shared.clone(), fence.clone()));
        let ae = Arc::new(AntiEntropy::new(shared.clone(), reaper.clone()));
        let rounds = Arc::new(Rounds::new(ae.clone(), fence.clone()));
        let coord = Arc::new(Coordinator::new(
            shared.clone(),
            fence.clone(),
            reaper.clone(),
        ));
        let rebalance = Arc::new(Rebalance::new(
            shared.clone(),
            coord.clone(),
            rounds.clone(),
        ));
        Parts {
            shared,
            fence,
            reaper,
            ae,
            rounds,
            coord,
            rebalance,
        }
    }
}

impl Handler for Parts {
    fn handle(
        self: Arc<Self>,
        _from: u64,
        req: Request,
    ) -> Pin<Box<dyn Future<Output = Response> + Send>> {
        Box::pin(async move {
            match req {
                Request::Write { key, record } => {
                    match self.reaper.apply_fresh(key, record).await {
                        (Ok(o), t) => Response::Written(o, t),
                        (Err(e), _) => e.into_response(),
                    }
                }
                Request::Repair { key, record } => {
                    match self.shared.store.apply_timed(key, record).await {
                        (Ok(o), t) => Response::Written(o, t),
                        (Err(e), _) => e.into_response(),
                    }
                }
                Request::Read { key } => match self.shared.store.read(&key) {
                    Ok(r) => Response::Read(r),
                    Err(e) => e.into_response(),
                },
                Request::Version { key, write } => match self.shared.store.read(&key) {
                    Ok(r) => Response::Version(
                        r.as_ref().map(|r| r.version),
                        write.and_then(|w| r.as_ref().and_then(|r| r.applied(w))),
                    ),
                    Err(e) => e.into_response(),
                },
                Request::Ping => Response::Pong,
                Request::Scan { start, end, limit } => {
                    self.coord.scan_page(&start, end.as_deref(), limit)
                }
                Request::Hashes {
                    set,
                    level,
                    branches,
                } => self.ae.answer_hashes(set, level, &branches),
                Request::Keys {
                    set,
                    all,
                    leaves,
                    after,
                    limit,
                } => self.ae.keys_request(set, all, leaves, after, limit).await,
                Request::Fetch { keys } => self.ae.answer_fetch(&keys),
                Request::Push { entries } => self.ae.answer_push(entries).await,
                Request::Layout { state, cleanup } => {
                    self.rebalance
                        .clone()
                        .answer_layout(Some((state, cleanup)))
                        .await
                }
                Request::LayoutGet => self.rebalance.clone().answer_layout(None).await,
            }
        })
    }

    fn heard(&self, from: u64) {
        // Every frame heard: a read guard, not a clone of the topology.
        let t = self.shared.topo.read();
        if let Some(i) = t.members.iter().position(|m| m.id == from) {
            t.detectors[i].heard(Instant::now());
        }
    }
}
