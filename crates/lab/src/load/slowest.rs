//! The slowest requests of a run and where they spent their time. Each
//! generator thread keeps its slowest requests in a bounded heap (the
//! answer's `Server-Timing` is parsed only for those that enter it); at
//! the end the run keeps the slowest 1 % of all (at least ten), those left
//! unanswered included, and `breakdown` splits their summed latency into parts:
//! the generator's own lateness (its timer woke late while a connection
//! was free), the wait for a free connection (every one held by an
//! unanswered request: the target's doing), each server stage on each
//! node (the coordinator's own, and the peer it waited for), the time in
//! flight that no stage accounts for (the network), and the time of
//! requests never answered. Owns the keeping and the split; must not
//! send requests or judge the parts (the verdict does).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;

use strata_api::timing::{ServerTiming, Stage};

use crate::report::model::{SlowPart, Slowest};

/// Share of a run's requests whose time is broken down.
pub const SHARE: f64 = 0.01;

/// At least this many of a run's slowest requests are broken down, however
/// few it counted: in a short trial at a low rate the slowest 1 % is one
/// or two requests, and a cause named from one request is an anecdote (a
/// single scheduler stall of the generator, one slow fsync of a shared
/// disk). Ten is below what `per_thread` keeps (50).
pub const MIN_SLOWEST: usize = 10;

/// One slow request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowRequest {
    /// From its intended send time to its answer (or to when it was
    /// abandoned, unanswered).
    pub latency: Duration,
    /// Index of the node that answered it.
    pub node: usize,
    /// Failed over: the node tried first and the time spent on members
    /// before the one that answered.
    pub before: Option<(usize, Duration)>,
    /// Waiting for a free connection: every one was held.
    pub conn_wait: Duration,
    /// The generator's timer woke late, a connection free.
    pub timer_late: Duration,
    /// The answer's stages; `None` when it had none or none came.
    pub timing: Option<ServerTiming>,
    pub unanswered: bool,
}

impl PartialOrd for SlowRequest {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SlowRequest {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.latency
            .cmp(&other.latency)
            .then(self.node.cmp(&other.node))
            .then(self.conn_wait.cmp(&other.conn_wait))
            .then(self.timer_late.cmp(&other.timer_late))
            .then(self.unanswered.cmp(&other.unanswered))
    }
}

/// A thread's slowest `cap` requests.
#[derive(Debug)]
pub struct SlowHeap {
    cap: usize,
    heap: BinaryHeap<Reverse<SlowRequest>>,
}

impl SlowHeap {
    pub fn new(cap: usize) -> SlowHeap {
        SlowHeap {
            cap: cap.max(1),
            heap: BinaryHeap::new(),
        }
    }

    /// Whether a request this slow would be kept (ask before parsing its
    /// stages).
    pub fn wants(&self, latency: Duration) -> bool {
        self.heap.len() < self.cap || self.heap.peek().is_some_and(|m| latency > m.0.latency)
    }

    pub fn offer(&mut self, r: SlowRequest) {
        if !self.wants(r.latency) {
            return;
        }
        self.heap.push(Reverse(r));
        if self.heap.len() > self.cap {
            self.heap.pop();
        }
    }

    pub fn into_vec(self) -> Vec<SlowRequest> {
        self.heap.into_iter().map(|r| r.0).collect()
    }
}

/// How many a thread keeps for a run of `expected` counted requests over
/// `threads` threads: its share of the slowest 1 %, doubled (threads are
/// not equally slow), at least 50 and at most 50,000.
pub fn per_thread(expected: f64, threads: usize) -> usize {
    ((2.0 * SHARE * expected / threads.max(1) as f64).ceil() as usize).clamp(50, 50_000)
}

/// The slowest `SHARE` of `counted` requests among `kept`, and at least
/// `MIN_SLOWEST` of them.
pub fn slowest(mut kept: Vec<SlowRequest>, counted: u64) -> Vec<SlowRequest> {
    kept.sort_by(|a, b| b.cmp(a));
    let n = ((counted as f64 * SHARE).ceil() as usize).max(MIN_SLOWEST);
    kept.truncate(n);
    kept
}

/// A node's name in a report: `node-N` for the N-th URL given; a peer's
/// URL that is not among them as it is.
pub fn node_name(urls: &[String], url: &str) -> String {
    let norm = |u: &str| u.trim_end_matches('/').to_string();
    match urls.iter().position(|u| norm(u) == norm(url)) {
        Some(i) => format!("node-{}", i + 1),
        None => url.to_string(),
    }
}

/// What a part of the slowest requests' time is: a server's stage (its
/// `Server-Timing`), or one of the lab's own, typed once (`SlowPart::what`
/// spells it with `name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Stage(Stage),
    /// The generator's own lateness: its timer woke late with a
    /// connection free.
    Generator,
    /// Waiting for a free connection (every one held by an unanswered
    /// request).
    ConnectionWait,
    /// In flight with no server stage to show for it.
    Network,
    /// Never answered.
    Unanswered,
    /// Waiting for a member tried first, before another answered.
    Retried,
}

