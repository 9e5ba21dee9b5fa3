//! The checker's rules on hand-made histories.

use super::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn w(client: u32, key: &str, value: &str, a: u64, b: u64, o: Outcome) -> Op {
    Op::write(client, key, value, ms(a), ms(b), o)
}

fn rd(client: u32, key: &str, value: Option<&str>, a: u64, b: u64) -> Op {
    Op::read(
        client,
        key,
        value.map(str::as_bytes),
        ms(a),
        ms(b),
        Outcome::Ok,
    )
}

fn fin(key: &str, value: Option<&str>, at: u64) -> Op {
    rd(99, key, value, at, at + 1).final_pass()
}

fn majority() -> Quorum {
    Quorum::explicit(2, 2, 3)
}

fn run(ops: Vec<Op>, q: Quorum) -> Report {
    check(&History::merge([ops]), q)
}

#[test]
fn quorum_intersection() {
    assert_eq!(majority().intersects(), Some(true));
    assert_eq!(Quorum::explicit(1, 1, 3).intersects(), Some(false));
    assert_eq!(Quorum::explicit(1, 3, 3).intersects(), Some(true));
    assert_eq!(Quorum::default().intersects(), Some(true));
    let q = Quorum {
        from: Some(3),
        ack_write: Some(1),
        ack_read: None,
    };
    assert_eq!(q.intersects(), Some(false), "2 + 1 = 3");
    assert_eq!(q.to_string(), "ack 2 + 1 <= from 3");
    let q = Quorum {
        from: Some(5),
        ack_write: Some(3),
        ack_read: None,
    };
    assert_eq!(q.intersects(), Some(true));
    assert_eq!(q.to_string(), "ack 3 + 3 > from 5");
    let q = Quorum {
        from: Some(4),
        ack_write: Some(1),
        ack_read: None,
    };
    assert_eq!(q.intersects(), Some(false), "1 + 3 = 4");
    assert_eq!(q.to_string(), "ack 3 + 1 <= from 4");
    let q = Quorum {
        from: None,
        ack_write: Some(1),
        ack_read: None,
    };
    assert_eq!(q.intersects(), None);
}

#[test]
fn a_clean_history_passes() {
    let r = run(
        vec![
            w(0, "set/0/0", "0:0", 0, 5, Outcome::Ok),
            w(0, "reg/0/0", "0:1", 6, 8, Outcome::Ok),
            rd(1, "reg/0/0", Some("0:1"), 9, 10),
            fin("set/0/0", Some("0:0"), 100),
            fin("reg/0/0", Some("0:1"), 100),
        ],
        majority(),
    );
    assert!(r.passed(), "{r}");
    assert_eq!(
        (
            r.writes,
            r.writes_ok,
            r.reads,
            r.set_acknowledged,
            r.registers
        ),
        (2, 2, 3, 1, 1)
    );
    assert_eq!(r.register_reads_checked, 2);
}

#[test]
fn an_acknowledged_write_missing_at_the_end_is_lost() {
    let r = run(
        vec![
            w(0, "set/0/0", "a", 0, 5, Outcome::Ok),
            w(0, "set/0/1", "b", 6, 9, Outcome::Ok),
            w(0, "set/0/2", "c", 10, 12, Outcome::Ok),
            fin("set/0/0", Some("a"), 100),
            fin("set/0/1", None, 100),
            fin("set/0/2", Some("zzz"), 100),
        ],
        majority(),
    );
    assert!(!r.passed());
    assert_eq!(r.lost, 2);
    // "zzz" was never written: also an impossible read.
    assert_eq!(r.impossible, 1);
    assert_eq!(r.lost_examples[0].key, b"set/0/1");
    assert_eq!(r.lost_examples[0].found, None);
    assert_eq!(r.lost_examples[1].found.as_deref(), Some(&b"zzz"[..]));
}

