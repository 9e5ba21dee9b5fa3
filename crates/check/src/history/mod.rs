//! The history of a checked run: one record per operation a client invoked
//! (key, kind, value, when it was invoked and when it completed on a
//! monotonic clock, its outcome, the node that served it), the recorder
//! that collects them from many clients at little cost, the naming
//! conventions the checker relies on (`set/…` and `reg/…` keys, register
//! values `<client>:<seq>`), and JSON lines to keep a history in a file.
//! Owns what a history is and how it is stored; must not judge it (that is
//! `checker`) nor send requests.
//!
//! Here: an operation and a history, in JSON lines; `keys` the naming
//! conventions, `record` the recorder, `json` how fields are written.

use std::fmt;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(crate) mod json;
mod keys;
mod record;

pub use keys::*;
pub use record::*;

/// What an operation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Write,
    Read,
    Delete,
}

/// How an operation ended, as far as the client can know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Acknowledged: a 2xx for a write or delete; for a read, an answer
    /// (200 with the value, or 404: absent).
    Ok,
    /// Definitely not applied: refused before anything was done (a 4xx, a
    /// 503 from admission control or a node that is not serving, or a
    /// connection refused before the request was sent).
    Failed,
    /// May or may not have been applied: a timeout, a connection error, a
    /// 504 "not enough replicas" (some replicas may have the write), any
    /// other 5xx.
    Unknown,
}

impl Outcome {
    /// The outcome of an answered request of `kind` with HTTP `status`.
    /// `resent`: the request went out twice (the first connection turned
    /// out closed), so a refusal of the second copy says nothing about the
    /// first: a write is then `Unknown` rather than `Failed`.
    pub fn of_status(kind: Kind, status: u16, resent: bool) -> Outcome {
        match (kind, status) {
            (Kind::Read, 200 | 404) => Outcome::Ok,
            (Kind::Write | Kind::Delete, 200..=299) => Outcome::Ok,
            // A request timeout may come after the server acted.
            (_, 408) => Outcome::Unknown,
            (Kind::Write | Kind::Delete, 400..=499 | 503) if resent => Outcome::Unknown,
            (_, 400..=499 | 503) => Outcome::Failed,
            _ => Outcome::Unknown,
        }
    }
}

/// One operation as a client saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// The client that invoked it (each client runs one operation at a
    /// time).
    pub client: u32,
    pub kind: Kind,
    #[serde(with = "json::bytes")]
    pub key: Vec<u8>,
    /// The value written; or the value read, `None` for absent (404) and
    /// for a read that got no answer; `None` for a delete.
    #[serde(
        with = "json::opt_bytes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub value: Option<Vec<u8>>,
    /// Since the run's start, on a monotonic clock.
    #[serde(with = "json::nanos", rename = "invoked_ns")]
    pub invoked: Duration,
    #[serde(with = "json::nanos", rename = "completed_ns")]
    pub completed: Duration,
    pub outcome: Outcome,
    /// The HTTP status, if there was an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The base URL of the node that served it.
    #[serde(with = "json::arc_str")]
    pub node: Arc<str>,
    /// A read of the final pass (after the faults healed, at `ack=from`).
    #[serde(rename = "final", default, skip_serializing_if = "std::ops::Not::not")]
    pub final_read: bool,
    /// The operation's own `ack` and `from`, when operations of one run
    /// differ (the cluster's simulation picks them per operation); `None`:
    /// the run's (`checker::Quorum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<OpQuorum>,
}

/// One operation's replication: it waited for `ack` of its key's `from`
/// replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpQuorum {
    pub ack: u32,
    pub from: u32,
}

impl OpQuorum {
    /// Whether every replica set of `self` meets every one of `other`:
    /// `ack + ack' > max(from, from')` (the larger `from` holds the
    /// smaller's replicas, the first of the key's placement).
    pub fn meets(self, other: OpQuorum) -> bool {
        self.ack + other.ack > self.from.max(other.from)
    }
}

impl Op {
    /// A write of `value` to `key`.
    pub fn write(
        client: u32,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        invoked: Duration,
        completed: Duration,
        outcome: Outcome,
    ) -> Op {
        Op {
            client,
            kind: Kind::Write,
            key: key.into(),
            value: Some(value.into()),
            invoked,
            completed,
            outcome,
            status: None,
            node: Arc::from(""),
            final_read: false,
            quorum: None,
        }
    }