impl Part {
    const OWN: [Part; 5] = [
        Part::Generator,
        Part::ConnectionWait,
        Part::Network,
        Part::Unanswered,
        Part::Retried,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Part::Stage(s) => s.name(),
            Part::Generator => "generator",
            Part::ConnectionWait => "connection-wait",
            Part::Network => "network",
            Part::Unanswered => "unanswered",
            Part::Retried => "retried",
        }
    }

    pub fn from_name(s: &str) -> Option<Part> {
        Part::OWN
            .into_iter()
            .find(|p| p.name() == s)
            .or_else(|| Stage::from_name(s).map(Part::Stage))
    }
}

/// The key of a part: what, and on which node.
fn add(
    parts: &mut HashMap<(String, Option<String>), f64>,
    what: Part,
    node: Option<String>,
    d: f64,
) {
    if d > 0.0 {
        *parts.entry((what.name().to_string(), node)).or_default() += d;
    }
}

/// Where the slowest requests spent their time. `urls`: the nodes as
/// given, to name them.
pub fn breakdown(slow: &[SlowRequest], urls: &[String]) -> Option<Slowest> {
    if slow.is_empty() {
        return None;
    }
    let mut parts: HashMap<(String, Option<String>), f64> = HashMap::new();
    let mut total = 0.0;
    let mut with_timing = 0u64;
    for r in slow {
        let l = r.latency.as_secs_f64();
        total += l;
        let node = node_name(urls, urls.get(r.node).map(String::as_str).unwrap_or("?"));
        if r.unanswered {
            add(&mut parts, Part::Unanswered, Some(node), l);
            continue;
        }
        let (gen, wait) = (r.timer_late.as_secs_f64(), r.conn_wait.as_secs_f64());
        add(&mut parts, Part::Generator, None, gen);
        add(&mut parts, Part::ConnectionWait, Some(node.clone()), wait);
        let mut rest = (l - gen - wait).max(0.0);
        if let Some((first, d)) = r.before {
            let first = node_name(urls, urls.get(first).map(String::as_str).unwrap_or("?"));
            let d = d.as_secs_f64().min(rest);
            add(&mut parts, Part::Retried, Some(first), d);
            rest -= d;
        }
        if let Some(t) = &r.timing {
            with_timing += 1;
            // Stages are the server's; scaled down if they exceed what is
            // left (clocks differ by microseconds).
            let sum: f64 = t.entries.iter().map(|e| e.dur.as_secs_f64()).sum();
            let scale = if sum > rest && sum > 0.0 {
                rest / sum
            } else {
                1.0
            };
            for e in &t.entries {
                let on = if e.stage.on_peer() {
                    e.node.as_deref().map(|u| node_name(urls, u))
                } else {
                    Some(node.clone())
                };
                add(
                    &mut parts,
                    Part::Stage(e.stage),
                    on,
                    e.dur.as_secs_f64() * scale,
                );
            }
            rest = (rest - sum * scale).max(0.0);
        }
        // In flight with no stage to show for it: the network (and the
        // node's work before it timed the request, and the generator's
        // reading of the answer).
        add(&mut parts, Part::Network, Some(node), rest);
    }
    let mut out: Vec<SlowPart> = parts
        .into_iter()
        .map(|((what, node), secs)| SlowPart {
            words: words(&what, node.as_deref()),
            what,
            node,
            share: secs / total.max(1e-12),
            mean_ms: 1000.0 * secs / slow.len() as f64,
        })
        .collect();
    out.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then(a.what.cmp(&b.what))
            .then(a.node.cmp(&b.node))
    });
    let mut by_node: Vec<(String, u64)> = Vec::new();
    for r in slow {
        let n = node_name(urls, urls.get(r.node).map(String::as_str).unwrap_or("?"));
        match by_node.iter_mut().find(|(x, _)| *x == n) {
            Some((_, c)) => *c += 1,
            None => by_node.push((n, 1)),
        }
    }
    by_node.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(Slowest {
        requests: slow.len() as u64,
        unanswered: slow.iter().filter(|r| r.unanswered).count() as u64,
        with_timing,
        from_ms: slow
            .iter()
            .map(|r| r.latency)
            .min()
            .unwrap_or_default()
            .as_secs_f64()
            * 1000.0,
        mean_ms: 1000.0 * total / slow.len() as f64,
        parts: out,
        by_node,
    })
}