#[test]
fn the_last_answered_final_read_counts_and_no_answer_is_not_verified() {
    let failed_read = |key: &str, at: u64| {
        Op::read(99, key, None, ms(at), ms(at + 1), Outcome::Unknown)
            .with_status(504)
            .final_pass()
    };
    let r = run(
        vec![
            w(0, "set/0/0", "a", 0, 5, Outcome::Ok),
            w(0, "set/0/1", "b", 0, 5, Outcome::Ok),
            w(0, "reg/0/0", "0:1", 0, 5, Outcome::Ok),
            failed_read("set/0/0", 100),
            fin("set/0/0", Some("a"), 200),
            failed_read("set/0/1", 100),
            failed_read("set/0/1", 200),
            failed_read("reg/0/0", 200),
        ],
        majority(),
    );
    assert_eq!((r.lost, r.unverified), (0, 2));
    assert_eq!(
        r.unverified_keys,
        vec![b"reg/0/0".to_vec(), b"set/0/1".to_vec()]
    );
    assert!(!r.passed(), "not verified is not a pass");
}

#[test]
fn unknown_writes_are_counted_present_or_absent_never_lost() {
    let r = run(
        vec![
            w(0, "set/0/0", "a", 0, 5, Outcome::Unknown),
            w(0, "set/0/1", "b", 6, 9, Outcome::Unknown),
            w(0, "set/0/2", "c", 6, 9, Outcome::Unknown),
            w(0, "set/0/3", "d", 6, 9, Outcome::Failed),
            fin("set/0/0", Some("a"), 100),
            fin("set/0/1", None, 100),
            fin("set/0/3", None, 100),
        ],
        majority(),
    );
    assert!(r.passed(), "{r}");
    assert_eq!((r.unknown_present, r.unknown_absent), (1, 1));
    assert_eq!((r.writes_unknown, r.writes_failed), (3, 1));
}

#[test]
fn a_refused_write_found_at_the_end_is_impossible() {
    let r = run(
        vec![
            w(0, "set/0/0", "a", 0, 5, Outcome::Failed).with_status(503),
            fin("set/0/0", Some("a"), 100),
        ],
        majority(),
    );
    assert_eq!(r.impossible, 1);
    assert_eq!(r.impossible_examples[0].why, Why::WriteFailed);
}

#[test]
fn a_delete_or_another_write_explains_a_set_key_at_the_end() {
    let r = run(
        vec![
            w(0, "set/0/0", "a", 0, 5, Outcome::Ok),
            Op::delete(0, "set/0/0", ms(6), ms(7), Outcome::Unknown),
            w(0, "set/0/1", "b", 0, 5, Outcome::Ok),
            w(1, "set/0/1", "c", 0, 5, Outcome::Ok),
            fin("set/0/0", None, 100),
            fin("set/0/1", Some("c"), 100),
        ],
        majority(),
    );
    assert!(r.passed(), "{r}");
    assert_eq!(r.deletes, 1);
}

/// One client writes reg/0/0 with 0:1 (0..10), 0:2 (20..30), 0:3
/// (40..50).
fn register_writes() -> Vec<Op> {
    vec![
        w(0, "reg/0/0", "0:1", 0, 10, Outcome::Ok),
        w(0, "reg/0/0", "0:2", 20, 30, Outcome::Ok),
        w(0, "reg/0/0", "0:3", 40, 50, Outcome::Ok),
        fin("reg/0/0", Some("0:3"), 100),
    ]
}

#[test]
fn a_read_older_than_a_write_acknowledged_before_it_is_stale() {
    let mut ops = register_writes();
    ops.push(rd(1, "reg/0/0", Some("0:1"), 31, 32));
    let r = run(ops, majority());
    assert_eq!(r.stale, 1, "{r}");
    let s = &r.stale_examples[0];
    assert_eq!(s.read.as_deref(), Some(&b"0:1"[..]));
    assert_eq!(s.newest.as_deref(), Some(&b"0:2"[..]));
    assert_eq!(s.newest_completed, ms(30));
}

#[test]
fn absent_after_an_acknowledged_write_is_stale() {
    let mut ops = register_writes();
    ops.push(rd(1, "reg/0/0", None, 11, 12));
    let r = run(ops, majority());
    assert_eq!(r.stale, 1);
    assert_eq!(r.stale_examples[0].read, None);
}

