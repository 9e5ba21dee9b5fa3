//! A db_bench-style benchmark of the engine through its public API.
//!
//! Flags use db_bench's names and defaults (`--benchmarks`, `--num`,
//! `--key_size`, `--value_size`, `--threads`, `--sync`, `--db`,
//! `--cache_size`, `--bloom_bits`, `--write_buffer_size`, `--seed`,
//! `--use_existing_db`), so the same command line can be given to RocksDB's
//! `db_bench` and compared line by line. `--engine fjall` runs the same
//! driver against fjall when built with the `fjall` cargo feature.
//!
//! Benchmarks run in the order given, all on the same open database:
//!
//! | name        | what one op is                                                   |
//! |-------------|------------------------------------------------------------------|
//! | fillseq     | put key `i` for `i` in `0..num`, in order                        |
//! | fillrandom  | put a uniformly random key in `0..num`                           |
//! | overwrite   | the same as fillrandom, meant for a filled database              |
//! | readrandom  | get a random key in `0..num`; reports how many were found        |
//! | readmissing | get a key that cannot exist (a present key plus one byte)        |
//! | readseq     | one entry of a full scan (with threads, each scans a key range)  |
//! | seekrandom  | scan from a random key and read 1..=10 entries                   |
//!
//! `--reads` sets the operations of the read benchmarks (db_bench's
//! flag); `--compression_type` and `--compression_ratio` mean what they
//! mean to db_bench (values are made as its RandomGenerator makes them).
//!
//! Unlike db_bench, `fillseq` and `fillrandom` do not wipe the database when
//! they start: the database is fresh once, when the run starts (unless
//! `--use_existing_db`).
//!
//! With `--threads N` the `num` operations are split among N threads (db_bench
//! gives every thread `num`); each thread has its own RNG seeded from the seed
//! plus a thread counter that keeps counting across benchmarks, so that
//! `overwrite` or `readrandom` do not replay `fillrandom`'s key sequence.
//!
//! Every operation's latency goes into an HDR histogram. After the last
//! benchmark the database is compacted and the run reports write
//! amplification (bytes written to disk per user byte) and space
//! amplification (disk bytes per live user byte, live keys counted by a
//! full scan).
//!
//! Modules: `args` (the flags and their checks), `backend` (the engines behind one trait; `fjall_backend` with
//! the `fjall` feature), `data` (keys, thread shares, values), `report`
//! (results and their printing); this file holds the threads'
//! loops and the run.

mod args;
mod backend;
mod data;
#[cfg(feature = "fjall")]
mod fjall_backend;
mod report;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use args::validate;
pub use args::{parse_bool, BenchArgs, Benchmark, Engine};
pub use backend::{Backend, BackendConfig, StrataBackend};
use data::Values;
pub use data::{make_key, make_missing_key, split_range};
#[cfg(feature = "fjall")]
pub use fjall_backend::FjallBackend;
use report::process_write_bytes;
pub use report::{dir_allocated_bytes, BenchResult, Report};

/// File that marks a directory as made by this benchmark, so that a later
/// run without `--use_existing_db` may wipe it.
const MARKER: &str = "STRATA-BENCH-DB";

fn new_histogram() -> Histogram<u64> {
    // Nanoseconds, 1 ns to 1 hour, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

#[inline]
fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record((d.as_nanos() as u64).max(1));
}

/// The database directory of a run, removed at the end if it is temporary.
enum DbDir {
    Temp(tempfile::TempDir),
    Given(PathBuf),
}

impl DbDir {
    fn path(&self) -> &Path {
        match self {
            DbDir::Temp(t) => t.path(),
            DbDir::Given(p) => p,
        }
    }
}

