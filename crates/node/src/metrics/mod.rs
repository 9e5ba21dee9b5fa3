//! Prometheus metrics of a node (`GET /metrics`, the `prometheus-client`
//! crate): requests by method and status, latency by method, admission,
//! the engine's counters and shape, WAL fsync latency and commit-group size,
//! and the process's CPU, memory and file descriptors. Names follow
//! Prometheus conventions and are listed in docs/operations.md. Owns the
//! registry and the engine event listener that feeds it (here), and what
//! is read at scrape time (`state`; the cluster's families: `cluster`; the
//! machine's evidence: `evidence`; the process's own figures: `process`; each thread's times:
//! `threads`);
//! must not decide anything from the
//! numbers.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use strata_api::metrics as metric;
use strata_cluster::{Cluster, OpKind};
use strata_engine::{Event, EventListener};

use crate::admission::Admission;
use crate::overload::Guard;

mod cluster;
mod evidence;
mod process;
mod state;
mod threads;

pub use process::{process, ProcessStats};
use state::StateCollector;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: &'static str,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabels {
    pub method: &'static str,
}

/// A method as a label without allocating: the ones the API answers, and
/// "other" for the rest (every request is counted, the label set stays
/// bounded whatever clients send).
fn method_label(method: &str) -> &'static str {
    match method {
        "GET" => "GET",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "OPTIONS" => "OPTIONS",
        "PATCH" => "PATCH",
        _ => "other",
    }
}

/// Histograms fed by engine events, on the engine's threads.
#[derive(Debug)]
pub struct EngineEvents {
    pub wal_fsync: Histogram,
    pub commit_group: Histogram,
}

impl Default for EngineEvents {
    fn default() -> Self {
        EngineEvents {
            // 16 µs .. ~0.5 s
            wal_fsync: Histogram::new(exponential_buckets(16e-6, 2.0, 16)),
            commit_group: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
        }
    }
}

impl EventListener for EngineEvents {
    fn on_event(&self, e: &Event) {
        crate::probes::engine_event(e);
        if let Event::TableQuarantined {
            file,
            offset,
            reason,
            moved_to,
        } = e
        {
            tracing::error!(
                file = %file.display(),
                offset,
                reason = %reason,
                moved_to = %moved_to.display(),
                "a table failed its checksum and was set aside; its keys are repaired from the replicas"
            );
        }
        if let Event::WalCommit { writes, sync, .. } = e {
            self.commit_group.observe(*writes as f64);
            if let Some(d) = sync {
                self.wal_fsync.observe(d.as_secs_f64());
            }
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReplicaLabels {
    pub peer: String,
    pub op: String,
}

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<MethodLabels, Histogram>,
    replica_latency: Family<ReplicaLabels, Histogram>,
    replica_errors: Family<ReplicaLabels, Counter>,
}

/// Turns the cluster's replica operations into metrics and USDT probes.
pub struct ClusterObserver {
    latency: Family<ReplicaLabels, Histogram>,
    errors: Family<ReplicaLabels, Counter>,
}

impl strata_cluster::Observer for ClusterObserver {
    fn replica_send(&self, id: u64, peer: &str, op: OpKind) {
        crate::probes::replica__send!(|| (id, peer, op.as_str()));
    }
    fn replica_answer(&self, id: u64, peer: &str, op: OpKind, elapsed: Duration, ok: bool) {
        crate::probes::replica__answer!(|| (
            id,
            peer,
            op.as_str(),
            ok as u8,
            elapsed.as_micros() as u64
        ));
        let l = ReplicaLabels {
            peer: peer.to_string(),
            op: op.as_str().to_string(),
        };
        self.latency
            .get_or_create(&l)
            .observe(elapsed.as_secs_f64());
        // Created at the first answer, so that a peer's errors are served
        // as 0 before the first one.
        let errors = self.errors.get_or_create(&l);
        if !ok {
            errors.inc();
        }
    }
}

/// A family's name as the registry takes it: without the suffix its
/// encoder adds (`_total` for a counter, the unit's `_seconds`).
fn stem<'a>(name: &'a str, suffix: &str) -> &'a str {
    name.strip_suffix(suffix).unwrap_or(name)
}

/// The unit's suffix the registry adds to a family registered in seconds.
const SECONDS: &str = "_seconds";