/// A part in words: "waiting for node-2's WAL fsync".
pub fn words(what: &str, node: Option<&str>) -> String {
    let n = node.unwrap_or("the node");
    match Part::from_name(what) {
        Some(Part::Generator) => {
            "the generator's own lateness (its timer woke late with a connection free)".into()
        }
        Some(Part::ConnectionWait) => format!(
            "waiting for a free connection to {n} (every one held by an unanswered request)"
        ),
        Some(Part::Network) => {
            format!("in flight to and from {n} with no server stage to show for it (the network)")
        }
        Some(Part::Unanswered) => format!("requests {n} never answered"),
        Some(Part::Retried) => format!(
            "waiting for {n}, tried first, before another member answered (it refused, failed or was silent until the attempt's timeout)"
        ),
        Some(Part::Stage(st)) => st.describe(n),
        None => format!("{what} on {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(ms: u64, node: usize, timing: Option<&str>) -> SlowRequest {
        SlowRequest {
            latency: Duration::from_millis(ms),
            node,
            before: None,
            conn_wait: Duration::ZERO,
            timer_late: Duration::ZERO,
            timing: timing.map(ServerTiming::parse),
            unanswered: false,
        }
    }

    #[test]
    fn the_heap_keeps_the_slowest() {
        let mut h = SlowHeap::new(3);
        for ms in [5, 1, 9, 3, 7, 2] {
            let r = req(ms, 0, None);
            if h.wants(r.latency) {
                h.offer(r);
            }
        }
        let mut kept: Vec<u64> = h
            .into_vec()
            .iter()
            .map(|r| r.latency.as_millis() as u64)
            .collect();
        kept.sort();
        assert_eq!(kept, vec![5, 7, 9]);
        let all: Vec<SlowRequest> = (1..=3000).map(|ms| req(ms, 0, None)).collect();
        let s = slowest(all.clone(), 3000);
        assert_eq!(s.len(), 30);
        assert_eq!(s[0].latency, Duration::from_millis(3000));
        // A short trial: its slowest 1 % is three requests, ten are kept.
        let s = slowest(all[..300].to_vec(), 300);
        assert_eq!(s.len(), MIN_SLOWEST);
        assert_eq!(s[0].latency, Duration::from_millis(300));
    }

    #[test]
    fn a_slow_peer_fsync_is_named_with_its_node() {
        let urls = vec![
            "http://127.0.0.1:7001".to_string(),
            "http://127.0.0.1:7002".to_string(),
        ];
        let t = "fsync;dur=1, peer-fsync;dur=8;desc=\"http://127.0.0.1:7002\", total;dur=10";
        let mut slow: Vec<SlowRequest> = (0..9).map(|_| req(10, 0, Some(t))).collect();
        let mut u = req(20, 1, None);
        u.unanswered = true;
        slow.push(u);
        let b = breakdown(&slow, &urls).unwrap();
        assert_eq!(b.requests, 10);
        assert_eq!(b.unanswered, 1);
        let top = &b.parts[0];
        assert_eq!(
            (top.what.as_str(), top.node.as_deref()),
            ("peer-fsync", Some("node-2"))
        );
        // 9 × 8 ms of 110 ms in all.
        assert!((top.share - 72.0 / 110.0).abs() < 1e-9, "{b:?}");
        assert_eq!(top.words, "waiting for node-2's WAL fsync");
        let u = b.parts.iter().find(|p| p.what == "unanswered").unwrap();
        assert_eq!(u.node.as_deref(), Some("node-2"));
        // What the stages leave of the latency is the network's: 9 × 0 ms
        // (stages sum to 9 of 10 ms, "other" absent: 1 ms each).
        let net = b.parts.iter().find(|p| p.what == "network").unwrap();
        assert!((net.mean_ms - 0.9).abs() < 1e-9, "{net:?}");
        let sum: f64 = b.parts.iter().map(|p| p.share).sum();
        assert!((sum - 1.0).abs() < 1e-9);
    }

    #[test]
    fn late_sends_are_split_between_the_generator_and_the_target() {
        let mut r = req(10, 0, Some("queue;dur=2, total;dur=2"));
        r.timer_late = Duration::from_millis(3);
        r.conn_wait = Duration::from_millis(4);
        let b = breakdown(&[r], &["http://a:1".into()]).unwrap();
        let share = |w: &str| b.parts.iter().find(|p| p.what == w).unwrap().share;
        assert!((share("generator") - 0.3).abs() < 1e-9);
        assert!((share("connection-wait") - 0.4).abs() < 1e-9);
        assert!((share("queue") - 0.2).abs() < 1e-9);
        assert!((share("network") - 0.1).abs() < 1e-9);
    }

    #[test]
    fn time_on_a_member_before_a_failover_is_that_members() {
        // 160 ms in all: 150 on node-3 (tried first, refused after its
        // stop), then node-1's 6 ms of stages and 4 ms in flight.
        let urls: Vec<String> = (1..=3)
            .map(|i| format!("http://127.0.0.1:700{i}"))
            .collect();
        let mut r = req(160, 0, Some("fsync;dur=6, total;dur=6"));
        r.before = Some((2, Duration::from_millis(150)));
        let b = breakdown(&[r], &urls).unwrap();
        let part = |w: &str| b.parts.iter().find(|p| p.what == w).unwrap();
        let retried = part("retried");
        assert_eq!(retried.node.as_deref(), Some("node-3"));
        assert!((retried.mean_ms - 150.0).abs() < 1e-9, "{b:?}");
        assert!((part("network").mean_ms - 4.0).abs() < 1e-9, "{b:?}");
        assert_eq!(part("network").node.as_deref(), Some("node-1"));
    }
}
