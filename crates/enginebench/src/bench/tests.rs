//! The benchmark's own tests: flags as db_bench spells them, keys and
//! ranges, the report's figures and JSON, runs on both backends.

use super::*;
use clap::Parser;

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

fn parse(argv: &[&str]) -> Result<BenchArgs, clap::Error> {
    let mut v = vec!["bench"];
    v.extend_from_slice(argv);
    Cli::try_parse_from(v).map(|c| c.args)
}

#[test]
fn keys_are_fixed_size_and_ordered_like_their_numbers() {
    let mut a = Vec::new();
    let mut b = Vec::new();
    make_key(0, 16, &mut a);
    assert_eq!(a, b"\0\0\0\0\0\0\0\x000000000000000000"[..16].to_vec());
    assert_eq!(a.len(), 16);
    let nums = [
        0u64,
        1,
        255,
        256,
        65_535,
        999_999,
        1 << 20,
        1 << 40,
        u64::MAX,
    ];
    for w in nums.windows(2) {
        make_key(w[0], 16, &mut a);
        make_key(w[1], 16, &mut b);
        assert!(a < b, "{} vs {}", w[0], w[1]);
        assert_eq!(b.len(), 16);
    }
    make_key(0x0102_0304_0506_0708, 8, &mut a);
    assert_eq!(a, [1, 2, 3, 4, 5, 6, 7, 8]);
    make_key(0x0102, 2, &mut a);
    assert_eq!(a, [1, 2]);
    make_key(7, 20, &mut a);
    assert_eq!(a.len(), 20);
    assert_eq!(&a[8..], b"000000000000");
    // The same number gives the same key, a different one a different key.
    make_key(42, 16, &mut a);
    make_key(42, 16, &mut b);
    assert_eq!(a, b);
    make_key(43, 16, &mut b);
    assert_ne!(a, b);
}

#[test]
fn missing_keys_never_equal_a_stored_key() {
    let mut k = Vec::new();
    let mut m = Vec::new();
    for n in [0u64, 1, 1000, 999_999] {
        make_key(n, 16, &mut k);
        make_missing_key(n, 16, &mut m);
        assert_eq!(m.len(), 17);
        assert!(m.starts_with(&k));
    }
}

#[test]
fn split_range_covers_everything_once() {
    for total in [0u64, 1, 7, 10, 1000, 1_000_001] {
        for parts in 1..=9 {
            let mut next = 0;
            for i in 0..parts {
                let (lo, hi) = split_range(total, parts, i);
                assert_eq!(lo, next);
                assert!(hi >= lo);
                assert!(hi - lo <= total / parts as u64 + 1);
                next = hi;
            }
            assert_eq!(next, total);
        }
    }
}

#[test]
fn defaults_match_db_bench() {
    let a = parse(&[]).unwrap();
    assert_eq!(a.benchmarks, Benchmark::ALL.to_vec());
    assert_eq!(a.num, 1_000_000);
    assert_eq!(a.key_size, 16);
    assert_eq!(a.value_size, 100);
    assert_eq!(a.threads, 1);
    assert!(!a.sync);
    assert_eq!(a.db, None);
    assert_eq!(a.cache_size, 8_388_608);
    assert_eq!(a.bloom_bits, 10);
    assert_eq!(a.write_buffer_size, 64 << 20);
    assert!(!a.use_existing_db);
    assert_eq!(a.engine, Engine::Strata);
    assert!(!a.json);
    let d = BenchArgs::default();
    assert_eq!(
        (d.num, d.key_size, d.value_size, d.cache_size, d.bloom_bits),
        (a.num, a.key_size, a.value_size, a.cache_size, a.bloom_bits)
    );
    assert_eq!(d.benchmarks, a.benchmarks);
}