impl Metrics {
    pub fn new(events: Arc<EngineEvents>) -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<MethodLabels, Histogram>::new_with_constructor(|| {
            // 25 µs .. ~13 s
            Histogram::new(exponential_buckets(25e-6, 2.0, 20))
        });
        registry.register(
            stem(metric::HTTP_REQUESTS, "_total"),
            "HTTP requests answered, by method and status",
            requests.clone(),
        );
        registry.register_with_unit(
            stem(metric::HTTP_DURATION, SECONDS),
            "Time from a request's arrival in its socket (kernel receive timestamp) to its answer, by method, for requests not refused (503s are counted in strata_http_requests only)",
            prometheus_client::registry::Unit::Seconds,
            latency.clone(),
        );
        registry.register_with_unit(
            stem(metric::FSYNC_DURATION, SECONDS),
            "Duration of each WAL fsync (one per commit group under sync durability)",
            prometheus_client::registry::Unit::Seconds,
            events.wal_fsync.clone(),
        );
        registry.register(
            metric::COMMIT_GROUP,
            "Records (puts and deletes) per WAL commit group: how many writes one fsync carries",
            events.commit_group.clone(),
        );
        let replica_latency = Family::<ReplicaLabels, Histogram>::new_with_constructor(|| {
            // 25 µs .. ~13 s
            Histogram::new(exponential_buckets(25e-6, 2.0, 20))
        });
        registry.register_with_unit(
            stem(metric::REPLICA_DURATION, SECONDS),
            "Replica operations sent to peers, by peer and operation (write, read, version, repair, hint), send to answer",
            prometheus_client::registry::Unit::Seconds,
            replica_latency.clone(),
        );
        let replica_errors = Family::<ReplicaLabels, Counter>::default();
        registry.register(
            stem(metric::REPLICA_ERRORS, "_total"),
            "Replica operations that failed (timeout, connection, refusal), by peer and operation",
            replica_errors.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            replica_latency,
            replica_errors,
        }
    }

    /// The observer to hand to the cluster.
    pub fn cluster_observer(&self) -> Arc<ClusterObserver> {
        Arc::new(ClusterObserver {
            latency: self.replica_latency.clone(),
            errors: self.replica_errors.clone(),
        })
    }

    /// Register the collector of live state (admission, engine, process).
    pub fn watch(
        &mut self,
        admission: Arc<Admission>,
        guard: Arc<Guard>,
        heads: Arc<crate::heads::Heads>,
        cluster: Arc<Cluster>,
        shards: &crate::shards::Shards,
    ) {
        let (service, wait) = admission.histograms();
        self.registry.register_with_unit(
            stem(metric::SERVICE_DURATION, SECONDS),
            "Time each admitted request held its place in service (admission to answer)",
            prometheus_client::registry::Unit::Seconds,
            service,
        );
        self.registry.register_with_unit(
            stem(metric::ADMISSION_WAIT_DURATION, SECONDS),
            "Time each request that had to wait spent waiting (admitted or refused)",
            prometheus_client::registry::Unit::Seconds,
            wait,
        );
        let pauses = crate::evidence::pauses();
        self.registry.register_with_unit(
            stem(metric::PAUSE_LATENESS, SECONDS),
            "How late the pause detector's thread woke from each 5 ms sleep: a stopped or CPU-starved process wakes late",
            prometheus_client::registry::Unit::Seconds,
            pauses.lateness.clone(),
        );
        let runtimes = shards.handles().iter().map(|h| h.metrics()).collect();
        self.registry.register_collector(Box::new(StateCollector {
            admission,
            guard,
            heads,
            cluster,
            runtimes,
            pauses,
        }));
    }

    pub fn observe(&self, method: &str, status: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method_label(method),
                status,
            })
            .inc();
        if status == 503 {
            return;
        }
        self.latency
            .get_or_create(&MethodLabels {
                method: method_label(method),
            })
            .observe(elapsed.as_secs_f64());
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &self.registry).expect("encode metrics");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_the_api_does_not_know_is_one_label_whatever_its_name() {
        let m = Metrics::new(Arc::new(EngineEvents::default()));
        for (i, method) in ["GET", "BREW", "WHEN", "X-1", "PUT"].iter().enumerate() {
            m.observe(method, 400, Duration::from_micros(10 + i as u64));
        }
        let text = m.render();
        let count = |method: &str| {
            text.lines()
                .find_map(|l| {
                    l.strip_prefix(&format!(
                        "strata_http_requests_total{{method=\"{method}\",status=\"400\"}} "
                    ))
                })
                .map(|v| v.to_string())
        };
        assert_eq!(count("GET").as_deref(), Some("1"), "{text}");
        assert_eq!(count("PUT").as_deref(), Some("1"), "{text}");
        assert_eq!(count("other").as_deref(), Some("3"), "{text}");
        assert!(!text.contains("BREW"), "{text}");
    }
}
