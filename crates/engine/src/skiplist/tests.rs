//! The skiplist's tests: order, lookups, cursors, the arena, one writer
//! with concurrent readers.

use super::*;
use crate::key::{seek_trailer, trailer, Kind};
use std::sync::Arc;

fn h(user: &[u8]) -> u64 {
    crate::sstable::bloom::hash(user)
}

#[test]
fn ordered_insert_and_seek() {
    let l = SkipList::new(64);
    let mut keys: Vec<u32> = (0..5000).map(|i| (i * 7919) % 5000).collect();
    for &k in &keys {
        let u = format!("key{k:05}");
        l.insert(
            u.as_bytes(),
            h(u.as_bytes()),
            trailer(k as u64, Kind::Put),
            u.as_bytes(),
        );
    }
    // Long keys and prefixes of each other.
    l.insert(
        b"key00001-and-a-much-longer-tail",
        h(b"key00001-and-a-much-longer-tail"),
        trailer(1, Kind::Put),
        b"long",
    );
    l.insert(b"key0000", h(b"key0000"), trailer(1, Kind::Put), b"short");
    assert_eq!(l.len(), 5002);
    keys.sort();
    let mut c = l.cursor();
    c.seek_to_first();
    let mut prev: Option<Vec<u8>> = None;
    let mut n = 0;
    while c.valid() {
        if let Some(p) = &prev {
            assert!(p.as_slice() < c.user_key(), "{p:?} !< {:?}", c.user_key());
        }
        prev = Some(c.user_key().to_vec());
        n += 1;
        c.next();
    }
    assert_eq!(n, 5002);
    c.seek(b"key02500", seek_trailer(1 << 40));
    assert_eq!(c.user_key(), b"key02500");
    assert_eq!(c.value(), b"key02500");
    c.seek(b"key00001-", seek_trailer(1 << 40));
    assert_eq!(c.user_key(), b"key00001-and-a-much-longer-tail");
    c.seek(b"zzz", 0);
    assert!(!c.valid());
}

#[test]
fn versions_newest_first_and_big_values() {
    let l = SkipList::new(64);
    l.insert(b"k", h(b"k"), trailer(1, Kind::Put), b"v1");
    l.insert(b"k", h(b"k"), trailer(3, Kind::Put), &vec![9u8; 3 << 20]);
    l.insert(b"k", h(b"k"), trailer(2, Kind::Delete), b"");
    let mut c = l.cursor();
    c.seek(b"k", seek_trailer(10));
    assert_eq!(key::trailer_seq(c.trailer()), 3);
    assert_eq!(c.value().len(), 3 << 20);
    c.seek(b"k", seek_trailer(2));
    assert_eq!(key::trailer_kind(c.trailer()), Some(Kind::Delete));
    c.next();
    assert_eq!(c.value(), b"v1");
    assert!(l.memory() >= 3 << 20);
}

#[test]
fn readers_run_while_one_writer_inserts() {
    let l = Arc::new(SkipList::new(64));
    let w = {
        let l = l.clone();
        std::thread::spawn(move || {
            for i in 0..20_000u64 {
                let k = (i * 2654435761) % 1_000_003;
                l.insert(
                    &k.to_be_bytes(),
                    h(&k.to_be_bytes()),
                    trailer(i + 1, Kind::Put),
                    &i.to_le_bytes(),
                );
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let l = l.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let mut c = l.cursor();
                    c.seek_to_first();
                    let mut last: Option<Vec<u8>> = None;
                    while c.valid() {
                        let k = c.user_key().to_vec();
                        if let Some(p) = &last {
                            assert!(*p <= k);
                        }
                        last = Some(k);
                        c.next();
                    }
                }
            })
        })
        .collect();
    w.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(l.len(), 20_000);
}

/// `find` (the hash index) answers what a seek answers, whatever the
/// collisions: 4 buckets for hundreds of keys, keys that share 16-byte
/// prefixes, keys that are prefixes of one another, zero bytes, and
/// with `weak`, a hash that gives many keys the same bucket and tag.
mod find_matches_seek {
    use super::*;
    use proptest::prelude::*;