#[test]
fn parses_db_bench_spelling() {
    let a = parse(&[
        "--benchmarks=fillseq,readrandom,seekrandom",
        "--num=2000",
        "--key_size=20",
        "--value_size",
        "64",
        "--threads=4",
        "--sync=1",
        "--db=/tmp/x",
        "--cache_size=1048576",
        "--bloom_bits=0",
        "--write_buffer_size=65536",
        "--seed=7",
        "--use_existing_db=1",
        "--engine=fjall",
        "--json",
    ])
    .unwrap();
    assert_eq!(
        a.benchmarks,
        [
            Benchmark::FillSeq,
            Benchmark::ReadRandom,
            Benchmark::SeekRandom
        ]
    );
    assert_eq!(
        (a.num, a.key_size, a.value_size, a.threads),
        (2000, 20, 64, 4)
    );
    assert!(a.sync && a.use_existing_db && a.json);
    assert_eq!(a.db, Some(PathBuf::from("/tmp/x")));
    assert_eq!(
        (a.cache_size, a.bloom_bits, a.write_buffer_size, a.seed),
        (1 << 20, 0, 65536, 7)
    );
    assert_eq!(a.engine, Engine::Fjall);
}

#[test]
fn parses_booleans_like_db_bench() {
    for (v, want) in [
        ("--sync=0", false),
        ("--sync=1", true),
        ("--sync=true", true),
        ("--sync=false", false),
        ("--sync", true),
    ] {
        assert_eq!(parse(&[v]).unwrap().sync, want, "{v}");
    }
    assert!(parse(&["--sync", "0"]).map(|a| !a.sync).unwrap());
    assert!(parse(&["--sync=maybe"]).is_err());
    assert!(parse(&["--use_existing_db=0"])
        .map(|a| !a.use_existing_db)
        .unwrap());
}

#[test]
fn rejects_bad_arguments() {
    assert!(parse(&["--benchmarks=fillseq,fillsync"]).is_err());
    assert!(
        parse(&["--key-size=16"]).is_err(),
        "db_bench spells it key_size"
    );
    assert!(parse(&["--engine=rocksdb"]).is_err());
    assert!(parse(&["--num=-1"]).is_err());
    let bad = |f: fn(&mut BenchArgs)| {
        let mut a = BenchArgs::default();
        f(&mut a);
        validate(&a).is_err()
    };
    assert!(bad(|a| a.threads = 0));
    assert!(bad(|a| a.num = 0));
    assert!(bad(|a| a.key_size = 0));
    assert!(bad(|a| {
        a.key_size = 2;
        a.num = 70_000
    }));
    assert!(!bad(|a| {
        a.key_size = 2;
        a.num = 65_536
    }));
}

#[test]
fn report_lines_look_like_db_bench() {
    let mut latency = new_histogram();
    latency.record(2_000).unwrap();
    let r = BenchResult {
        name: "readrandom",
        ops: 1000,
        elapsed: Duration::from_millis(2),
        thread_time: Duration::from_millis(2),
        bytes: 116_000,
        found: Some(632),
        latency,
    };
    let line = r.line();
    assert!(
        line.starts_with("readrandom   :       2.000 micros/op 500000 ops/sec;"),
        "{line}"
    );
    assert!(line.ends_with("MB/s (found 632 of 1000)"), "{line}");
    assert!(r
        .latency_line()
        .contains("p50 / p99 / p99.9: 2.00 / 2.00 / 2.00 us"));
}

fn small_run(threads: usize, engine: Engine) -> (Report, String) {
    let dir = tempfile::tempdir().unwrap();
    let args = BenchArgs {
        num: 2000,
        threads,
        seed: 42,
        // Small memtables so that the run goes through flushes, tables
        // and compactions, not just the memtable.
        write_buffer_size: 16 << 10,
        cache_size: 64 << 10,
        db: Some(dir.path().join("db")),
        engine,
        ..BenchArgs::default()
    };
    let mut out = Vec::new();
    let report = execute(&args, &mut out).unwrap();
    let json = report.to_json(&args);
    assert!(json.starts_with('{') && json.ends_with('}'));
    (report, String::from_utf8(out).unwrap())
}