    /// A read of `key` that returned `value` (`None`: absent).
    pub fn read(
        client: u32,
        key: impl Into<Vec<u8>>,
        value: Option<&[u8]>,
        invoked: Duration,
        completed: Duration,
        outcome: Outcome,
    ) -> Op {
        Op {
            kind: Kind::Read,
            value: value.map(<[u8]>::to_vec),
            ..Op::write(client, key, Vec::new(), invoked, completed, outcome)
        }
    }

    /// A delete of `key`.
    pub fn delete(
        client: u32,
        key: impl Into<Vec<u8>>,
        invoked: Duration,
        completed: Duration,
        outcome: Outcome,
    ) -> Op {
        Op {
            kind: Kind::Delete,
            value: None,
            ..Op::write(client, key, Vec::new(), invoked, completed, outcome)
        }
    }

    /// The same operation marked as a read of the final pass.
    pub fn final_pass(mut self) -> Op {
        self.final_read = true;
        self
    }

    /// The same operation with its own `ack` of `from`.
    pub fn with_quorum(mut self, ack: u32, from: u32) -> Op {
        self.quorum = Some(OpQuorum { ack, from });
        self
    }

    /// The same operation served by `node`.
    pub fn on(mut self, node: &str) -> Op {
        self.node = Arc::from(node);
        self
    }

    /// The same operation with HTTP `status`.
    pub fn with_status(mut self, status: u16) -> Op {
        self.status = Some(status);
        self
    }
}

/// Bytes for people: a quoted string if it is UTF-8 (escaped), else hex.
pub struct Shown<'a>(pub &'a [u8]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX: usize = 40;
        match std::str::from_utf8(self.0) {
            Ok(s) if s.chars().count() <= MAX => write!(f, "{s:?}"),
            Ok(s) => {
                let head: String = s.chars().take(MAX).collect();
                write!(f, "{head:?}… ({} bytes)", s.len())
            }
            Err(_) => {
                f.write_str("0x")?;
                for b in self.0.iter().take(MAX / 2) {
                    write!(f, "{b:02x}")?;
                }
                if self.0.len() > MAX / 2 {
                    write!(f, "… ({} bytes)", self.0.len())?;
                }
                Ok(())
            }
        }
    }
}

/// A whole history: every client's operations, ordered by invocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    pub ops: Vec<Op>,
}

impl History {
    /// Merge the clients' logs into one history ordered by invocation time
    /// (then client, then each client's own order).
    pub fn merge(logs: impl IntoIterator<Item = Vec<Op>>) -> History {
        let mut ops: Vec<Op> = logs.into_iter().flatten().collect();
        // Stable: a client's operations keep their order on equal times.
        ops.sort_by_key(|o| (o.invoked, o.client));
        History { ops }
    }

    /// Write the history as JSON lines, one operation a line.
    pub fn write_jsonl(&self, path: &Path) -> io::Result<()> {
        let mut w = BufWriter::new(std::fs::File::create(path)?);
        self.write_jsonl_to(&mut w)?;
        w.flush()
    }

