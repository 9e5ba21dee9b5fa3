//! Mixes: ratios, YCSB A–F proportions, value sizes, per-worker seeding,
//! TOML parsing and its errors.

use std::collections::HashMap;
use std::time::Duration;

use strata_lab::load::workload::values::ValueSize;
use strata_lab::load::workload::{worker_rng, Next, Op, Workload};

fn draw(w: &Workload, index: usize, seed: u64, n: usize) -> Vec<Next> {
    let mut g = w.generator(index, seed);
    (0..n).map(|_| g.next(Duration::ZERO)).collect()
}

fn shares(ops: &[Next]) -> HashMap<&'static str, f64> {
    let mut m: HashMap<&'static str, f64> = HashMap::new();
    for n in ops {
        *m.entry(n.op.name()).or_default() += 1.0 / ops.len() as f64;
    }
    m
}

fn close(m: &HashMap<&'static str, f64>, op: &str, want: f64) {
    let got = m.get(op).copied().unwrap_or(0.0);
    // 100k draws: the standard error of a share is at most 0.16%.
    assert!((got - want).abs() < 0.01, "{op}: {got} vs {want} in {m:?}");
}

#[test]
fn toml_mix_ratios_hold_over_100k_draws() {
    let w = Workload::from_toml_str(
        r#"
name = "my mix"
keys = 1_000_000
[mix]
get = 0.7
put = 0.2
delete = 0.05
range = 0.05
[key]
distribution = "zipfian"
theta = 0.99
[value]
size = "gamma"
shape = 2.0
scale = 512.0
[range]
length = 10
"#,
    )
    .unwrap();
    let ops = draw(&w, 0, 42, 100_000);
    let m = shares(&ops);
    close(&m, "get", 0.7);
    close(&m, "put", 0.2);
    close(&m, "delete", 0.05);
    close(&m, "range", 0.05);
    for n in &ops {
        let i = n.key_index.unwrap();
        assert!(i < 1_000_000);
        if let Op::Range {
            start,
            end,
            limit_hint,
        } = &n.op
        {
            assert_eq!(start, &format!("{i:016}"));
            assert_eq!(end, &format!("{:016}", i + 10));
            assert_eq!(*limit_hint, 10.min(1_000_000 - i as usize));
        }
    }
    assert_eq!(w.key_space(), Some(1_000_000));
    assert!(
        w.describe().starts_with("my mix: get 70.0%"),
        "{}",
        w.describe()
    );
}

#[test]
fn builtin_put_get_mixed_keep_the_old_key_format() {
    let w = Workload::builtin("mixed", 1000, 100).unwrap();
    let ops = draw(&w, 0, 1, 100_000);
    let m = shares(&ops);
    close(&m, "get", 0.5);
    close(&m, "put", 0.5);
    for n in &ops {
        let i = n.key_index.unwrap();
        assert_eq!(n.op.key(), format!("{i:016}"));
        if let Op::Put { value_len, .. } = n.op {
            assert_eq!(value_len, 100);
        }
    }
    let put = Workload::builtin("put", 10, 7).unwrap();
    assert!(draw(&put, 0, 1, 100).iter().all(|n| n.op.name() == "put"));
    assert_eq!(
        put.preload().count(),
        0,
        "a write-only run needs no preload"
    );
    let get = Workload::builtin("get", 10, 7).unwrap();
    let pre: Vec<(String, usize)> = get.preload().collect();
    assert_eq!(pre.len(), 10);
    assert_eq!(pre[3], (format!("{:016}", 3), 7));
}

#[test]
fn ycsb_core_workloads_have_their_proportions() {
    let want: [(&str, &[(&str, f64)]); 6] = [
        ("ycsb-a", &[("get", 0.5), ("put", 0.5)]),
        ("ycsb-b", &[("get", 0.95), ("put", 0.05)]),
        ("ycsb-c", &[("get", 1.0)]),
        ("ycsb-d", &[("get", 0.95), ("put", 0.05)]),
        ("ycsb-e", &[("range", 0.95), ("put", 0.05)]),
        ("ycsb-f", &[("get", 0.5), ("rmw", 0.5)]),
    ];
    for (name, ops) in want {
        let w = Workload::builtin(name, 1000, 0).unwrap();
        let drawn = draw(&w, 0, 5, 100_000);
        let m = shares(&drawn);
        for (op, share) in ops {
            close(&m, op, *share);
        }
        assert_eq!(m.len(), ops.len(), "{name}: {m:?}");
        // 10 fields × 100 B records.
        for n in &drawn {
            if let Op::Put { value_len, .. } | Op::ReadModifyWrite { value_len, .. } = n.op {
                assert_eq!(value_len, 1000);
            }
        }
        assert_eq!(w.preload().count(), 1000, "{name} loads its records");
        let rpo = w.requests_per_op();
        let want_rpo = if name == "ycsb-f" { 1.5 } else { 1.0 };
        assert!((rpo - want_rpo).abs() < 1e-9, "{name}: {rpo}");
    }
}

