//! Property test: random sequences of put, delete, batch, get, scan, flush,
//! compact, close and reopen must agree with an in-memory BTreeMap model.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use strata_engine::{Db, WriteBatch};

#[derive(Clone, Debug)]
enum Op {
    Put(u8, Vec<u8>),
    Delete(u8),
    Batch(Vec<(u8, Option<Vec<u8>>)>),
    Get(u8),
    Scan(Option<u8>, Option<u8>),
    Flush,
    Compact,
    Reopen,
}

fn key(k: u8) -> Vec<u8> {
    // Keys of different lengths, some prefixes of others.
    match k % 3 {
        0 => vec![b'k', k],
        1 => vec![b'k', k, k],
        _ => vec![b'k'; (k % 7) as usize],
    }
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::collection::vec(any::<u8>(), 0..40),
        1 => proptest::collection::vec(any::<u8>(), 200..2000),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (any::<u8>(), value()).prop_map(|(k, v)| Op::Put(k, v)),
        6 => any::<u8>().prop_map(Op::Delete),
        4 => proptest::collection::vec((any::<u8>(), proptest::option::of(value())), 1..8).prop_map(Op::Batch),
        8 => any::<u8>().prop_map(Op::Get),
        3 => (proptest::option::of(any::<u8>()), proptest::option::of(any::<u8>())).prop_map(|(a, b)| Op::Scan(a, b)),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

fn check_scan(
    db: &Db,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
) {
    let lo_b = lo.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let hi_b = hi.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    if let (Some(l), Some(h)) = (&lo, &hi) {
        if l > h {
            return;
        }
    }
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan((lo_b, hi_b))
        .unwrap()
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .range::<Vec<u8>, _>((
            lo.map_or(Bound::Unbounded, Bound::Included),
            hi.map_or(Bound::Unbounded, Bound::Excluded),
        ))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got, want);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_model(ops in proptest::collection::vec(op(), 1..300)) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(dir.path(), common::tiny()).unwrap();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    db.put(&key(k), &v).unwrap();
                    model.insert(key(k), v);
                }
                Op::Delete(k) => {
                    db.delete(&key(k)).unwrap();
                    model.remove(&key(k));
                }
                Op::Batch(entries) => {
                    let mut b = WriteBatch::new();
                    for (k, v) in entries {
                        match v {
                            Some(v) => {
                                b.put(&key(k), &v);
                                model.insert(key(k), v);
                            }
                            None => {
                                b.delete(&key(k));
                                model.remove(&key(k));
                            }
                        }
                    }
                    db.write(b).unwrap();
                }
                Op::Get(k) => {
                    let got = db.get(&key(k)).unwrap().map(|b| b.to_vec());
                    prop_assert_eq!(got, model.get(&key(k)).cloned());
                }
                Op::Scan(a, b) => check_scan(&db, &model, a.map(key), b.map(key)),
                Op::Flush => db.flush().unwrap(),
                Op::Compact => db.compact().unwrap(),
                Op::Reopen => {
                    db.close().unwrap();
                    db.close().unwrap(); // idempotent
                    drop(db);
                    db = Db::open(dir.path(), common::tiny()).unwrap();
                }
            }
        }
        check_scan(&db, &model, None, None);
        db.compact().unwrap();
        check_scan(&db, &model, None, None);
        for k in 0..=255u8 {
            prop_assert_eq!(db.get(&key(k)).unwrap().map(|b| b.to_vec()), model.get(&key(k)).cloned());
        }
    }
}
