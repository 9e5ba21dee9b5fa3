//! Where one request spent its time, as the node tells its client: a
//! `Server-Timing` header (the W3C format browsers and proxies read) on
//! every answer, one entry per stage with its duration in milliseconds and,
//! for a stage on another node, that node's URL as its `desc`:
//!
//! ```text
//! server-timing: queue;dur=0.012, admit;dur=0.002, fsync;dur=2.950,
//!     replica;dur=0.310;desc="http://10.0.0.2:7000", total;dur=3.420
//! ```
//!
//! The stages are the request's critical path: they add up to `total`
//! (the remainder is `other`), so a client can say which stage, on which
//! node, its slowest requests waited for. Owns the stage names and the
//! header's format; must not measure anything.

use std::fmt::Write as _;
use std::time::Duration;

/// The header's name.
pub const HEADER: &str = "server-timing";

/// A stage of a request's critical path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// In the socket before the node read the request (the accept queue
    /// and the kernel's buffer: the node was busy or stopped).
    Queue,
    /// Waiting for a place in service (admission control).
    Admit,
    /// Reading the request's body from the client.
    Body,
    /// This node's write waiting for the applier: behind earlier commit
    /// groups and their fsyncs.
    Applier,
    /// This node's engine holding the write back while flush and
    /// compaction caught up (a write stall).
    Stall,
    /// This node's WAL fsync of the write's commit group.
    Fsync,
    /// The rest of this node's write: version check, WAL write, memtable.
    Apply,
    /// This node's own read from its engine.
    Read,
    /// Waiting for the replica (`desc`) whose answer completed the quorum,
    /// less what it reported of its own work: the network, the transport
    /// and that node's scheduling.
    Replica,
    /// The replica's (`desc`) write waiting for its applier.
    PeerApplier,
    /// The replica's (`desc`) engine stalling the write.
    PeerStall,
    /// The replica's (`desc`) WAL fsync.
    PeerFsync,
    /// The rest of the replica's (`desc`) write.
    PeerApply,
    /// What no stage accounts for.
    Other,
}

impl Stage {
    pub const ALL: [Stage; 14] = [
        Stage::Queue,
        Stage::Admit,
        Stage::Body,
        Stage::Applier,
        Stage::Stall,
        Stage::Fsync,
        Stage::Apply,
        Stage::Read,
        Stage::Replica,
        Stage::PeerApplier,
        Stage::PeerStall,
        Stage::PeerFsync,
        Stage::PeerApply,
        Stage::Other,
    ];

    /// The name in the header.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Queue => "queue",
            Stage::Admit => "admit",
            Stage::Body => "body",
            Stage::Applier => "applier",
            Stage::Stall => "stall",
            Stage::Fsync => "fsync",
            Stage::Apply => "apply",
            Stage::Read => "read",
            Stage::Replica => "replica",
            Stage::PeerApplier => "peer-applier",
            Stage::PeerStall => "peer-stall",
            Stage::PeerFsync => "peer-fsync",
            Stage::PeerApply => "peer-apply",
            Stage::Other => "other",
        }
    }

    pub fn from_name(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|x| x.name() == s)
    }

    /// Whether the stage happened on the node its `desc` names rather than
    /// on the node that answered.
    pub fn on_peer(self) -> bool {
        matches!(
            self,
            Stage::Replica
                | Stage::PeerApplier
                | Stage::PeerStall
                | Stage::PeerFsync
                | Stage::PeerApply
        )
    }

    /// What a report says of time spent here, on `node`.
    pub fn describe(self, node: &str) -> String {
        match self {
            Stage::Queue => format!("waiting in {node}'s socket to be read"),
            Stage::Admit => format!("waiting for admission on {node}"),
            Stage::Body => format!("reading the body sent to {node}"),
            Stage::Applier | Stage::PeerApplier => {
                format!("queued behind earlier commit groups on {node}")
            }
            Stage::Stall | Stage::PeerStall => format!("held by {node}'s write stall"),
            Stage::Fsync | Stage::PeerFsync => format!("waiting for {node}'s WAL fsync"),
            Stage::Apply | Stage::PeerApply => format!("applying the write on {node}"),
            Stage::Read => format!("reading from {node}'s engine"),
            Stage::Replica => {
                format!("waiting for the replica {node} (network and its scheduling)")
            }
            Stage::Other => format!("elsewhere on {node}"),
        }
    }
}

/// One entry of the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub stage: Stage,
    pub dur: Duration,
    /// The node it happened on, for the stages on a peer.
    pub node: Option<String>,
}

/// One answer's stages and total.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerTiming {
    pub entries: Vec<Entry>,
    /// Arrival in the socket to the answer.
    pub total: Duration,
}

impl ServerTiming {
    pub fn add(&mut self, stage: Stage, dur: Duration, node: Option<&str>) {
        if dur.is_zero() {
            return;
        }
        self.entries.push(Entry {
            stage,
            dur,
            node: node.map(str::to_string),
        });
    }