fn prepare_dir(args: &BenchArgs) -> Result<DbDir, String> {
    let Some(dir) = &args.db else {
        if args.use_existing_db {
            return Err("--use_existing_db needs --db DIR".into());
        }
        let t = tempfile::Builder::new()
            .prefix("strata-bench-")
            .tempdir()
            .map_err(|e| format!("creating a temporary directory: {e}"))?;
        return Ok(DbDir::Temp(t));
    };
    if args.use_existing_db {
        if !dir.is_dir() {
            return Err(format!(
                "--use_existing_db: {} is not a directory",
                dir.display()
            ));
        }
        return Ok(DbDir::Given(dir.clone()));
    }
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| format!("reading {}: {e}", dir.display()))?
            .next()
            .is_none();
        if !empty && !dir.join(MARKER).exists() {
            return Err(format!(
                "{} exists and was not made by this benchmark; remove it, pick another --db, \
                 or pass --use_existing_db",
                dir.display()
            ));
        }
        std::fs::remove_dir_all(dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    std::fs::write(
        dir.join(MARKER),
        b"made by strata bench engine; safe to delete\n",
    )
    .map_err(|e| format!("writing marker in {}: {e}", dir.display()))?;
    Ok(DbDir::Given(dir.clone()))
}

/// Open the chosen engine in `dir`.
pub fn open_backend(
    engine: Engine,
    dir: &Path,
    cfg: &BackendConfig,
) -> Result<Box<dyn Backend>, String> {
    match engine {
        Engine::Strata => Ok(Box::new(StrataBackend::open(dir, cfg)?)),
        #[cfg(feature = "fjall")]
        Engine::Fjall => Ok(Box::new(FjallBackend::open(dir, cfg)?)),
        #[cfg(not(feature = "fjall"))]
        Engine::Fjall => Err(
            "--engine fjall: this binary was built without fjall support; \
             rebuild with `--features fjall` (e.g. cargo build --release -p strata-enginebench \
             --features fjall --bin engine-bench)"
                .into(),
        ),
    }
}

/// Per-thread tally of one benchmark.
struct ThreadTally {
    ops: u64,
    bytes: u64,
    found: u64,
    hist: Histogram<u64>,
    start: Instant,
    end: Instant,
}

struct Shared<'a> {
    args: &'a BenchArgs,
    backend: &'a dyn Backend,
    values: &'a Values,
}

fn run_thread(
    sh: &Shared<'_>,
    bench: Benchmark,
    t: usize,
    seed: u64,
    barrier: &Barrier,
) -> Result<ThreadTally, String> {
    let args = sh.args;
    let b = sh.backend;
    let num = args.num;
    let ks = args.key_size;
    let (lo, hi) = split_range(num, args.threads, t);
    // The read benchmarks' share of `--reads` (their keys still span 0..num).
    let reads = if args.reads > 0 {
        args.reads as u64
    } else {
        num
    };
    let (rlo, rhi) = split_range(reads, args.threads, t);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut key = Vec::with_capacity(ks + 1);
    let mut hist = new_histogram();
    let mut vpos = (t * 7919 * args.value_size.max(1)) % (1 << 20);
    let (mut ops, mut bytes, mut found) = (0u64, 0u64, 0u64);
    barrier.wait();
    let start = Instant::now();
    match bench {
        Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::Overwrite => {
            for i in lo..hi {
                let n = if bench == Benchmark::FillSeq {
                    i
                } else {
                    rng.random_range(0..num)
                };
                make_key(n, ks, &mut key);
                let v = sh.values.next(&mut vpos);
                let t0 = Instant::now();
                b.put(&key, v)?;
                record(&mut hist, t0.elapsed());
                bytes += (key.len() + v.len()) as u64;
                ops += 1;
            }
        }
        Benchmark::ReadRandom | Benchmark::ReadMissing => {
            for _ in rlo..rhi {
                let n = rng.random_range(0..num);
                if bench == Benchmark::ReadMissing {
                    make_missing_key(n, ks, &mut key);
                } else {
                    make_key(n, ks, &mut key);
                }
                let t0 = Instant::now();
                let r = b.get(&key)?;
                record(&mut hist, t0.elapsed());
                if let Some(len) = r {
                    found += 1;
                    bytes += (key.len() + len) as u64;
                }
                ops += 1;
            }
        }
        Benchmark::SeekRandom => {
            for _ in rlo..rhi {
                let n = rng.random_range(0..num);
                let want: usize = rng.random_range(1..=10);
                make_key(n, ks, &mut key);
                let (mut got, mut first_is_key, mut nbytes) = (0usize, false, 0u64);
                let t0 = Instant::now();
                b.scan(Some(&key), None, &mut |k, v| {
                    if got == 0 {
                        first_is_key = k == key.as_slice();
                    }
                    got += 1;
                    nbytes += (k.len() + v.len()) as u64;
                    got < want
                })?;
                record(&mut hist, t0.elapsed());
                found += u64::from(first_is_key);
                bytes += nbytes;
                ops += 1;
            }
        }
        Benchmark::ReadSeq => {
            // Thread t scans its share of the key space; the first and last
            // shares are open-ended so that the threads cover the whole db.
            let mut lo_key = Vec::new();
            let mut hi_key = Vec::new();
            make_key(lo, ks, &mut lo_key);
            make_key(hi, ks, &mut hi_key);
            let start_key = (t > 0).then_some(lo_key.as_slice());
            let end_key = (t + 1 < args.threads).then_some(hi_key.as_slice());
            let mut last = Instant::now();
            b.scan(start_key, end_key, &mut |k, v| {
                let now = Instant::now();
                record(&mut hist, now - last);
                last = now;
                ops += 1;
                bytes += (k.len() + v.len()) as u64;
                true
            })?;
        }
    }
    Ok(ThreadTally {
        ops,
        bytes,
        found,
        hist,
        start,
        end: Instant::now(),
    })
}

