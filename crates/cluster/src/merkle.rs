//! Tictac Merkle trees (Riak's "tictac" anti-entropy): what a replica
//! holds, summarised so that two replicas find what differs between them
//! by exchanging a few KiB. Every stored record contributes one 64-bit
//! hash of (key, version, tombstone) to one of 65,536 leaves, chosen by a
//! hash of the key; a leaf is the XOR of its records' hashes, a branch the
//! XOR of its 256 leaves, the root the XOR of the 256 branches. XOR makes
//! the tree incremental: a write replacing version A by version B toggles
//! hash(A) out and hash(B) in, on the leaf, its branch and the root, and
//! the order of toggles never matters, so nothing is ever rebuilt by
//! scanning (a process start builds each tree once, see `store`).
//!
//! Keys are grouped by their home set: the first `replication` members of
//! their preference list. One tree per home set, so two members compare
//! exactly the keys both should hold. A set is named by a hash of its
//! members' ids, the same on every node whatever order its member list is
//! in.
//!
//! Owns the hashes, the trees and the set names; must not read the store,
//! talk to peers or decide what to repair (`antientropy` does).

use std::collections::HashMap;

use xxhash_rust::xxh3::{xxh3_64_with_seed, Xxh3};

use crate::record::Version;

/// Branches of a tree (the first level below the root).
pub const BRANCHES: usize = 256;
/// Leaves under each branch.
pub const LEAVES_PER_BRANCH: usize = 256;
/// Leaves of a tree: 65,536, so that a million keys put about fifteen in
/// a leaf, and one changed key costs the exchange of its leaf's keys only.
pub const LEAVES: usize = BRANCHES * LEAVES_PER_BRANCH;

const LEAF_SEED: u64 = 0x7469_6374_6163_6c66; // "tictaclf"
const ENTRY_SEED: u64 = 0x7469_6374_6163_656e; // "tictacen"
const SET_SEED: u64 = 0x7469_6374_6163_7374; // "tictacst"

/// The leaf a key falls in (0..LEAVES).
#[inline]
pub fn leaf_of(key: &[u8]) -> u32 {
    (xxh3_64_with_seed(key, LEAF_SEED) >> 48) as u32
}

/// The hash one stored record contributes to its leaf.
#[inline]
pub fn entry_hash(key: &[u8], version: Version, tombstone: bool) -> u64 {
    let mut h = Xxh3::with_seed(ENTRY_SEED);
    h.update(&(key.len() as u32).to_le_bytes());
    h.update(key);
    h.update(&version.hlc.to_le_bytes());
    h.update(&version.node.to_le_bytes());
    h.update(&[tombstone as u8]);
    h.digest()
}

/// The name of a home set: the XOR of its members' hashed ids, so any
/// order gives the same name without sorting (a set has no member twice).
pub fn set_name(member_ids: impl IntoIterator<Item = u64>) -> u64 {
    member_ids.into_iter().fold(0, |a, id| {
        a ^ xxh3_64_with_seed(&id.to_le_bytes(), SET_SEED)
    })
}

/// The home set of `key`: the name of its first `rf` members.
pub fn home_name(p: &strata_api::placement::Placement, ids: &[u64], rf: usize, key: &[u8]) -> u64 {
    set_name(p.replicas(key, rf).into_iter().map(|m| ids[m]))
}

/// One home set's tree.
#[derive(Clone)]
pub struct Tree {
    leaves: Box<[u64]>,
    branches: Box<[u64]>,
    root: u64,
    /// Records counted in (toggled in less toggled out).
    keys: i64,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            leaves: vec![0; LEAVES].into_boxed_slice(),
            branches: vec![0; BRANCHES].into_boxed_slice(),
            root: 0,
            keys: 0,
        }
    }
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tree {{ root: {:016x}, keys: {} }}",
            self.root, self.keys
        )
    }
}

impl Tree {
    /// Toggle a record's hash: in if it was not counted, out if it was.
    #[inline]
    fn toggle(&mut self, key: &[u8], version: Version, tombstone: bool) {
        let h = entry_hash(key, version, tombstone);
        let leaf = leaf_of(key) as usize;
        self.leaves[leaf] ^= h;
        self.branches[leaf / LEAVES_PER_BRANCH] ^= h;
        self.root ^= h;
    }

    /// A record is now stored.
    pub fn add(&mut self, key: &[u8], version: Version, tombstone: bool) {
        self.toggle(key, version, tombstone);
        self.keys += 1;
    }

    /// A record is no longer stored.
    pub fn remove(&mut self, key: &[u8], version: Version, tombstone: bool) {
        self.toggle(key, version, tombstone);
        self.keys -= 1;
    }

    pub fn root(&self) -> u64 {
        self.root
    }

    pub fn keys(&self) -> u64 {
        self.keys.max(0) as u64
    }

    pub fn branches(&self) -> &[u64] {
        &self.branches
    }

    /// The leaves under `branch`.
    pub fn leaves(&self, branch: usize) -> &[u64] {
        &self.leaves[branch * LEAVES_PER_BRANCH..(branch + 1) * LEAVES_PER_BRANCH]
    }
}

/// Indices where two equally long hash lists differ.
pub fn differing(a: &[u64], b: &[u64]) -> Vec<usize> {
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(i, _)| i)
        .collect()
}

/// Every home set's tree on one node, by set name.
#[derive(Debug, Default)]
pub struct Trees {
    trees: HashMap<u64, Tree>,
}

impl Trees {
    pub fn add(&mut self, set: u64, key: &[u8], version: Version, tombstone: bool) {
        self.trees
            .entry(set)
            .or_default()
            .add(key, version, tombstone);
    }