#[test]
fn reads_concurrent_with_a_write_may_return_either_value() {
    let mut ops = register_writes();
    // 0:2 is being written (20..30): old and new are both fine.
    ops.push(rd(1, "reg/0/0", Some("0:1"), 21, 29));
    ops.push(rd(2, "reg/0/0", Some("0:2"), 21, 29));
    // Invoked exactly when 0:2 was acknowledged: not after it.
    ops.push(rd(3, "reg/0/0", Some("0:1"), 30, 31));
    // Absent before any write completed.
    ops.push(rd(4, "reg/0/0", None, 5, 6));
    let r = run(ops, majority());
    assert!(r.passed(), "{r}");
    assert_eq!(r.register_reads_checked, 5);
}

#[test]
fn an_unknown_write_read_late_is_allowed_but_counted() {
    let ops = vec![
        w(0, "reg/0/0", "0:1", 0, 10, Outcome::Ok),
        w(0, "reg/0/0", "0:2", 20, 30, Outcome::Unknown),
        w(0, "reg/0/0", "0:3", 40, 50, Outcome::Ok),
        // 0:2 may take effect after 0:3.
        rd(1, "reg/0/0", Some("0:2"), 60, 61),
        // 0:1 was acknowledged before 0:3 was invoked: stale.
        rd(1, "reg/0/0", Some("0:1"), 62, 63),
        fin("reg/0/0", Some("0:2"), 100),
    ];
    let r = run(ops, majority());
    assert_eq!((r.stale, r.late_unknown, r.lost), (1, 2, 0), "{r}");
}

#[test]
fn a_stale_final_read_loses_the_acknowledged_write() {
    let mut ops = register_writes();
    ops.pop();
    ops.push(fin("reg/0/0", Some("0:2"), 100));
    let r = run(ops, Quorum::explicit(1, 1, 3));
    assert_eq!((r.lost, r.stale), (1, 0));
    let l = &r.lost_examples[0];
    assert_eq!(l.value.as_deref(), Some(&b"0:3"[..]));
    assert_eq!(l.found.as_deref(), Some(&b"0:2"[..]));
}

#[test]
fn stale_reads_are_not_checked_when_quorums_need_not_meet() {
    let mut ops = register_writes();
    ops.push(rd(1, "reg/0/0", Some("0:1"), 31, 32));
    let r = run(ops, Quorum::explicit(1, 1, 3));
    assert!(!r.stale_checked);
    assert_eq!(r.stale, 0);
    assert!(r.passed());
    // ... but an impossible read still is.
    let mut ops = register_writes();
    ops.push(rd(1, "reg/0/0", Some("7:7"), 31, 32));
    assert_eq!(run(ops, Quorum::explicit(1, 1, 3)).impossible, 1);
}

#[test]
fn impossible_reads_say_why() {
    let mut ops = register_writes();
    ops.push(w(0, "reg/0/0", "0:9", 60, 70, Outcome::Failed));
    ops.push(w(0, "reg/0/0", "0:4", 80, 90, Outcome::Ok));
    ops.push(rd(1, "reg/0/0", Some("5:5"), 51, 52));
    ops.push(rd(1, "reg/0/0", Some("0:9"), 71, 72));
    ops.push(rd(1, "reg/0/0", Some("0:4"), 73, 74));
    let r = run(ops, majority());
    let why: Vec<Why> = r.impossible_examples.iter().map(|i| i.why).collect();
    assert_eq!(
        why,
        vec![Why::NeverWritten, Why::WriteFailed, Why::WrittenLater]
    );
    assert_eq!(r.stale, 0, "an impossible read is not also stale");
}

#[test]
fn examples_are_capped_and_ordered_by_time() {
    let mut ops = Vec::new();
    for i in 0..30u64 {
        let key = format!("set/0/{i}");
        ops.push(w(0, &key, "v", 100 - i, 101 - i, Outcome::Ok));
        ops.push(fin(&key, None, 200));
    }
    let r = run(ops, majority());
    assert_eq!(r.lost, 30);
    assert_eq!(r.lost_examples.len(), EXAMPLES);
    assert!(r
        .lost_examples
        .windows(2)
        .all(|p| p[0].invoked <= p[1].invoked));
    assert_eq!(r.lost_examples[0].key, b"set/0/29");
}