fn run_benchmark(sh: &Shared<'_>, bench: Benchmark, seed_base: u64) -> Result<BenchResult, String> {
    let threads = sh.args.threads;
    let barrier = Barrier::new(threads);
    let tallies: Vec<Result<ThreadTally, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                std::thread::Builder::new()
                    .name(format!("bench-{t}"))
                    .spawn_scoped(s, move || {
                        run_thread(sh, bench, t, seed_base.wrapping_add(t as u64), barrier)
                    })
                    .expect("spawn benchmark thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("benchmark thread panicked".into()))
            })
            .collect()
    });
    let mut latency = new_histogram();
    let (mut ops, mut bytes, mut found) = (0, 0, 0);
    let mut thread_time = Duration::ZERO;
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    for r in tallies {
        let t = r.map_err(|e| format!("{}: {e}", bench.name()))?;
        ops += t.ops;
        bytes += t.bytes;
        found += t.found;
        thread_time += t.end - t.start;
        latency
            .add(&t.hist)
            .map_err(|e| format!("merging histograms: {e:?}"))?;
        first = Some(first.map_or(t.start, |f: Instant| f.min(t.start)));
        last = Some(last.map_or(t.end, |l: Instant| l.max(t.end)));
    }
    let elapsed = match (first, last) {
        (Some(f), Some(l)) => l - f,
        _ => Duration::ZERO,
    };
    let found = matches!(
        bench,
        Benchmark::ReadRandom | Benchmark::ReadMissing | Benchmark::SeekRandom
    )
    .then_some(found);
    Ok(BenchResult {
        name: bench.name(),
        ops,
        elapsed,
        thread_time,
        bytes,
        found,
        latency,
    })
}