    fn user_key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(b'b')], 0..4),
            proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a')], 15..19).prop_map(
                |mut k| {
                    k[..15].fill(b'p');
                    k
                }
            ),
        ]
    }

    proptest! {
        #[test]
        fn find_equals_seek(
            writes in proptest::collection::vec((user_key(), any::<bool>()), 1..300),
            probes in proptest::collection::vec((user_key(), 0u64..320), 1..100),
            weak in any::<bool>(),
        ) {
            let h = |k: &[u8]| if weak { (k.len() as u64 % 3) << 60 } else { h(k) };
            let l = SkipList::new(4);
            for (seq, (k, put)) in writes.iter().enumerate() {
                let kind = if *put { Kind::Put } else { Kind::Delete };
                let v = (seq as u64).to_le_bytes();
                l.insert(k, h(k), trailer(seq as u64 + 1, kind), &v);
            }
            for (k, snapshot) in probes {
                let bound = seek_trailer(snapshot);
                let mut c = l.cursor();
                c.seek(&k, bound);
                let want = (c.valid() && c.user_key() == k.as_slice())
                    .then(|| (c.trailer(), c.value().to_vec()));
                let f = l.find(&k, h(&k), bound);
                let got = f.valid().then(|| (f.trailer(), f.value().to_vec()));
                prop_assert_eq!(got, want, "key {:?} snapshot {}", k, snapshot);
            }
        }

        #[test]
        fn insert_many_equals_one_by_one(
            writes in proptest::collection::vec((user_key(), any::<bool>()), 1..400),
            cuts in proptest::collection::vec(1usize..40, 1..40),
        ) {
            // The same writes, one by one into `one` and in batches of
            // the given sizes into `many` (keys repeat: user_key draws
            // from a small alphabet).
            let (one, many) = (SkipList::new(4), SkipList::new(4));
            let entries: Vec<(Vec<u8>, u64, [u8; 8])> = writes
                .iter()
                .enumerate()
                .map(|(seq, (k, put))| {
                    let kind = if *put { Kind::Put } else { Kind::Delete };
                    (k.clone(), trailer(seq as u64 + 1, kind), (seq as u64).to_le_bytes())
                })
                .collect();
            for (k, t, v) in &entries {
                one.insert(k, h(k), *t, v);
            }
            let mut rest = &entries[..];
            for &n in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (batch, tail) = rest.split_at(n.min(rest.len()));
                let batch: Vec<Entry<'_>> = batch
                    .iter()
                    .map(|(k, t, v)| Entry { user: k, hash: h(k), trailer: *t, value: v })
                    .collect();
                many.insert_many(&batch);
                rest = tail;
            }
            let all = |l: &SkipList| {
                let mut c = l.cursor();
                c.seek_to_first();
                let mut v = Vec::new();
                while c.valid() {
                    v.push((c.user_key().to_vec(), c.trailer(), c.value().to_vec()));
                    c.next();
                }
                v
            };
            prop_assert_eq!(all(&many), all(&one));
            prop_assert_eq!(many.len(), entries.len());
            for (k, _, _) in &entries {
                for snapshot in [0u64, 5, 50, 500] {
                    let bound = seek_trailer(snapshot);
                    let (a, b) = (one.find(k, h(k), bound), many.find(k, h(k), bound));
                    prop_assert_eq!(
                        a.valid().then(|| a.trailer()),
                        b.valid().then(|| b.trailer())
                    );
                }
            }
        }
    }
}

#[test]
fn find_while_one_writer_inserts() {
    let l = Arc::new(SkipList::new(1 << 10));
    let w = {
        let l = l.clone();
        std::thread::spawn(move || {
            for i in 0..50_000u64 {
                let k = (i % 5_000).to_be_bytes();
                l.insert(&k, h(&k), trailer(i + 1, Kind::Put), &i.to_le_bytes());
            }
        })
    };
    let mut found = 0;
    while !w.is_finished() {
        for k in 0..5_000u64 {
            let c = l.find(&k.to_be_bytes(), h(&k.to_be_bytes()), u64::MAX);
            if c.valid() {
                found += 1;
                let v = u64::from_le_bytes(c.value().try_into().unwrap());
                assert_eq!(v % 5_000, k, "value of another key");
                assert_eq!(key::trailer_seq(c.trailer()), v + 1);
            }
        }
    }
    w.join().unwrap();
    for k in 0..5_000u64 {
        let c = l.find(&k.to_be_bytes(), h(&k.to_be_bytes()), u64::MAX);
        assert_eq!(
            key::trailer_seq(c.trailer()),
            45_000 + k + 1,
            "newest version"
        );
    }
    assert!(found > 0 || l.len() == 50_000);
}
