//! Histories in other checkers' formats, so that a user can check what
//! Strata decided with another tool, or Strata's checker on another's
//! history:
//!
//! - **Porcupine** (its Go API takes operations, not files): a JSON array
//!   of `{"client", "key", "op": "put"|"get"|"delete", "value", "found",
//!   "call", "return", "unknown"}`, times in nanoseconds; what
//!   `scripts/porcupine/` reads into `porcupine.Operation`s. Failed
//!   operations and reads without an answer are left out (they did
//!   nothing); one of unknown outcome has `"unknown": true` and its return
//!   at the end of the history, as Porcupine's documentation asks.
//! - **Jepsen** (`history.edn`, one map a line): `{:process 0, :type
//!   :invoke, :f :write, :key "k", :value "v", :time 123}` and the
//!   completion with `:type :ok`, `:fail` or `:info` (unknown); `:f` is
//!   `:read`, `:write` or `:delete`, a read's completion carries the value
//!   read (`nil`: not found). Keys may also come as Jepsen's independent
//!   tuples, `:value ["k" "v"]`.
//!
//! Owns the translations; must not judge a history.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::history::{History, Kind, Op, Outcome};

/// One operation as the Porcupine harness reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PorcupineOp {
    pub client: u32,
    pub key: String,
    pub op: String,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub found: bool,
    pub call: u64,
    #[serde(rename = "return")]
    pub ret: u64,
    #[serde(default)]
    pub unknown: bool,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The history in Porcupine's terms (see the module's doc).
pub fn to_porcupine(h: &History, wanted: impl Fn(&[u8]) -> bool) -> Vec<PorcupineOp> {
    let end = h
        .ops
        .iter()
        .map(|o| o.completed.as_nanos() as u64)
        .max()
        .unwrap_or(0)
        + 1;
    let mut out = Vec::new();
    for o in h.ops.iter().filter(|o| wanted(&o.key)) {
        let unknown = o.outcome == Outcome::Unknown;
        if o.outcome == Outcome::Failed || (o.kind == Kind::Read && unknown) {
            continue;
        }
        out.push(PorcupineOp {
            client: o.client,
            key: text(&o.key),
            op: match o.kind {
                Kind::Write => "put",
                Kind::Read => "get",
                Kind::Delete => "delete",
            }
            .into(),
            value: o.value.as_deref().map(text).unwrap_or_default(),
            found: o.kind == Kind::Read && o.value.is_some(),
            call: o.invoked.as_nanos() as u64,
            ret: if unknown {
                end
            } else {
                o.completed.as_nanos() as u64
            },
            unknown,
        });
    }
    out
}

/// A Porcupine-format history back into Strata's.
pub fn from_porcupine(ops: &[PorcupineOp]) -> Result<History, String> {
    let mut h = History::default();
    for (i, p) in ops.iter().enumerate() {
        let outcome = if p.unknown {
            Outcome::Unknown
        } else {
            Outcome::Ok
        };
        let (call, ret) = (Duration::from_nanos(p.call), Duration::from_nanos(p.ret));
        let op = match p.op.as_str() {
            "put" => Op::write(
                p.client,
                p.key.as_bytes(),
                p.value.as_bytes(),
                call,
                ret,
                outcome,
            ),
            "delete" => Op::delete(p.client, p.key.as_bytes(), call, ret, outcome),
            "get" => Op::read(
                p.client,
                p.key.as_bytes(),
                p.found.then_some(p.value.as_bytes()),
                call,
                ret,
                outcome,
            ),
            other => return Err(format!("operation {i}: unknown op {other:?}")),
        };
        h.ops.push(op);
    }
    h.ops.sort_by_key(|o| (o.invoked, o.client));
    Ok(h)
}

