//! Anti-entropy's view of the store: the Merkle trees the applier keeps
//! current, whether they are complete, and how keys map to their home
//! sets. Owns that shared state; must not build or compare trees (that is
//! `merkle` and `antientropy`).

use std::sync::Arc;

use crate::merkle::Trees;

/// The home set (its `merkle::set_name`) of a key.
pub type HomeOf = Arc<dyn Fn(&[u8]) -> u64 + Send + Sync>;

/// The trees and whether they are kept and complete.
#[derive(Default)]
pub struct TreeState {
    pub trees: Trees,
    /// The applier toggles every change in (from the build's snapshot on).
    pub(super) maintained: bool,
    /// The build's scan is done: the trees are exact.
    pub ready: bool,
}

/// Anti-entropy's view of the store: the trees and how keys map to them.
#[derive(Clone)]
pub struct Merkle {
    /// Replaced when the layout changes (then the trees are rebuilt).
    pub home: Arc<parking_lot::RwLock<HomeOf>>,
    pub state: Arc<parking_lot::Mutex<TreeState>>,
}

impl Merkle {
    pub fn new(home: HomeOf) -> Merkle {
        Merkle {
            home: Arc::new(parking_lot::RwLock::new(home)),
            state: Default::default(),
        }
    }

    pub fn home_of(&self, key: &[u8]) -> u64 {
        (self.home.read())(key)
    }

    /// Forget the trees and map keys to home sets anew (a new layout);
    /// `Store::build_trees` builds them again.
    pub fn reset(&self, home: HomeOf) {
        let mut st = self.state.lock();
        *self.home.write() = home;
        *st = TreeState::default();
    }

    /// Forget the trees (records vanished without the applier: a table
    /// set aside); `Store::build_trees` builds them again.
    pub fn clear(&self) {
        *self.state.lock() = TreeState::default();
    }
}
