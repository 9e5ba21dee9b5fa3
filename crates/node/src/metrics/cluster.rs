//! The cluster's part of `/metrics`: its members and their states, hints,
//! anti-entropy and its ranges, the scrub, rebalancing, the coordinator's
//! and the replicas' counts. Owns turning the cluster's snapshot and stats
//! into metric families; must not keep state of its own.

use std::sync::atomic::Ordering;

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use strata_api::metrics as metric;

use super::state::{counter, gauge, StateCollector};

impl StateCollector {
    pub(super) fn encode_cluster(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let c = &self.cluster;
        let st = c.stats();
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
        counter(
            e,
            metric::NOT_ENOUGH_REPLICAS,
            "Requests answered 504: fewer than ack replicas answered in time",
            get(&st.not_enough_replicas),
        )?;
        counter(
            e,
            metric::CLUSTER_READ_REPAIRS,
            "Stale replicas written back to by reads",
            get(&st.read_repairs),
        )?;
        counter(
            e,
            metric::CLUSTER_SUPERSEDED_RETRIES,
            "Writes stamped again because a replica held a newer version",
            get(&st.superseded_retries),
        )?;
        counter(
            e,
            metric::CLUSTER_REPEATED_WRITES,
            "Writes sent again by a client (the same Strata-Write-Id) whose first phase found an earlier attempt applied: finished at its version, not applied twice",
            get(&st.repeated_writes),
        )?;
        counter(
            e,
            metric::CLUSTER_STAMPED_PAST_NEWER,
            "Writes stamped past a version newer than this node's clock (found by their first phase, or by a replica holding it)",
            get(&st.stamped_past_newer),
        )?;
        counter(
            e,
            metric::CLUSTER_CLOCK_CLAMPED,
            "Peer timestamps too far ahead of this node's clock, followed only up to the bound",
            c.hlc().clamped.load(Ordering::Relaxed) as f64,
        )?;
        let rs = c.reaper_stats();
        counter(
            e,
            metric::CLUSTER_TOMBSTONES_PURGED,
            "Tombstones dropped after the grace period, once every member held them or newer",
            get(&rs.purged),
        )?;
        counter(
            e,
            metric::CLUSTER_TOMBSTONES_KEPT,
            "Tombstones past the grace period kept because a member was down, silent or behind",
            get(&rs.kept),
        )?;
        counter(
            e,
            metric::CLUSTER_WRITES_TOO_OLD,
            "Fresh writes refused (to be stamped again) because stamped longer ago than the tombstone grace period",
            get(&rs.refused_old),
        )?;
        let ae = c.anti_entropy_stats();
        for (name, help, v) in [
            (
                metric::ANTIENTROPY_EXCHANGES,
                "Anti-entropy exchanges this node started (one home set with one peer)",
                &ae.exchanges,
            ),
            (
                metric::ANTIENTROPY_FAILED,
                "Anti-entropy exchanges that failed (a peer silent, down or still building its trees)",
                &ae.failed,
            ),
            (
                metric::ANTIENTROPY_PULLED,
                "Records fetched from peers by anti-entropy and applied here",
                &ae.pulled,
            ),
            (
                metric::ANTIENTROPY_PUSHED,
                "Records this node's exchanges pushed to peers and they applied",
                &ae.pushed,
            ),
            (
                metric::ANTIENTROPY_ALREADY_THERE,
                "Records an exchange moved that the receiver already held (overstreaming)",
                &ae.already_there,
            ),
            (
                metric::ANTIENTROPY_SENT_BYTES,
                "Bytes of anti-entropy frames this node's exchanges sent",
                &ae.bytes_sent,
            ),
            (
                metric::ANTIENTROPY_RECEIVED_BYTES,
                "Bytes of anti-entropy frames this node's exchanges received",
                &ae.bytes_received,
            ),
            (
                metric::ANTIENTROPY_APPLIED_FROM_PEERS,
                "Records peers' exchanges pushed here that were applied",
                &ae.received,
            ),
        ] {
            counter(e, name, help, get(v))?;
        }
        let view = c.snapshot();
        let pairs: Vec<Option<std::time::Duration>> = view
            .ranges
            .iter()
            .flat_map(|r| r.synced.iter().map(|s| s.1))
            .collect();
        if !pairs.is_empty() {
            gauge(
                e,
                metric::ANTIENTROPY_OLDEST_SYNC_SECONDS,
                "Age of the oldest completed exchange over this node's ranges and their other replicas (0 before any)",
                pairs
                    .iter()
                    .flatten()
                    .map(|d| d.as_secs_f64())
                    .fold(0.0, f64::max),
            )?;
            gauge(
                e,
                metric::ANTIENTROPY_NEVER_SYNCED,
                "Pairs of (range, other replica) not yet exchanged since this node started",
                pairs.iter().filter(|p| p.is_none()).count() as f64,
            )?;
        }
        gauge(
            e,
            metric::CLUSTER_MEMBERS,
            "Members of the cluster, this node included",
            view.members.len() as f64,
        )?;
        let peers: Vec<_> = view.members.iter().filter(|m| !m.is_self).collect();
        let mut fam = e.encode_descriptor(
            metric::CLUSTER_MEMBER_STATE,
            "This node's failure detector: 1 for the state each peer is in",
            None,
            ConstGauge::new(0i64).metric_type(),
        )?;
        for m in &peers {
            for s in [
                strata_cluster::State::Up,
                strata_cluster::State::Suspect,
                strata_cluster::State::Down,
            ] {
                ConstGauge::new((m.state == s) as i64).encode(fam.encode_family(&[
                    ("peer", m.url.clone()),
                    ("state", s.as_str().to_string()),
                ])?)?;
            }
        }
        type HintField = fn(&strata_cluster::PeerHints) -> u64;
        let hint_metrics: [(&str, &str, HintField, bool); 5] = [
            (
                metric::HINTS_PENDING,
                "Hints waiting for each peer",
                |h| h.count,
                false,
            ),
            (
                metric::HINTS_PENDING_BYTES,
                "Bytes of hints waiting for each peer",
                |h| h.bytes,
                false,
            ),
            (
                metric::HINTS_WRITTEN,
                "Hints kept for each peer",
                |h| h.written,
                true,
            ),
            (
                metric::HINTS_DELIVERED,
                "Hints delivered to each peer",
                |h| h.delivered,
                true,
            ),
            (
                metric::HINTS_DROPPED,
                "Hints dropped (over the byte bound, expired, or the writer queue full), by peer",
                |h| h.dropped,
                true,
            ),
        ];
        for (name, help, f, is_counter) in hint_metrics {
            if is_counter {
                let mut fam =
                    e.encode_descriptor(name, help, None, ConstCounter::new(0u64).metric_type())?;
                for m in &peers {
                    ConstCounter::new(f(&m.hints))
                        .encode(fam.encode_family(&[("peer", m.url.clone())])?)?;
                }
            } else {
                let mut fam =
                    e.encode_descriptor(name, help, None, ConstGauge::new(0i64).metric_type())?;
                for m in &peers {
                    ConstGauge::new(f(&m.hints) as i64)
                        .encode(fam.encode_family(&[("peer", m.url.clone())])?)?;
                }
            }
        }
        Ok(())
    }
}
