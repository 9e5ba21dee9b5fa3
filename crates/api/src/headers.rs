//! Headers a node adds beyond HTTP's own, and what they promise to a
//! client. Owns the names; must not set or read them.

/// On a `503`: the node refused the request before acting on it (admission
/// control, a node not serving, a connection that waited too long to be
/// accepted), so a write refused with it was not applied anywhere and a
/// client may send it to another node. A `503` without it (a replica
/// queue full part way through a write) promises nothing.
pub const NOT_APPLIED: &str = "strata-not-applied";