#[test]
fn ycsb_e_scans_are_uniform_1_to_100_and_inserts_follow_the_counter() {
    let w = Workload::builtin("ycsb-e", 1000, 0).unwrap();
    let ops = draw(&w, 0, 9, 100_000);
    let mut lens = vec![0u64; 101];
    let mut next_insert = 1000;
    for n in &ops {
        match &n.op {
            Op::Range { start, end, .. } => {
                let s: u64 = start.parse().unwrap();
                let e: u64 = end.parse().unwrap();
                assert!((1..=100).contains(&(e - s)));
                lens[(e - s) as usize] += 1;
            }
            Op::Put { key, .. } => {
                assert_eq!(key, &format!("{next_insert:016}"));
                next_insert += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    let mean = lens
        .iter()
        .enumerate()
        .map(|(l, c)| l as f64 * *c as f64)
        .sum::<f64>()
        / lens.iter().sum::<u64>() as f64;
    assert!((mean - 50.5).abs() < 0.7, "scan length mean {mean}");
    assert_eq!(w.key_space(), None, "inserts make the key space unbounded");
}

#[test]
fn inserts_are_shared_across_workers() {
    let w = Workload::builtin("ycsb-d", 100, 0).unwrap();
    let mut a = w.generator(0, 1);
    let mut b = w.generator(1, 1);
    let mut inserted = Vec::new();
    for _ in 0..20_000 {
        for g in [&mut a, &mut b] {
            if let Next {
                op: Op::Put { .. },
                key_index: Some(i),
            } = g.next(Duration::ZERO)
            {
                inserted.push(i);
            }
        }
    }
    let n = inserted.len() as u64;
    inserted.sort_unstable();
    assert_eq!(
        inserted,
        (100..100 + n).collect::<Vec<_>>(),
        "no key inserted twice"
    );
}

#[test]
fn workers_differ_and_a_seed_index_pair_repeats() {
    for name in [
        "mixed",
        "ycsb-a",
        "ycsb-c",
        "highload-upsert",
        "highload-get",
    ] {
        let w = Workload::builtin(name, 1_000_000, 100).unwrap();
        let a = draw(&w, 0, 77, 1000);
        let again = draw(&w, 0, 77, 1000);
        let other = draw(&w, 1, 77, 1000);
        let other_seed = draw(&w, 0, 78, 1000);
        assert_eq!(a, again, "{name}: same (seed, index), same stream");
        assert_ne!(a, other, "{name}: another worker, another stream");
        assert_ne!(a, other_seed, "{name}: another seed, another stream");
        let same = a.iter().zip(&other).filter(|(x, y)| x == y).count();
        assert!(
            same < 100,
            "{name}: {same} of 1000 ops equal across workers"
        );
    }
}

#[test]
fn gamma_sizes_have_their_mean_and_variance() {
    let v = ValueSize::gamma(2.0, 512.0).unwrap();
    let mut rng = worker_rng(3, 3);
    let n = 100_000;
    let xs: Vec<f64> = (0..n).map(|_| v.sample(&mut rng) as f64).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    // mean 1024 (se ≈ 2.3), variance 524,288 (se ≈ 1.2% for shape 2).
    assert!((mean - 1024.0).abs() < 12.0, "mean {mean}");
    assert!((var / 524_288.0 - 1.0).abs() < 0.05, "variance {var}");
    let u = ValueSize::uniform(10, 20).unwrap();
    let ys: Vec<usize> = (0..10_000).map(|_| u.sample(&mut rng)).collect();
    assert!(ys.iter().all(|y| (10..=20).contains(y)));
    assert!(ys.contains(&10) && ys.contains(&20));
}

#[test]
fn toml_errors_say_what_is_wrong() {
    let err = |s: &str| Workload::from_toml_str(s).unwrap_err();
    let e = err("keys = 10\n[mix]\nget = 1.0\nfoo = 2\n");
    assert!(e.contains("unknown field `foo`"), "{e}");
    let e = err("keys = 10\nwat = 1\n[mix]\nget = 1.0\n");
    assert!(e.contains("unknown field `wat`"), "{e}");
    let e = err("keys = 10\n[mix]\nget = 0.0\n");
    assert!(e.contains("must sum to more than 0"), "{e}");
    let e = err("[mix]\nget = -1.0\nput = 2.0\n");
    assert!(e.contains("non-negative"), "{e}");
    let e = err("[mix]\nget = 1.0\n[key]\ndistribution = \"zipf\"\n");
    assert!(e.contains("expected \"uniform\", \"zipfian\""), "{e}");
    let e = err("[mix]\nget = 1.0\n[key]\ndistribution = \"zipfian\"\ntheta = 1.0\n");
    assert!(e.contains("theta must be in (0, 1)"), "{e}");
    let e = err("[mix]\nput = 1.0\n[value]\nsize = \"gamma\"\nshape = 2.0\n");
    assert!(e.contains("`scale`"), "{e}");
    let e = err("[mix]\nput = 1.0\n[value]\nsize = \"fixed\"\nbytes = 1\nshape = 2.0\n");
    assert!(e.contains("`shape` does not apply"), "{e}");
    let e = err("[mix]\nrange = 1.0\n[range]\nlength = 5\nmin = 1\n");
    assert!(e.contains("[range]"), "{e}");
    let e = err("keys = 0\n[mix]\nget = 1.0\n");
    assert!(e.contains("at least 1 key"), "{e}");
    let e = err("keys = 10\n");
    assert!(e.contains("missing field `mix`"), "{e}");
    let e = Workload::builtin("ycsb-g", 10, 10).unwrap_err();
    assert!(e.contains("ycsb-a") && e.contains("libri"), "{e}");
}

#[test]
fn shipped_example_files_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let w = Workload::from_toml_file(&p).unwrap_or_else(|e| panic!("{e}"));
            let ops = draw(&w, 0, 1, 100);
            assert_eq!(ops.len(), 100, "{}", w.describe());
            n += 1;
        }
    }
    assert!(n >= 3, "example workloads in {}", dir.display());
}

