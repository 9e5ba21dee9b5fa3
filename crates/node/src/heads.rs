//! Connections whose first request has not finished arriving (a
//! slow-header flood's weapon): bounded in time (`--header-timeout-ms`,
//! hyper's), in number (`--max-awaiting-heads`) and per peer address
//! (`--max-awaiting-heads-per-peer`). Past a bound, the oldest idle one (it
//! has sent all it has, and the head is still not whole) of the address
//! with the most is closed, never the newcomer: a client whose request
//! arrives at once always gets through. And such a connection gives up its
//! place under the overload limit while it idles (`overload::Open`), so
//! that a few hundred slow senders never park a well-behaved request.
//! Owns the registry and the choice of whom to close; must not read or
//! parse a request (the server's hyper does, and says when a head is whole).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// A connection this young is never closed to make room: its client may
/// not have written yet (a TLS handshake's round trips included).
pub const EVICT_AFTER: Duration = Duration::from_secs(1);
/// The oldest entries of one address looked at for an idle one to close.
const SCAN: usize = 32;

/// The registry of connections awaiting their first whole head.
pub struct Heads {
    max: usize,
    per_peer: usize,
    inner: Mutex<Inner>,
    /// Connections closed to keep within the bounds.
    pub closed: AtomicU64,
}

#[derive(Default)]
struct Inner {
    next: u64,
    /// By id: the oldest first.
    all: BTreeMap<u64, Entry>,
    by_peer: HashMap<IpAddr, VecDeque<u64>>,
}

struct Entry {
    peer: IpAddr,
    fd: RawFd,
    since: Instant,
    state: Arc<State>,
}

/// What a connection's task and the registry share.
#[derive(Default)]
pub struct State {
    arrived: AtomicBool,
    close: Notify,
}

/// A connection's entry; dropping it (or its first head arriving) leaves
/// the registry.
pub struct Awaiting {
    heads: Arc<Heads>,
    id: u64,
    pub state: Arc<State>,
}