    pub fn write_jsonl_to(&self, w: &mut impl Write) -> io::Result<()> {
        for op in &self.ops {
            serde_json::to_writer(&mut *w, op)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Read a history written by `write_jsonl` (blank lines are skipped).
    pub fn read_jsonl(path: &Path) -> Result<History, String> {
        let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        History::read_jsonl_from(io::BufReader::new(f))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn read_jsonl_from(r: impl BufRead) -> Result<History, String> {
        let mut ops = Vec::new();
        for (i, line) in r.lines().enumerate() {
            let line = line.map_err(|e| e.to_string())?;
            if line.trim().is_empty() {
                continue;
            }
            ops.push(serde_json::from_str(&line).map_err(|e| format!("line {}: {e}", i + 1))?);
        }
        Ok(History { ops })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn statuses_become_outcomes() {
        use Kind::*;
        use Outcome::*;
        let cases = [
            (Write, 201, false, Ok),
            (Delete, 202, false, Ok),
            (Write, 400, false, Failed),
            (Write, 413, false, Failed),
            (Write, 503, false, Failed),
            (Write, 503, true, Unknown),
            (Write, 400, true, Unknown),
            (Write, 408, false, Unknown),
            (Write, 504, false, Unknown),
            (Write, 507, false, Unknown),
            (Write, 500, false, Unknown),
            (Read, 200, false, Ok),
            (Read, 404, false, Ok),
            (Read, 400, false, Failed),
            (Read, 503, false, Failed),
            (Read, 504, false, Unknown),
        ];
        for (kind, status, resent, want) in cases {
            assert_eq!(
                Outcome::of_status(kind, status, resent),
                want,
                "{kind:?} {status} resent={resent}"
            );
        }
    }

    #[test]
    fn register_values_round_trip() {
        assert_eq!(
            parse_register_value(register_value(7, 42).as_bytes()),
            Some((7, 42))
        );
        assert_eq!(parse_register_value(b"7:"), None);
        assert_eq!(parse_register_value(b"x:1"), None);
        assert_eq!(parse_register_value(b"\xff:1"), None);
        assert_eq!(KeyRole::of(set_key("r1", 3, 9).as_bytes()), KeyRole::Set);
        assert_eq!(
            KeyRole::of(register_key("r1", 3, 1).as_bytes()),
            KeyRole::Register
        );
        assert_eq!(KeyRole::of(b"other"), KeyRole::Other);
    }

    #[test]
    fn json_lines_round_trip_text_binary_and_absent_values() {
        let h = History {
            ops: vec![
                Op::write(1, "set/1/0", "1:0", ms(1), ms(2), Outcome::Ok)
                    .on("http://a:1")
                    .with_status(201),
                Op::write(
                    2,
                    b"k\xff".to_vec(),
                    b"\x00\xfe".to_vec(),
                    ms(3),
                    ms(4),
                    Outcome::Unknown,
                ),
                Op::read(3, "reg/1/0", None, ms(5), ms(6), Outcome::Ok).final_pass(),
                Op::read(
                    3,
                    "reg/1/0",
                    Some(b"{\"base64\": 1}"),
                    ms(5),
                    ms(6),
                    Outcome::Ok,
                ),
                Op::delete(
                    4,
                    "set/1/0",
                    Duration::from_nanos(7),
                    Duration::from_nanos(8),
                    Outcome::Failed,
                ),
            ],
        };
        let mut buf = Vec::new();
        h.write_jsonl_to(&mut buf).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert_eq!(
            text.lines().next().unwrap(),
            r#"{"client":1,"kind":"write","key":"set/1/0","value":"1:0","invoked_ns":1000000,"completed_ns":2000000,"outcome":"ok","status":201,"node":"http://a:1"}"#
        );
        assert!(
            text.contains(r#""key":{"base64":"a/8="},"value":{"base64":"AP4="}"#),
            "{text}"
        );
        let back = History::read_jsonl_from(&buf[..]).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn json_lines_errors_name_the_line() {
        let e = History::read_jsonl_from(&b"\n{\"client\":1}\n"[..]).unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
    }

    #[test]
    fn logs_merge_in_invocation_order() {
        let rec = Recorder::new();
        let node: Arc<str> = Arc::from("http://n");
        let mut logs: Vec<ClientLog> = (0..3).map(|c| rec.client(c)).collect();
        for _ in 0..3 {
            for log in logs.iter_mut() {
                let p = log.invoke(Kind::Write, b"k", Some(b"v"), &node, false);
                let op = log.complete(p, Outcome::Ok, Some(201), None);
                assert!(op.completed >= op.invoked);
                assert_eq!(op.value.as_deref(), Some(&b"v"[..]));
            }
        }
        let p = logs[0].invoke(Kind::Read, b"k", None, &node, true);
        let op = logs[0].complete(p, Outcome::Ok, Some(200), Some(b"v"));
        assert!(op.final_read);
        drop(logs);
        let h = rec.history();
        assert_eq!(h.ops.len(), 10);
        assert!(h.ops.windows(2).all(|w| w[0].invoked <= w[1].invoked));
        assert!(rec.history().ops.is_empty(), "handed over once");
    }

    #[test]
    fn shown_bytes() {
        assert_eq!(Shown(b"1:2").to_string(), "\"1:2\"");
        assert_eq!(Shown(b"\xff\x00").to_string(), "0xff00");
        assert_eq!(
            Shown("x".repeat(50).as_bytes()).to_string(),
            format!("{:?}… (50 bytes)", "x".repeat(40))
        );
    }
}