#[test]
fn checking_is_deterministic() {
    let mut ops = register_writes();
    ops.push(rd(1, "reg/0/0", Some("0:1"), 31, 32));
    ops.push(w(0, "set/0/0", "a", 0, 5, Outcome::Ok));
    ops.push(fin("set/0/0", None, 100));
    let a = run(ops.clone(), majority());
    ops.reverse();
    let b = run(ops, majority());
    assert_eq!(a, b);
    assert_eq!(a.to_string(), b.to_string());
}

#[test]
fn golden_summary_passed() {
    let mut ops = Vec::new();
    for i in 0..1500u64 {
        let o = if i % 100 == 7 {
            Outcome::Unknown
        } else {
            Outcome::Ok
        };
        let key = format!("set/{}/{i}", i % 4);
        ops.push(w((i % 4) as u32, &key, &format!("v{i}"), i, i + 1, o));
        let found = (i % 200 != 7).then(|| format!("v{i}"));
        ops.push(fin(&key, found.as_deref(), 10_000));
    }
    ops.extend(register_writes());
    ops.push(rd(1, "reg/0/0", Some("0:2"), 31, 32));
    let r = run(ops, majority());
    assert_eq!(
        r.to_string(),
        "checked 1,503 writes (1,488 acknowledged, 15 unknown), 1,502 reads: 0 lost, 0 stale, 0 impossible\n\
         \x20 set keys: 1,485 acknowledged writes checked by the final reads; unknown writes: 7 present, 8 absent\n\
         \x20 register keys: 1, reads checked: 2; reads during the run checked (ack 2 + 2 > from 3)\n\
         passed\n"
    );
    assert!(r.passed());
}

#[test]
fn golden_summary_failed() {
    let mut ops = register_writes();
    ops.pop();
    ops.push(fin("reg/0/0", Some("0:3"), 100).on("http://c:3"));
    ops.push(rd(1, "reg/0/0", Some("0:1"), 31, 32).on("http://b:2"));
    ops.push(rd(2, "reg/0/0", Some("9:9"), 33, 34).on("http://a:1"));
    ops.push(w(3, "set/3/0", "3:0", 1, 4, Outcome::Ok).on("http://a:1"));
    ops.push(fin("set/3/0", None, 100).on("http://b:2"));
    ops.push(w(3, "set/3/1", "3:1", 5, 6, Outcome::Failed));
    ops.push(w(3, "set/3/2", "3:2", 7, 8, Outcome::Ok));
    ops.push(Op::read(9, "set/3/2", None, ms(90), ms(91), Outcome::Unknown).final_pass());
    ops.push(Op::write(4, "other", "x", ms(1), ms(2), Outcome::Ok));
    let r = run(ops, majority());
    assert_eq!(
        r.to_string(),
        "checked 7 writes (6 acknowledged, 1 failed, 0 unknown), 5 reads: 1 lost, 1 stale, 1 impossible, 1 not verified\n\
         \x20 set keys: 2 acknowledged writes checked by the final reads\n\
         \x20 register keys: 1, reads checked: 3; reads during the run checked (ack 2 + 2 > from 3)\n\
         \x20 1 operations on other keys, not checked\n\
         lost writes (1):\n\
         \x20 \"set/3/0\" = \"3:0\": acknowledged to client 3 via http://a:1 at 0.001s..0.004s; the final read at 0.101s via http://b:2 found absent\n\
         stale reads (1):\n\
         \x20 \"reg/0/0\": client 1 read \"0:1\" via http://b:2 at 0.031s..0.032s, but \"0:2\" had been acknowledged at 0.030s\n\
         impossible reads (1):\n\
         \x20 \"reg/0/0\": client 2 read \"9:9\" via http://a:1 at 0.033s..0.034s: never written\n\
         not verified (the final read got no answer) (1):\n\
         \x20 \"set/3/2\"\n\
         FAILED\n"
    );
}

#[test]
fn golden_first_line_when_stale_reads_are_not_checked() {
    let r = run(register_writes(), Quorum::explicit(1, 1, 3));
    let text = r.to_string();
    assert_eq!(
        text.lines().next().unwrap(),
        "checked 3 writes (3 acknowledged, 0 unknown), 1 reads: 0 lost, stale not checked, 0 impossible"
    );
    assert!(text.contains(
        "reads during the run not checked (ack 1 + 1 <= from 3: a read need not meet an acknowledged write)"
    ));
}