    pub fn remove(&mut self, set: u64, key: &[u8], version: Version, tombstone: bool) {
        self.trees
            .entry(set)
            .or_default()
            .remove(key, version, tombstone);
    }

    /// The tree of `set` (an empty one's hashes are all zero).
    pub fn get(&self, set: u64) -> Option<&Tree> {
        self.trees.get(&set)
    }

    /// Root of `set`'s tree (0 when it holds nothing).
    pub fn root(&self, set: u64) -> u64 {
        self.trees.get(&set).map_or(0, |t| t.root)
    }

    /// Branch hashes of `set` (all zero when it holds nothing).
    pub fn branches(&self, set: u64) -> Vec<u64> {
        self.trees
            .get(&set)
            .map_or_else(|| vec![0; BRANCHES], |t| t.branches.to_vec())
    }

    /// Leaf hashes of `set` under each of `branches`, concatenated.
    pub fn leaves(&self, set: u64, branches: &[u16]) -> Vec<u64> {
        let mut out = Vec::with_capacity(branches.len() * LEAVES_PER_BRANCH);
        for &b in branches {
            match self.trees.get(&set) {
                Some(t) => out.extend_from_slice(t.leaves(b as usize % BRANCHES)),
                None => out.extend(std::iter::repeat_n(0, LEAVES_PER_BRANCH)),
            }
        }
        out
    }

    pub fn keys(&self, set: u64) -> u64 {
        self.trees.get(&set).map_or(0, |t| t.keys())
    }

    /// The names of the sets held.
    pub fn sets(&self) -> Vec<u64> {
        self.trees.keys().copied().collect()
    }

    /// Fold another node-local set of trees into these (XOR: the result
    /// counts the records of both).
    pub fn merge(&mut self, other: Trees) {
        for (set, t) in other.trees {
            let mine = self.trees.entry(set).or_default();
            for (a, b) in mine.leaves.iter_mut().zip(t.leaves.iter()) {
                *a ^= b;
            }
            for (a, b) in mine.branches.iter_mut().zip(t.branches.iter()) {
                *a ^= b;
            }
            mine.root ^= t.root;
            mine.keys += t.keys;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(hlc: u64) -> Version {
        Version { hlc, node: 7 }
    }

    #[test]
    fn leaves_are_spread_and_stable() {
        let mut seen = vec![0u32; BRANCHES];
        for k in 0..100_000u32 {
            let l = leaf_of(&k.to_be_bytes());
            assert!((l as usize) < LEAVES);
            seen[l as usize / LEAVES_PER_BRANCH] += 1;
        }
        // About 390 keys a branch; none far off.
        assert!(seen.iter().all(|&n| (250..550).contains(&n)), "{seen:?}");
        assert_eq!(leaf_of(b"k"), leaf_of(b"k"));
        assert_eq!(set_name([1, 2, 3]), set_name([3, 1, 2]));
        assert_ne!(set_name([1, 2, 3]), set_name([1, 2, 4]));
    }

    #[test]
    fn one_changed_record_shows_in_one_branch_and_one_leaf() {
        let mut a = Tree::default();
        let mut b = Tree::default();
        for k in 0..10_000u32 {
            a.add(&k.to_be_bytes(), v(1), false);
            b.add(&k.to_be_bytes(), v(1), false);
        }
        assert_eq!(a.root(), b.root());
        // A newer version on b: out the old, in the new.
        let key = 4242u32.to_be_bytes();
        b.remove(&key, v(1), false);
        b.add(&key, v(2), false);
        assert_ne!(a.root(), b.root());
        let br = differing(a.branches(), b.branches());
        assert_eq!(br, [leaf_of(&key) as usize / LEAVES_PER_BRANCH]);
        let lv = differing(a.leaves(br[0]), b.leaves(br[0]));
        assert_eq!(
            lv.iter()
                .map(|l| br[0] * LEAVES_PER_BRANCH + l)
                .collect::<Vec<_>>(),
            [leaf_of(&key) as usize]
        );
        // A tombstone of the same version is another record.
        assert_ne!(entry_hash(&key, v(2), false), entry_hash(&key, v(2), true));
        assert_eq!(a.keys(), 10_000);
    }

    proptest! {
        // Whatever order writes arrive in, and whatever was overwritten or
        // removed on the way, the tree equals one built from the final
        // contents alone.
        #[test]
        fn incremental_equals_built_from_scratch(ops in proptest::collection::vec((0u8..40, 1u64..6, any::<bool>(), any::<bool>()), 0..300)) {
            let mut stored: HashMap<u8, (Version, bool)> = HashMap::new();
            let mut inc = Tree::default();
            for (k, hlc, tomb, purge) in ops {
                let key = [k];
                if purge {
                    if let Some((old, t)) = stored.remove(&k) {
                        inc.remove(&key, old, t);
                    }
                    continue;
                }
                if let Some((old, t)) = stored.insert(k, (v(hlc), tomb)) {
                    inc.remove(&key, old, t);
                }
                inc.add(&key, v(hlc), tomb);
            }
            let mut fresh = Tree::default();
            for (k, (ver, t)) in &stored {
                fresh.add(&[*k], *ver, *t);
            }
            prop_assert_eq!(inc.root(), fresh.root());
            prop_assert_eq!(inc.branches(), fresh.branches());
            prop_assert_eq!(&inc.leaves[..], &fresh.leaves[..]);
            prop_assert_eq!(inc.keys(), stored.len() as u64);
        }
    }
}