impl Heads {
    pub fn new(max: usize, per_peer: usize) -> Heads {
        Heads {
            max: max.max(1),
            per_peer: per_peer.max(1),
            inner: Mutex::new(Inner::default()),
            closed: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connections awaiting their first whole head now.
    pub fn len(&self) -> usize {
        self.lock().all.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Register a connection just accepted from `peer` (its socket `fd`):
    /// first, past a bound, ask the oldest idle one of the address that
    /// holds the most (or of `peer`, past its own bound) to close.
    pub fn register(self: &Arc<Self>, peer: IpAddr, fd: RawFd) -> Awaiting {
        self.register_at(peer, fd, Instant::now())
    }

    fn register_at(self: &Arc<Self>, peer: IpAddr, fd: RawFd, now: Instant) -> Awaiting {
        let mut g = self.lock();
        let mine = g.by_peer.get(&peer).map_or(0, VecDeque::len);
        if mine >= self.per_peer {
            self.close(&mut g, peer, mine + 1 - self.per_peer, now);
        }
        // Past the total: the heaviest addresses lose their oldest idle
        // ones, one address at a time (a few at most per newcomer).
        for _ in 0..4 {
            if g.all.len() < self.max {
                break;
            }
            let mut peers: Vec<(usize, IpAddr)> =
                g.by_peer.iter().map(|(p, ids)| (ids.len(), *p)).collect();
            peers.sort_unstable_by(|a, b| b.cmp(a));
            let excess = g.all.len() + 1 - self.max;
            let before = g.all.len();
            for (_, p) in peers.into_iter().take(4) {
                self.close(&mut g, p, excess, now);
                if g.all.len() < before {
                    break;
                }
            }
            if g.all.len() == before {
                break;
            }
        }
        let id = g.next;
        g.next += 1;
        let state = Arc::new(State::default());
        g.all.insert(
            id,
            Entry {
                peer,
                fd,
                since: now,
                state: state.clone(),
            },
        );
        g.by_peer.entry(peer).or_default().push_back(id);
        Awaiting {
            heads: self.clone(),
            id,
            state,
        }
    }

    /// Close up to `n` of `peer`'s oldest connections that are idle and
    /// past `EVICT_AFTER`: they leave the registry now, their tasks are
    /// told to close them. Fewer may be (young, or with unread bytes: the
    /// node is the slow one); then the bound waits for them.
    fn close(&self, g: &mut Inner, peer: IpAddr, n: usize, now: Instant) {
        let Some(ids) = g.by_peer.get(&peer) else {
            return;
        };
        let victims: Vec<u64> = ids
            .iter()
            .take(n + SCAN)
            .copied()
            .filter(|id| {
                g.all.get(id).is_some_and(|e| {
                    now.saturating_duration_since(e.since) >= EVICT_AFTER && unread(e.fd) == Some(0)
                })
            })
            .take(n)
            .collect();
        for id in victims {
            if let Some(e) = remove(g, id) {
                e.state.close.notify_one();
                self.closed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn remove(g: &mut Inner, id: u64) -> Option<Entry> {
    let e = g.all.remove(&id)?;
    if let Some(ids) = g.by_peer.get_mut(&e.peer) {
        ids.retain(|&x| x != id);
        if ids.is_empty() {
            g.by_peer.remove(&e.peer);
        }
    }
    Some(e)
}

impl Awaiting {
    /// The first head is whole: the connection leaves the registry (once).
    pub fn arrived(&self) {
        if !self.state.arrived.swap(true, Ordering::AcqRel) {
            remove(&mut self.heads.lock(), self.id);
        }
    }

    pub fn has_arrived(&self) -> bool {
        self.state.arrived.load(Ordering::Acquire)
    }

    /// Resolves when the registry asks for this connection to close.
    pub async fn closing(&self) {
        self.state.close.notified().await
    }
}

impl Drop for Awaiting {
    fn drop(&mut self) {
        self.arrived();
    }
}

pub use crate::overload::unread;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// A connected pair: the server's end (whose fd is registered) and the
    /// client's.
    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (s, c)
    }

    #[test]
    fn past_a_peers_bound_its_oldest_idle_connection_closes_never_the_newcomer() {
        let h = Arc::new(Heads::new(100, 3));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        let old = t0 + EVICT_AFTER * 2;
        let socks: Vec<_> = (0..5).map(|_| pair()).collect();
        // The oldest has unread bytes: the node is behind, not the client.
        (&socks[0].1).write_all(b"GET / HTTP/1.1\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let w: Vec<_> = (0..3)
            .map(|i| h.register_at(a, socks[i].0.as_raw_fd(), t0))
            .collect();
        let other = h.register_at(b, socks[3].0.as_raw_fd(), t0);
        assert_eq!(h.len(), 4);
        // A fourth from `a`: its oldest idle one (the second) is closed.
        let newest = h.register_at(a, socks[4].0.as_raw_fd(), old);
        assert_eq!(h.closed.load(Ordering::Relaxed), 1);
        assert_eq!(h.len(), 4);
        let closed: Vec<bool> = w
            .iter()
            .map(|x| !h.lock().all.contains_key(&x.id))
            .collect();
        assert_eq!(closed, [false, true, false]);
        assert!(h.lock().all.contains_key(&other.id));
        assert!(h.lock().all.contains_key(&newest.id));
        // Too young to close: nothing is, and the bound is exceeded.
        let young: Vec<_> = (0..3).map(|_| pair()).collect();
        let y: Vec<_> = young
            .iter()
            .map(|p| h.register_at(a, p.0.as_raw_fd(), t0 + EVICT_AFTER * 2))
            .collect();
        assert_eq!(
            h.closed.load(Ordering::Relaxed),
            2,
            "the old idle one closed, then nothing could"
        );
        assert_eq!(h.lock().by_peer[&a].len(), 5);
        // Later, one newcomer trims the address back to its bound, the
        // connection the node is behind on spared.
        let later = pair();
        let _l = h.register_at(a, later.0.as_raw_fd(), t0 + EVICT_AFTER * 4);
        assert_eq!(h.lock().by_peer[&a].len(), 3);
        assert!(h.lock().all.contains_key(&w[0].id));
        drop(y);
        // An arrived head leaves; a dropped entry too.
        newest.arrived();
        drop(other);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn past_the_total_the_heaviest_address_loses_one() {
        let h = Arc::new(Heads::new(4, 10));
        let t0 = Instant::now();
        let old = t0 + EVICT_AFTER * 2;
        let socks: Vec<_> = (0..5).map(|_| pair()).collect();
        let ips: [IpAddr; 5] = ["10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3"]
            .map(|s| s.parse().unwrap());
        let w: Vec<_> = (0..4)
            .map(|i| h.register_at(ips[i], socks[i].0.as_raw_fd(), t0))
            .collect();
        let _n = h.register_at(ips[4], socks[4].0.as_raw_fd(), old);
        assert!(!h.lock().all.contains_key(&w[0].id), "10.0.0.1's oldest");
        assert!(h.lock().all.contains_key(&w[3].id), "10.0.0.2's only one");
        assert_eq!(h.len(), 4);
    }
}