/// `lin/k` operations, each with its own `ack` of `from = 3`.
fn q(op: Op, ack: u32) -> Op {
    op.with_quorum(ack, 3)
}

#[test]
fn per_operation_quorums_judge_only_the_pairs_that_meet() {
    let ok = Outcome::Ok;
    let base = || {
        vec![
            q(w(1, "lin/k", "a", 0, 10, ok), 2),
            q(w(2, "lin/k", "b", 20, 30, ok), 2),
            q(fin("lin/k", Some("b"), 100), 3),
        ]
    };
    let with = |extra: Op| {
        let mut ops = base();
        ops.push(extra);
        run(ops, Quorum::default())
    };
    // Clean: the final read finds the newest.
    let r = run(base(), Quorum::default());
    assert!(
        r.passed() && r.quorum_keys == 1 && r.quorum_reads_checked == 1,
        "{r}"
    );
    // "a" after "b" was acknowledged, both at 2 of 3: stale.
    let r = with(q(rd(3, "lin/k", Some("a"), 40, 45), 2));
    assert_eq!((r.stale, r.lost), (1, 0), "{r}");
    assert_eq!(r.stale_examples[0].newest.as_deref(), Some(&b"b"[..]));
    // The same read at ack=1: 1 + 2 <= 3, it need not meet "b"'s replicas.
    let r = with(q(rd(3, "lin/k", Some("a"), 40, 45), 1));
    assert!(r.passed(), "{r}");
    // The key's initial absence after "b" at quorum: stale.
    let r = with(q(rd(3, "lin/k", None, 40, 45), 2));
    assert_eq!(r.stale, 1, "{r}");
    // A read concurrent with "b" may return "a".
    let r = with(q(rd(3, "lin/k", Some("a"), 25, 45), 2));
    assert!(r.passed(), "{r}");
}

#[test]
fn a_write_whose_quorum_missed_the_newer_ones_is_not_known_older() {
    let ok = Outcome::Ok;
    // "a" went to 1 replica: "b"'s 2 of 3 need not have seen it, so "b"
    // may be older in the replicas' order (versions decide), and reading
    // "a" after "b" is allowed.
    let r = run(
        vec![
            q(w(1, "lin/k", "a", 0, 10, ok), 1),
            q(w(2, "lin/k", "b", 20, 30, ok), 2),
            q(rd(3, "lin/k", Some("a"), 40, 45), 2),
            q(fin("lin/k", Some("a"), 100), 3),
        ],
        Quorum::default(),
    );
    assert!(r.passed(), "{r}");
    // A write without an answer may take effect late: never stale.
    let r = run(
        vec![
            q(w(1, "lin/k", "a", 0, 10, Outcome::Unknown), 2),
            q(w(2, "lin/k", "b", 20, 30, ok), 2),
            q(rd(3, "lin/k", Some("a"), 40, 45), 2),
            q(fin("lin/k", Some("a"), 100), 3),
        ],
        Quorum::default(),
    );
    assert!(r.passed(), "{r}");
}

#[test]
fn per_operation_quorums_lose_at_the_final_read_and_need_one() {
    let ok = Outcome::Ok;
    let r = run(
        vec![
            q(w(1, "lin/k", "a", 0, 10, ok), 2),
            q(w(2, "lin/k", "b", 20, 30, ok), 2),
            q(fin("lin/k", Some("a"), 100), 3),
        ],
        Quorum::default(),
    );
    assert_eq!((r.lost, r.stale), (1, 0), "{r}");
    assert_eq!(r.lost_examples[0].value.as_deref(), Some(&b"b"[..]));
    let r = run(vec![q(w(1, "lin/k", "a", 0, 10, ok), 2)], Quorum::default());
    assert_eq!((r.unverified, r.passed()), (1, false), "{r}");
    // Without a quorum per operation, `lin/` keys are the linearizability
    // check's: this one counts nothing.
    let r = run(
        vec![
            w(1, "lin/k", "a", 0, 10, ok),
            w(2, "lin/k", "b", 20, 30, ok),
            fin("lin/k", Some("a"), 100),
        ],
        majority(),
    );
    assert_eq!((r.quorum_keys, r.lost), (0, 0), "{r}");
}
