//! highload-dht's wrk2 scripts (seed 002): upsert and get by random key.

use std::time::Duration;

use strata_lab::load::workload::{Op, Workload};

#[test]
fn upsert_sends_random_letter_keys_and_3_to_100_byte_values() {
    let w = Workload::builtin("highload-upsert", 0, 0).unwrap();
    let mut g = w.generator(0, 9);
    let (mut klen, mut vlen) = (0usize, 0usize);
    let n = 20_000;
    for _ in 0..n {
        match g.next(Duration::ZERO).op {
            Op::Put { key, value_len } => {
                assert!((3..=100).contains(&key.len()), "{key}");
                assert!(key.bytes().all(|b| b.is_ascii_lowercase()));
                assert!((3..=100).contains(&value_len));
                klen += key.len();
                vlen += value_len;
            }
            other => panic!("{other:?}"),
        }
    }
    // Both uniform on 3..=100: mean 51.5.
    assert!((klen as f64 / n as f64 - 51.5).abs() < 1.0);
    assert!((vlen as f64 / n as f64 - 51.5).abs() < 1.0);
    assert_eq!(w.key_space(), None);
}

#[test]
fn get_reads_decimal_ids_up_to_keys() {
    let w = Workload::builtin("highload-get", 4_000_000, 0).unwrap();
    let mut g = w.generator(3, 9);
    for _ in 0..10_000 {
        let n = g.next(Duration::ZERO);
        match n.op {
            Op::Get { key } => {
                let id: u64 = key.parse().unwrap();
                assert_eq!(Some(id), n.key_index);
                assert!(id <= 4_000_000);
                assert_eq!(key, id.to_string(), "no padding, as the script sends");
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(w.key_space(), Some(4_000_001));
    let small = Workload::builtin("highload-get", 9, 0).unwrap();
    let pre: Vec<_> = small.preload().collect();
    assert_eq!(pre.len(), 10);
    assert_eq!(pre[9].0, "9");
    assert!(pre.iter().all(|(_, l)| (3..=100).contains(l)));
}