/// Run the benchmarks, writing the human-readable report to `out`.
pub fn execute(args: &BenchArgs, out: &mut dyn Write) -> Result<Report, String> {
    validate(args)?;
    let seed = if args.seed == 0 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        (nanos % 1_000_000_000).max(1)
    } else {
        args.seed
    };
    let dir = prepare_dir(args)?;
    let cfg = BackendConfig {
        sync: args.sync,
        durability: args.durability,
        write_buffer_size: args.write_buffer_size,
        cache_size: args.cache_size,
        bloom_bits: args.bloom_bits,
        compression: match &args.compression_per_level {
            Some(s) => strata_engine::Compression::parse_per_level(s)
                .map_err(|e| format!("--compression_per_level: {e}"))?,
            None => vec![args.compression_type],
        },
        use_existing: args.use_existing_db,
    };
    let p = |out: &mut dyn Write, s: String| -> Result<(), String> {
        writeln!(out, "{s}").map_err(|e| format!("writing report: {e}"))
    };
    p(out, format!("Engine:     {}", args.engine.name()))?;
    p(out, format!("Keys:       {} bytes each", args.key_size))?;
    p(
        out,
        format!(
            "Values:     {} bytes each ({} of them random, the rest repeated) | compression {}",
            args.value_size,
            args.compression_ratio,
            cfg.compression
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
    )?;
    p(out, format!("Entries:    {}", args.num))?;
    p(out, format!("Threads:    {}", args.threads))?;
    p(
        out,
        format!(
            "Sync:       {} | cache {} bytes | bloom {} bits/key | write buffer {} bytes",
            u8::from(args.sync),
            args.cache_size,
            args.bloom_bits,
            args.write_buffer_size
        ),
    )?;
    p(out, format!("Seed:       {seed}"))?;
    p(out, format!("DB path:    {}", dir.path().display()))?;
    p(out, "-".repeat(48))?;

    let backend = open_backend(args.engine, dir.path(), &cfg)?;
    let io_start = process_write_bytes();
    let values = Values::new(seed, args.value_size, args.compression_ratio);
    let sh = Shared {
        args,
        backend: backend.as_ref(),
        values: &values,
    };
    let mut results = Vec::new();
    let mut user_bytes_written = 0u64;
    let mut thread_counter = 0u64;
    for &bench in &args.benchmarks {
        let r = run_benchmark(&sh, bench, seed.wrapping_add(thread_counter))?;
        thread_counter += args.threads as u64;
        if bench.is_write() {
            user_bytes_written += r.bytes;
        }
        p(out, r.line())?;
        p(out, r.latency_line())?;
        results.push(r);
    }

    // Amplification, measured on the compacted database.
    let t0 = Instant::now();
    backend.compact()?;
    let compaction_time = t0.elapsed();
    let io_end = process_write_bytes();
    let (mut live_keys, mut live_bytes) = (0u64, 0u64);
    backend.scan(None, None, &mut |k, v| {
        live_keys += 1;
        live_bytes += (k.len() + v.len()) as u64;
        true
    })?;
    let disk_bytes = backend.disk_bytes()?;
    let allocated = dir_allocated_bytes(dir.path()).ok();
    let engine_write_amplification = if user_bytes_written > 0 {
        backend.engine_write_amplification()
    } else {
        None
    };
    let io_write_amplification = match (io_start, io_end) {
        (Some(a), Some(b)) if user_bytes_written > 0 => {
            Some(b.saturating_sub(a) as f64 / user_bytes_written as f64)
        }
        _ => None,
    };
    let report = Report {
        engine: args.engine.name(),
        seed,
        results,
        user_bytes_written,
        live_keys,
        live_bytes,
        disk_bytes,
        engine_write_amplification,
        io_write_amplification,
        compaction_time,
    };
    p(out, "-".repeat(48))?;
    p(
        out,
        format!(
            "compact      : {:.3} s to compact the whole database",
            compaction_time.as_secs_f64()
        ),
    )?;
    let fmt = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
    p(
        out,
        format!(
            "write amp    : {} (engine counters: WAL + flush + compaction bytes / user bytes); \
             {} (process I/O write_bytes / user bytes); user bytes {}",
            fmt(report.engine_write_amplification),
            fmt(report.io_write_amplification),
            user_bytes_written
        ),
    )?;
    p(
        out,
        format!(
            "space amp    : {} ({} disk bytes / {} live keys x {} bytes; whole directory: \
             {} bytes allocated)",
            fmt(report.space_amplification()),
            disk_bytes,
            live_keys,
            args.key_size + args.value_size,
            allocated.map_or("?".to_string(), |a| a.to_string()),
        ),
    )?;
    if let Some(engine_user) = backend.engine_user_bytes_written() {
        if !args.use_existing_db && engine_user != user_bytes_written {
            p(
                out,
                format!(
                    "warning      : engine counted {engine_user} user bytes written, the \
                     benchmark wrote {user_bytes_written}"
                ),
            )?;
        }
    }
    if let Some(d) = backend.describe() {
        p(out, format!("engine       : {d}"))?;
    }
    backend.close()?;
    drop(backend);
    drop(dir);
    Ok(report)
}

/// Run the benchmark as the command line asked: the report on stdout, or,
/// with `--json`, the report on stderr and a JSON summary on stdout.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    if args.json {
        let report = execute(args, &mut std::io::stderr().lock())?;
        println!("{}", report.to_json(args));
    } else {
        execute(args, &mut std::io::stdout().lock())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
