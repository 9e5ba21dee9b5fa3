//! Where a key lives: rendezvous (highest random weight) hashing. Every
//! member gets a score for the key, `xxh3(key, seed = member id)`; the
//! preference list orders all members by score, highest first, and a key's
//! replicas for `from = F` are the first F. So the replica sets of a key are
//! nested (`from = 2` is within `from = 3`), every node computes the same
//! list from the same member ids, and when a member joins or leaves only
//! the keys for which it scores among the first F move. A member's id is a
//! hash of its URL (`member_id`). The nodes place keys with it and clients
//! route with it: one implementation, so a client sends each key to a node
//! that holds it. Owns the mapping from keys to members; must not know
//! whether members are up.

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// A member's id: a hash of its URL (normalized).
pub fn member_id(url: &str) -> u64 {
    xxh3_64(normalize_url(url).as_bytes())
}

/// URLs compare without a trailing slash.
pub fn normalize_url(url: &str) -> &str {
    url.trim().trim_end_matches('/')
}

/// Members are indices into the cluster's member list; their ids seed the
/// scores.
#[derive(Clone, Debug)]
pub struct Placement {
    ids: Vec<u64>,
}

/// A preference list: member indices, best first. Clusters are small (a
/// handful to a few dozen nodes), so the list is computed per request.
pub type Preference = Vec<usize>;

impl Placement {
    pub fn new(ids: Vec<u64>) -> Placement {
        Placement { ids }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The key's score on one member.
    #[inline]
    pub fn score(&self, key: &[u8], member: usize) -> u64 {
        xxh3_64_with_seed(key, self.ids[member])
    }

    /// All members ordered by their score for `key`, highest first (ties,
    /// which need a 64-bit collision, go to the lower id).
    pub fn preference(&self, key: &[u8]) -> Preference {
        let mut scored: Vec<(u64, u64, usize)> = (0..self.ids.len())
            .map(|m| (self.score(key, m), u64::MAX - self.ids[m], m))
            .collect();
        scored.sort_unstable_by(|a, b| b.cmp(a));
        scored.into_iter().map(|(_, _, m)| m).collect()
    }

    /// The first `from` members of the key's preference list.
    pub fn replicas(&self, key: &[u8], from: usize) -> Preference {
        let mut p = self.preference(key);
        p.truncate(from);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<u64> {
        (0..n)
            .map(|i| member_id(&format!("http://127.0.0.1:{}", 7001 + i)))
            .collect()
    }

    #[test]
    fn replica_sets_are_nested_and_agree() {
        let p = Placement::new(ids(5));
        // Another node lists the members in another order: same sets.
        let mut shuffled = ids(5);
        shuffled.reverse();
        let q = Placement::new(shuffled.clone());
        for k in 0..1000u32 {
            let key = k.to_be_bytes();
            let full = p.preference(&key);
            assert_eq!(full.len(), 5);
            for f in 1..=5 {
                assert_eq!(&p.replicas(&key, f)[..], &full[..f]);
            }
            let theirs: Vec<u64> = q.preference(&key).iter().map(|&m| shuffled[m]).collect();
            let ours: Vec<u64> = full.iter().map(|&m| p.ids[m]).collect();
            assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn a_join_moves_only_keys_the_new_member_wins() {
        let before = Placement::new(ids(4));
        let after = Placement::new(ids(5));
        let mut moved = 0;
        let n = 20_000u32;
        for k in 0..n {
            let key = k.to_le_bytes();
            let a: Vec<u64> = before
                .replicas(&key, 2)
                .iter()
                .map(|&m| before.ids[m])
                .collect();
            let b: Vec<u64> = after
                .replicas(&key, 2)
                .iter()
                .map(|&m| after.ids[m])
                .collect();
            if a != b {
                moved += 1;
                // The only change: the newcomer took a place.
                assert!(b.contains(&after.ids[4]));
            }
        }
        // About 2/5 of the keys gain the new member among their 2 replicas.
        let share = moved as f64 / n as f64;
        assert!((0.35..0.45).contains(&share), "{share}");
    }
}