#[test]
fn key_prefix_is_prepended() {
    // Integer ratios are fine too.
    let w = Workload::from_toml_str("key_prefix = \"user\"\nkeys = 50\n[mix]\nget = 1\n").unwrap();
    assert_eq!(w.key_space(), Some(50));
    let w =
        Workload::from_toml_str("key_prefix = \"user\"\nkeys = 50\n[mix]\nget = 1.0\n").unwrap();
    for n in draw(&w, 0, 1, 100) {
        assert_eq!(n.op.key(), format!("user{:016}", n.key_index.unwrap()));
    }
}

#[test]
fn shares_of_a_run_preload_insert_and_step_through_the_whole_run_once() {
    use std::collections::BTreeSet;
    use strata_lab::load::segment::Segment;
    let whole = Workload::builtin("get", 1000, 100).unwrap();
    let all: Vec<(String, usize)> = whole.preload().collect();
    assert_eq!(all.len(), 1000);
    // Three shares preload every record once, each with the whole run's size.
    let mut union = Vec::new();
    for i in 0..3 {
        let w = Workload::builtin("get", 1000, 100)
            .unwrap()
            .with_segment(Segment::new(i, 3).unwrap())
            .unwrap();
        assert!(w.describe().contains(&format!("segment {}/3", i + 1)));
        union.extend(w.preload());
    }
    union.sort();
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(union, sorted);

    // Inserts: two shares of 500 each are the whole run's keys 1000..2000.
    let mut inserted = BTreeSet::new();
    for i in 0..2 {
        let w = Workload::builtin("ycsb-d", 1000, 100)
            .unwrap()
            .with_segment(Segment::new(i, 2).unwrap())
            .unwrap();
        let mut g = w.generator(0, 9);
        let mut mine = 0;
        while mine < 500 {
            let n = g.next(Duration::ZERO);
            if let (Op::Put { key, .. }, Some(k)) = (&n.op, n.key_index) {
                if k >= 1000 {
                    assert!(inserted.insert(key.clone()), "{key} inserted twice");
                    mine += 1;
                }
            }
        }
    }
    let want: BTreeSet<String> = (1000..2000).map(|k| format!("{k:016}")).collect();
    assert_eq!(inserted, want);

    // A sequential scan: the shares' steps are the whole run's 0, 1, 2, ...
    let seq =
        "name = \"seq\"\nkeys = 100\n[mix]\nget = 1.0\n[key]\ndistribution = \"sequential\"\n";
    let mut steps = Vec::new();
    for i in 0..4 {
        let w = Workload::from_toml_str(seq)
            .unwrap()
            .with_segment(Segment::new(i, 4).unwrap())
            .unwrap();
        let mut g = w.generator(0, 1);
        steps.extend((0..25).map(|_| g.next(Duration::ZERO).key_index.unwrap()));
    }
    steps.sort();
    assert_eq!(steps, (0..100).collect::<Vec<u64>>());
}
