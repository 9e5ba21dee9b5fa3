//! Who the members are and where each key lives, as the client sees it:
//! fetched from the nodes' cluster views (`GET /v0/cluster`, the head
//! typed in `strata_api::view`), checked for agreement, and turned into a
//! placement (`strata_api::placement`, the nodes' own). A URL that does not
//! answer a cluster view is not a Strata node; members that report
//! different member lists for the same layout disagree, and the client
//! refuses to guess. Owns the view; must not send data requests.

use std::sync::Arc;
use strata_api::routes;

use strata_api::placement::{member_id, normalize_url, Placement};
use strata_api::view::ClusterHead;

use crate::conn::Conn;
use crate::health::{Health, HealthConfig};
use crate::stream::{Access, Target};
use crate::Error;

/// The members of one layout, with what routing needs.
#[derive(Debug)]
pub struct Members {
    /// The layout's version (0: a single node outside any layout).
    pub version: u64,
    pub replication: usize,
    /// Every member, in the layout's order.
    pub urls: Vec<String>,
    pub targets: Vec<Target>,
    pub health: Vec<Arc<Health>>,
    /// Placement of writes (the layout's members) and of reads (the
    /// previous layout's while a change is not synced), as indices into
    /// `urls`.
    pub writes: Placement,
    write_index: Vec<usize>,
    pub reads: Placement,
    read_index: Vec<usize>,
}

impl Members {
    /// Build from a view; members already known keep their health.
    pub fn from_view(
        v: &ClusterHead,
        previous: Option<&Members>,
        origin: std::time::Instant,
        (health, access): (&HealthConfig, &Access),
    ) -> Result<Members, Error> {
        let mut urls: Vec<String> = v
            .layout
            .members
            .iter()
            .map(|u| normalize_url(u).to_string())
            .collect();
        // A single node outside any layout: itself.
        if urls.is_empty() {
            urls.push(normalize_url(&v.node).to_string());
        }
        let read_urls: Vec<String> = if v.layout.members.is_empty() {
            urls.clone()
        } else {
            v.layout
                .read_members()
                .iter()
                .map(|u| normalize_url(u).to_string())
                .collect()
        };
        for u in &read_urls {
            if !urls.contains(u) {
                urls.push(u.clone());
            }
        }
        let mut targets = Vec::with_capacity(urls.len());
        for u in &urls {
            targets.push(
                Target::parse_with(u, access).map_err(|e| Error::View(format!("member {e}")))?,
            );
        }
        let health = urls
            .iter()
            .map(|u| {
                previous
                    .and_then(|p| p.index_of(u).map(|i| p.health[i].clone()))
                    .unwrap_or_else(|| Arc::new(Health::new(origin, health)))
            })
            .collect();
        let write_urls = &urls[..v.layout.members.len().max(1)];
        let index = |list: &[String]| -> Vec<usize> {
            list.iter()
                .map(|u| urls.iter().position(|x| x == u).expect("listed"))
                .collect()
        };
        let placement =
            |list: &[String]| Placement::new(list.iter().map(|u| member_id(u)).collect());
        Ok(Members {
            version: v.layout.version,
            replication: v.replication.max(1),
            writes: placement(write_urls),
            write_index: index(write_urls),
            reads: placement(&read_urls),
            read_index: index(&read_urls),
            urls,
            targets,
            health,
        })
    }

    pub fn len(&self) -> usize {
        self.urls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }

    pub fn index_of(&self, url: &str) -> Option<usize> {
        let url = normalize_url(url);
        self.urls.iter().position(|u| u == url)
    }

    /// Every member ordered for `key`: its replicas first (the first
    /// `replication` of its preference list), the rest after; indices
    /// into `urls`.
    pub fn preference(&self, key: &[u8], read: bool) -> Vec<usize> {
        let (p, index) = if read {
            (&self.reads, &self.read_index)
        } else {
            (&self.writes, &self.write_index)
        };
        let mut out: Vec<usize> = p.preference(key).into_iter().map(|m| index[m]).collect();
        for i in 0..self.urls.len() {
            if !out.contains(&i) {
                out.push(i);
            }
        }
        out
    }
}