fn edn_str(b: &[u8]) -> String {
    let mut s = String::from("\"");
    for c in String::from_utf8_lossy(b).chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// The history as Jepsen's `history.edn`: an invocation and a completion
/// per operation, in time order.
pub fn to_jepsen(h: &History, wanted: impl Fn(&[u8]) -> bool) -> String {
    let mut events: Vec<(Duration, u8, String)> = Vec::new();
    for o in h.ops.iter().filter(|o| wanted(&o.key)) {
        let f = match o.kind {
            Kind::Write => ":write",
            Kind::Read => ":read",
            Kind::Delete => ":delete",
        };
        let key = edn_str(&o.key);
        let written = match (o.kind, &o.value) {
            (Kind::Write, Some(v)) => edn_str(v),
            _ => "nil".into(),
        };
        events.push((
            o.invoked,
            0,
            format!(
                "{{:process {}, :type :invoke, :f {f}, :key {key}, :value {written}, :time {}}}",
                o.client,
                o.invoked.as_nanos()
            ),
        ));
        let (ty, value) = match (o.outcome, o.kind) {
            (Outcome::Ok, Kind::Read) => (":ok", o.value.as_deref().map_or("nil".into(), edn_str)),
            (Outcome::Ok, _) => (":ok", written.clone()),
            (Outcome::Failed, _) => (":fail", written.clone()),
            (Outcome::Unknown, _) => (":info", written.clone()),
        };
        events.push((
            o.completed,
            1,
            format!(
                "{{:process {}, :type {ty}, :f {f}, :key {key}, :value {value}, :time {}}}",
                o.client,
                o.completed.as_nanos()
            ),
        ));
    }
    events.sort_by_key(|e| (e.0, e.1));
    let mut s = String::new();
    for (_, _, line) in events {
        let _ = writeln!(s, "{line}");
    }
    s
}

/// An EDN value of the few kinds a history line holds.
#[derive(Clone, Debug, PartialEq)]
enum Edn {
    Nil,
    Keyword(String),
    Str(String),
    Int(i128),
    Vec(Vec<Edn>),
}

fn parse_edn(s: &str, at: &mut usize) -> Result<Edn, String> {
    let b = s.as_bytes();
    while *at < b.len() && (b[*at].is_ascii_whitespace() || b[*at] == b',') {
        *at += 1;
    }
    let Some(&c) = b.get(*at) else {
        return Err("unexpected end".into());
    };
    match c {
        b'"' => {
            *at += 1;
            let mut out = String::new();
            let mut chars = s[*at..].char_indices();
            while let Some((i, ch)) = chars.next() {
                match ch {
                    '"' => {
                        *at += i + 1;
                        return Ok(Edn::Str(out));
                    }
                    '\\' => match chars.next() {
                        Some((_, 'n')) => out.push('\n'),
                        Some((_, 't')) => out.push('\t'),
                        Some((_, x)) => out.push(x),
                        None => break,
                    },
                    ch => out.push(ch),
                }
            }
            Err("an unterminated string".into())
        }
        b'[' | b'(' => {
            let close = if c == b'[' { b']' } else { b')' };
            *at += 1;
            let mut v = Vec::new();
            loop {
                while *at < b.len() && (b[*at].is_ascii_whitespace() || b[*at] == b',') {
                    *at += 1;
                }
                if b.get(*at) == Some(&close) {
                    *at += 1;
                    return Ok(Edn::Vec(v));
                }
                v.push(parse_edn(s, at)?);
            }
        }
        _ => {
            let start = *at;
            while *at < b.len() && !b" \t\n,]})".contains(&b[*at]) {
                *at += 1;
            }
            let tok = &s[start..*at];
            if tok == "nil" {
                Ok(Edn::Nil)
            } else if let Some(k) = tok.strip_prefix(':') {
                Ok(Edn::Keyword(k.to_string()))
            } else if let Ok(n) = tok.parse::<i128>() {
                Ok(Edn::Int(n))
            } else {
                // A symbol or a number of another kind: kept as text.
                Ok(Edn::Str(tok.to_string()))
            }
        }
    }
}

/// One `{...}` line as a map of keyword to value.
fn parse_map(line: &str) -> Result<HashMap<String, Edn>, String> {
    let t = line.trim();
    let inner = t
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .ok_or("not a {...} map")?;
    let mut at = 0;
    let mut m = HashMap::new();
    loop {
        while at < inner.len()
            && (inner.as_bytes()[at].is_ascii_whitespace() || inner.as_bytes()[at] == b',')
        {
            at += 1;
        }
        if at >= inner.len() {
            return Ok(m);
        }
        let k = match parse_edn(inner, &mut at)? {
            Edn::Keyword(k) => k,
            other => return Err(format!("a key that is not a keyword: {other:?}")),
        };
        let v = parse_edn(inner, &mut at)?;
        m.insert(k, v);
    }
}

fn as_bytes(v: &Edn) -> Option<Vec<u8>> {
    match v {
        Edn::Nil => None,
        Edn::Str(s) => Some(s.clone().into_bytes()),
        Edn::Int(n) => Some(n.to_string().into_bytes()),
        Edn::Keyword(k) => Some(k.clone().into_bytes()),
        Edn::Vec(_) => None,
    }
}

/// An invocation of Jepsen's process `process`, completed at `time`
/// (`read`: the value a read returned).
fn complete(process: i128, o: Open, read: Option<&[u8]>, time: Duration, outcome: Outcome) -> Op {
    let client = u32::try_from(process.rem_euclid(1 << 31)).unwrap_or(0);
    let op = match o.kind {
        Kind::Write => Op::write(
            client,
            o.key,
            o.value.unwrap_or_default(),
            o.at,
            time,
            outcome,
        ),
        Kind::Delete => Op::delete(client, o.key, o.at, time, outcome),
        Kind::Read => Op::read(client, o.key, read, o.at, time, outcome),
    };
    Op {
        node: Arc::from(""),
        ..op
    }
}

/// An operation invoked and not yet completed.
struct Open {
    kind: Kind,
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    at: Duration,
}

/// A Jepsen `history.edn` (one map a line) into a history; its `:time`s
/// (nanoseconds) are kept, or the line order is used as time.
pub fn from_jepsen(text: &str) -> Result<History, String> {
    let mut open: HashMap<i128, Open> = HashMap::new();
    let mut h = History::default();
    let mut last_time = Duration::ZERO;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |e: String| format!("line {}: {e}", n + 1);
        let m = parse_map(line).map_err(err)?;
        let process = match m.get("process") {
            Some(Edn::Int(p)) => *p,
            // A nemesis's operation: recorded by Jepsen, not a client's.
            _ => continue,
        };
        let kw = |k: &str| match m.get(k) {
            Some(Edn::Keyword(s)) => Some(s.as_str()),
            _ => None,
        };
        let time = match m.get("time") {
            Some(Edn::Int(t)) if *t >= 0 => Duration::from_nanos(*t as u64),
            _ => last_time + Duration::from_nanos(1),
        };
        last_time = last_time.max(time);
        // The key: `:key`, or an independent tuple `[k v]` in `:value`.
        let (key, value) = match (m.get("key"), m.get("value")) {
            (Some(k), v) => (as_bytes(k).unwrap_or_default(), v.and_then(as_bytes)),
            (None, Some(Edn::Vec(t))) if t.len() == 2 => {
                (as_bytes(&t[0]).unwrap_or_default(), as_bytes(&t[1]))
            }
            (None, v) => (b"register".to_vec(), v.and_then(as_bytes)),
        };
        let kind = match kw("f") {
            Some("read") => Kind::Read,
            Some("write") => Kind::Write,
            Some("delete") => Kind::Delete,
            other => return Err(err(format!("an :f this checker does not model: {other:?}"))),
        };
        match kw("type") {
            Some("invoke") => {
                open.insert(
                    process,
                    Open {
                        kind,
                        key,
                        value: (kind == Kind::Write).then_some(value).flatten(),
                        at: time,
                    },
                );
            }
            Some(ty @ ("ok" | "fail" | "info")) => {
                let Some(o) = open.remove(&process) else {
                    return Err(err(format!(
                        "a completion of process {process} without its invocation"
                    )));
                };
                let outcome = match ty {
                    "ok" => Outcome::Ok,
                    "fail" => Outcome::Failed,
                    _ => Outcome::Unknown,
                };
                h.ops
                    .push(complete(process, o, value.as_deref(), time, outcome));
            }
            other => return Err(err(format!("an unknown :type {other:?}"))),
        }
    }
    // Invocations never completed: of unknown outcome (a read of unknown
    // outcome did nothing).
    for (process, o) in open {
        if o.kind != Kind::Read {
            h.ops
                .push(complete(process, o, None, last_time, Outcome::Unknown));
        }
    }
    h.ops.sort_by_key(|o| (o.invoked, o.client));
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> History {
        let ms = Duration::from_millis;
        History {
            ops: vec![
                Op::write(0, "k", "a", ms(0), ms(10), Outcome::Ok),
                Op::read(1, "k", Some(b"a"), ms(5), ms(15), Outcome::Ok),
                Op::delete(2, "k", ms(20), ms(30), Outcome::Unknown),
                Op::read(1, "k", None, ms(40), ms(50), Outcome::Ok),
                Op::write(0, "j", "b", ms(41), ms(51), Outcome::Failed),
            ],
        }
    }

    #[test]
    fn jepsen_round_trip() {
        let h = sample();
        let text = to_jepsen(&h, |_| true);
        assert!(text.contains(":type :info, :f :delete"), "{text}");
        let back = from_jepsen(&text).unwrap();
        assert_eq!(back.ops.len(), h.ops.len());
        for (a, b) in h.ops.iter().zip(&back.ops) {
            assert_eq!(
                (a.kind, &a.key, &a.value, a.outcome),
                (b.kind, &b.key, &b.value, b.outcome)
            );
            assert_eq!((a.invoked, a.completed), (b.invoked, b.completed));
        }
    }

    #[test]
    fn jepsen_independent_tuples_and_open_invocations() {
        let text = "{:process 0, :type :invoke, :f :write, :value [\"x\" 3], :time 10}\n\
                    {:process 0, :type :ok, :f :write, :value [\"x\" 3], :time 20}\n\
                    {:process :nemesis, :type :info, :f :start, :value nil}\n\
                    {:process 1, :type :invoke, :f :read, :value [\"x\" nil], :time 30}\n\
                    {:process 1, :type :ok, :f :read, :value [\"x\" 3], :time 40}\n\
                    {:process 2, :type :invoke, :f :write, :value [\"x\" 4], :time 50}\n";
        let h = from_jepsen(text).unwrap();
        assert_eq!(h.ops.len(), 3);
        assert_eq!(h.ops[1].value.as_deref(), Some(&b"3"[..]));
        assert_eq!(h.ops[2].outcome, Outcome::Unknown);
        assert!(from_jepsen("{:process 0, :type :invoke, :f :cas}").is_err());
    }

    #[test]
    fn porcupine_round_trip_leaves_out_what_did_nothing() {
        let h = sample();
        let p = to_porcupine(&h, |_| true);
        assert_eq!(p.len(), 4, "the failed write is left out");
        let del = p.iter().find(|o| o.op == "delete").unwrap();
        assert!(del.unknown);
        assert_eq!(del.ret, 51_000_001, "an unknown outcome returns at the end");
        let json = serde_json::to_string(&p).unwrap();
        let back: Vec<PorcupineOp> = serde_json::from_str(&json).unwrap();
        let h2 = from_porcupine(&back).unwrap();
        assert_eq!(h2.ops.len(), 4);
        assert_eq!(h2.ops[1].value.as_deref(), Some(&b"a"[..]));
        assert_eq!(h2.ops[3].value, None);
    }
}