    /// Close the stages with `total`: what they leave of it is `Other`
    /// (stages measured on other clocks may sum past it; then nothing).
    pub fn finish(&mut self, total: Duration) {
        self.total = total;
        let sum: Duration = self.entries.iter().map(|e| e.dur).sum();
        self.add(Stage::Other, total.saturating_sub(sum), None);
    }

    /// The header's value.
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(32 + 24 * self.entries.len());
        for e in &self.entries {
            s.push_str(e.stage.name());
            s.push_str(";dur=");
            push_ms(&mut s, e.dur);
            if let Some(n) = &e.node {
                // A URL holds no quote or backslash to escape.
                let _ = write!(s, ";desc=\"{}\"", n.replace(['"', '\\'], ""));
            }
            s.push_str(", ");
        }
        s.push_str("total;dur=");
        push_ms(&mut s, self.total);
        s
    }

    /// Read a header's value; entries of other names are skipped, and a
    /// malformed entry ends the reading (what came before it is kept).
    pub fn parse(v: &str) -> ServerTiming {
        let mut t = ServerTiming::default();
        for item in v.split(',') {
            let mut parts = item.trim().split(';');
            let name = parts.next().unwrap_or("").trim();
            let mut dur = None;
            let mut desc = None;
            for p in parts {
                let p = p.trim();
                if let Some(d) = p.strip_prefix("dur=") {
                    dur = d.parse::<f64>().ok().filter(|d| d.is_finite() && *d >= 0.0);
                } else if let Some(d) = p.strip_prefix("desc=") {
                    desc = Some(d.trim_matches('"').to_string());
                }
            }
            let Some(dur) = dur else { break };
            let dur = Duration::from_secs_f64(dur / 1000.0);
            if name == "total" {
                t.total = dur;
            } else if let Some(stage) = Stage::from_name(name) {
                t.entries.push(Entry {
                    stage,
                    dur,
                    node: desc,
                });
            }
        }
        t
    }
}

/// Milliseconds with microseconds' precision, without trailing zeros.
/// Milliseconds to the microsecond, trailing zeros dropped (`12`, `0.05`,
/// `2.95`). Written digit by digit: every answer carries several, and
/// `format!` cost more than the rest of the header.
fn push_ms(s: &mut String, d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut whole = us / 1000;
    loop {
        i -= 1;
        digits[i] = b'0' + (whole % 10) as u8;
        whole /= 10;
        if whole == 0 {
            break;
        }
    }
    s.push_str(std::str::from_utf8(&digits[i..]).expect("ASCII digits"));
    let mut frac = us % 1000;
    if frac != 0 {
        let mut width = 3;
        while frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        let mut f = [b'0'; 3];
        for slot in f[..width].iter_mut().rev() {
            *slot = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        s.push('.');
        s.push_str(std::str::from_utf8(&f[..width]).expect("ASCII digits"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_to_the_microsecond() {
        let cases = [
            (0, "0"),
            (7, "0.007"),
            (50, "0.05"),
            (1000, "1"),
            (2950, "2.95"),
            (12_345_678, "12345.678"),
            (10_100, "10.1"),
        ];
        for (us, want) in cases {
            let mut s = String::new();
            push_ms(&mut s, Duration::from_micros(us));
            assert_eq!(s, want, "{us} µs");
        }
    }

    #[test]
    fn written_and_read_back() {
        let mut t = ServerTiming::default();
        t.add(Stage::Queue, Duration::from_micros(12), None);
        t.add(Stage::Admit, Duration::ZERO, None);
        t.add(Stage::Fsync, Duration::from_micros(2950), None);
        t.add(
            Stage::PeerFsync,
            Duration::from_millis(3),
            Some("http://127.0.0.1:7002"),
        );
        t.finish(Duration::from_micros(6500));
        let v = t.encode();
        assert_eq!(
            v,
            "queue;dur=0.012, fsync;dur=2.95, peer-fsync;dur=3;desc=\"http://127.0.0.1:7002\", other;dur=0.538, total;dur=6.5"
        );
        assert_eq!(ServerTiming::parse(&v), t);
    }

    #[test]
    fn every_stage_has_its_own_name() {
        for s in Stage::ALL {
            assert_eq!(Stage::from_name(s.name()), Some(s));
        }
    }

    #[test]
    fn foreign_entries_are_skipped_and_garbage_ends_the_reading() {
        let t = ServerTiming::parse(
            "cdn-cache;desc=HIT, db;dur=53, fsync;dur=1.5, admit;dur=x, queue;dur=1",
        );
        // "cdn-cache" has no duration: the reading ends there.
        assert!(t.entries.is_empty());
        let t = ServerTiming::parse("db;dur=53, fsync;dur=1.5, total;dur=2");
        assert_eq!(t.entries.len(), 1);
        assert_eq!(t.entries[0].stage, Stage::Fsync);
        assert_eq!(t.total, Duration::from_micros(2000));
    }
}