/// Fetch one node's cluster view.
pub async fn fetch(target: &Target, url: &str) -> Result<ClusterHead, Error> {
    let mut conn = Conn::new(target.clone());
    let mut body = Vec::new();
    let a = conn
        .request_into("GET", routes::CLUSTER, b"", &mut body)
        .await
        .map_err(|e| Error::Unreachable(format!("{url}: {e}")))?;
    let not_strata = |why: String| {
        Error::NotStrata(format!("{url} is not a Strata node: GET /v0/cluster {why}"))
    };
    let said = || crate::said(&body);
    match a.status {
        200 => {}
        401 => {
            return Err(Error::Unauthorized {
                url: url.to_string(),
                reason: said(),
            })
        }
        403 => {
            return Err(Error::Forbidden {
                url: url.to_string(),
                reason: said(),
            })
        }
        s => return Err(not_strata(format!("answered {s}: {}", said()))),
    }
    serde_json::from_slice::<ClusterHead>(&body).map_err(|e| {
        not_strata(format!(
            "answered something that is not a cluster view ({e})"
        ))
    })
}

/// The view to use from several nodes' views: the newest layout, which
/// every node reporting that version must agree on.
pub fn choose(views: &[(String, ClusterHead)]) -> Result<&ClusterHead, Error> {
    let newest = views
        .iter()
        .max_by_key(|(_, v)| v.layout.version)
        .ok_or_else(|| Error::View("no node answered".into()))?;
    for (url, v) in views {
        if v.layout.version == newest.1.layout.version
            && v.layout.members != newest.1.layout.members
        {
            return Err(Error::Disagree(format!(
                "{} and {url} disagree on the members of layout {}: {:?} against {:?}",
                newest.0, v.layout.version, newest.1.layout.members, v.layout.members
            )));
        }
    }
    Ok(&newest.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_api::view::Layout;

    fn view(node: &str, version: u64, members: &[&str]) -> ClusterHead {
        ClusterHead {
            node: node.into(),
            replication: 2,
            members: vec![],
            layout: Layout {
                version,
                stage: "stable".into(),
                replication: 2,
                members: members.iter().map(|s| s.to_string()).collect(),
                previous: None,
            },
        }
    }

    #[test]
    fn the_newest_layout_wins_and_disagreement_is_an_error() {
        let a = "http://127.0.0.1:7001";
        let b = "http://127.0.0.1:7002";
        let c = "http://127.0.0.1:7003";
        let vs = vec![
            (a.to_string(), view(a, 1, &[a, b])),
            (b.to_string(), view(b, 2, &[a, b, c])),
        ];
        assert_eq!(choose(&vs).unwrap().layout.members.len(), 3);
        let vs = vec![
            (a.to_string(), view(a, 2, &[a, b])),
            (b.to_string(), view(b, 2, &[a, c])),
        ];
        let e = choose(&vs).unwrap_err().to_string();
        assert!(e.contains("disagree on the members of layout 2"), "{e}");
    }

    #[test]
    fn replicas_come_first_and_match_the_nodes_placement() {
        let urls = [
            "http://127.0.0.1:7001",
            "http://127.0.0.1:7002",
            "http://127.0.0.1:7003",
        ];
        let v = view(urls[0], 1, &urls);
        let m = Members::from_view(
            &v,
            None,
            std::time::Instant::now(),
            (&HealthConfig::default(), &Access::default()),
        )
        .unwrap();
        let nodes = Placement::new(urls.iter().map(|u| member_id(u)).collect());
        for k in 0..500u32 {
            let key = k.to_be_bytes();
            let ours = m.preference(&key, false);
            assert_eq!(ours.len(), 3);
            assert_eq!(&ours[..2], &nodes.replicas(&key, 2)[..]);
        }
    }
}
