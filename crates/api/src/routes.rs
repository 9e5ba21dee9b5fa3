//! The paths a node serves (`spec/api.md`), written once: the node's
//! router and access rules match them, clients, the lab and the operator
//! CLI build requests from them. Owns the paths; must not build a query
//! string (`query` writes keys) or know a handler.

/// One key: GET, PUT, DELETE with `?id=`.
pub const ENTITY: &str = "/v0/entity";
/// A range of keys: GET with `?start=` and `&end=`.
pub const ENTITIES: &str = "/v0/entities";
/// Health and the node's own summary.
pub const STATUS: &str = "/v0/status";
/// The cluster view (GET) and the operator's changes below it.
pub const CLUSTER: &str = "/v0/cluster";
pub const CLUSTER_REPAIR: &str = "/v0/cluster/repair";
pub const CLUSTER_JOIN: &str = "/v0/cluster/join";
pub const CLUSTER_LEAVE: &str = "/v0/cluster/leave";
/// Backups: POST takes one; `BACKUP/{id}` and `BACKUP/{id}/{file}` below.
pub const BACKUP: &str = "/v0/backup";
/// Peers' replication, with the cluster secret.
pub const INTERNAL: &str = "/v0/internal";
/// The node's metrics, in the Prometheus text format (`exposition`).
pub const METRICS: &str = "/metrics";
/// A CPU profile (pprof) for `?seconds=`.
pub const PROFILE: &str = "/debug/pprof/profile";
/// A heap profile (pprof), when the node was built to take one.
pub const HEAP_PROFILE: &str = "/debug/pprof/heap";
/// The test clock's hook (jumps for the checker's clock faults).
pub const CLOCK: &str = "/debug/clock";
/// The prefix of the debugging endpoints above.
pub const DEBUG: &str = "/debug/";

/// Whether `path` is `base` or a path below it (`base/...`).
pub fn under(path: &str, base: &str) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_under_its_base_and_not_under_a_longer_name() {
        assert!(under("/v0/backup", BACKUP));
        assert!(under("/v0/backup/7/MANIFEST", BACKUP));
        assert!(!under("/v0/backups", BACKUP));
        assert!(!under("/v0/status", BACKUP));
    }
}