fn check_small_run(report: &Report, text: &str) {
    let names: Vec<_> = report.results.iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        Benchmark::ALL.iter().map(|b| b.name()).collect::<Vec<_>>()
    );
    for r in &report.results {
        assert_eq!(r.latency.len(), r.ops, "{}: one latency per op", r.name);
        assert!(
            text.contains(&format!("{:<12} :", r.name)),
            "{} missing from\n{text}",
            r.name
        );
    }
    // fillseq wrote every key in 0..num, and nothing deletes.
    let rr = report.result("readrandom").unwrap();
    assert_eq!((rr.ops, rr.found), (2000, Some(2000)));
    let rm = report.result("readmissing").unwrap();
    assert_eq!((rm.ops, rm.found), (2000, Some(0)));
    let rs = report.result("readseq").unwrap();
    assert_eq!(rs.ops, 2000);
    assert_eq!(rs.bytes, 2000 * 116);
    let sr = report.result("seekrandom").unwrap();
    assert_eq!((sr.ops, sr.found), (2000, Some(2000)));
    for w in ["fillseq", "fillrandom", "overwrite"] {
        assert_eq!(report.result(w).unwrap().ops, 2000);
        assert_eq!(report.result(w).unwrap().found, None);
    }
    assert_eq!(report.user_bytes_written, 3 * 2000 * 116);
    assert_eq!(report.live_keys, 2000);
    assert_eq!(report.live_bytes, 2000 * 116);
    assert!(report.disk_bytes > 0);
    let sa = report.space_amplification().unwrap();
    assert!(sa > 0.5 && sa < 10.0, "space amplification {sa}");
    assert!(text.contains("write amp"));
    assert!(text.contains("(found 2000 of 2000)"), "{text}");
    assert!(text.contains("(found 0 of 2000)"), "{text}");
}

#[test]
fn end_to_end_all_benchmarks_on_strata() {
    let (report, text) = small_run(1, Engine::Strata);
    check_small_run(&report, &text);
    let wa = report.engine_write_amplification.unwrap();
    assert!(wa >= 1.0, "write amplification {wa}");
}

#[test]
fn end_to_end_with_threads() {
    let (report, text) = small_run(3, Engine::Strata);
    check_small_run(&report, &text);
}

#[cfg(feature = "fjall")]
#[test]
fn end_to_end_all_benchmarks_on_fjall() {
    let (report, text) = small_run(2, Engine::Fjall);
    check_small_run(&report, &text);
}

#[cfg(not(feature = "fjall"))]
#[test]
fn fjall_without_the_feature_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let args = BenchArgs {
        num: 10,
        engine: Engine::Fjall,
        db: Some(dir.path().join("db")),
        ..BenchArgs::default()
    };
    let e = execute(&args, &mut Vec::new()).unwrap_err();
    assert!(e.contains("--features fjall"), "{e}");
}

#[test]
fn refuses_to_wipe_a_foreign_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("precious"), b"x").unwrap();
    let args = BenchArgs {
        num: 10,
        db: Some(dir.path().to_path_buf()),
        ..BenchArgs::default()
    };
    assert!(execute(&args, &mut Vec::new())
        .unwrap_err()
        .contains("not made by this benchmark"));
    assert!(dir.path().join("precious").exists());
}

#[test]
fn use_existing_db_reopens_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut args = BenchArgs {
        num: 500,
        seed: 1,
        benchmarks: vec![Benchmark::FillSeq],
        db: Some(db.clone()),
        ..BenchArgs::default()
    };
    execute(&args, &mut Vec::new()).unwrap();
    args.use_existing_db = true;
    args.benchmarks = vec![Benchmark::ReadRandom];
    let r = execute(&args, &mut Vec::new()).unwrap();
    assert_eq!(r.result("readrandom").unwrap().found, Some(500));
    assert_eq!(r.live_keys, 500);
    // Without --use_existing_db the directory starts empty again.
    args.use_existing_db = false;
    let r = execute(&args, &mut Vec::new()).unwrap();
    assert_eq!(r.result("readrandom").unwrap().found, Some(0));
}
