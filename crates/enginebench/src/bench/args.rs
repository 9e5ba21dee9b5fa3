//! The benchmark's flags, with db_bench's names and defaults: the engine,
//! the benchmarks in order, sizes, threads, sync, the database's
//! directory and cache, and the checks a run makes of them before it
//! starts. Owns the flags; must not run anything.

use std::path::PathBuf;
use std::str::FromStr;

/// The engine to benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// Strata's own engine.
    Strata,
    /// fjall, for comparison (needs the `fjall` cargo feature).
    Fjall,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Strata => "strata",
            Engine::Fjall => "fjall",
        }
    }
}

/// One benchmark of `--benchmarks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Benchmark {
    FillSeq,
    FillRandom,
    Overwrite,
    ReadRandom,
    ReadSeq,
    ReadMissing,
    SeekRandom,
}

impl Benchmark {
    pub const ALL: [Benchmark; 7] = [
        Benchmark::FillSeq,
        Benchmark::FillRandom,
        Benchmark::Overwrite,
        Benchmark::ReadRandom,
        Benchmark::ReadSeq,
        Benchmark::ReadMissing,
        Benchmark::SeekRandom,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::ReadSeq => "readseq",
            Benchmark::ReadMissing => "readmissing",
            Benchmark::SeekRandom => "seekrandom",
        }
    }

    pub(crate) fn is_write(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::Overwrite
        )
    }
}

impl FromStr for Benchmark {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        Benchmark::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Benchmark::ALL.iter().map(|b| b.name()).collect();
                format!("unknown benchmark {s:?}; known: {}", names.join(","))
            })
    }
}

/// db_bench's booleans: `1`/`0`, `true`/`false` (also yes/no, on/off).
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        other => Err(format!("expected 0/1 or true/false, got {other:?}")),
    }
}

/// Flags of the engine benchmark, named and defaulted as in RocksDB's
/// db_bench.
#[derive(clap::Args, Clone, Debug)]
pub struct BenchArgs {
    /// Comma-separated benchmarks, run in order on the same database:
    /// fillseq, fillrandom, overwrite, readrandom, readseq, readmissing,
    /// seekrandom.
    #[arg(
        long = "benchmarks",
        value_delimiter = ',',
        default_value = "fillseq,fillrandom,overwrite,readrandom,readseq,readmissing,seekrandom"
    )]
    pub benchmarks: Vec<Benchmark>,

    /// Number of keys (the key space is 0..num) and of operations per
    /// benchmark, split among the threads.
    #[arg(long = "num", default_value_t = 1_000_000)]
    pub num: u64,

    /// Bytes per key.
    #[arg(long = "key_size", default_value_t = 16)]
    pub key_size: usize,

    /// Bytes per value.
    #[arg(long = "value_size", default_value_t = 100)]
    pub value_size: usize,

    /// Threads that share each benchmark's operations.
    #[arg(long = "threads", default_value_t = 1)]
    pub threads: usize,

    /// Fsync the log on every write (Durability::Sync); 0 = never fsync in
    /// the write path (Durability::None).
    #[arg(long = "sync", value_parser = parse_bool, default_value = "false",
          num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub sync: bool,

    /// Strata only: the engine's durability mode (`sync`, `interval(MS)` or
    /// `none`), overriding `--sync`. `--sync=0` means `none`: WAL records
    /// buffered in the process, as fjall's journal does; `interval(1000)`
    /// hands every write to the OS, as RocksDB's `sync=false` does.
    #[arg(long = "durability")]
    pub durability: Option<strata_engine::Durability>,

    /// Database directory; default: a fresh temporary directory, deleted at
    /// the end.
    #[arg(long = "db")]
    pub db: Option<PathBuf>,

    /// Block cache capacity in bytes.
    #[arg(long = "cache_size", default_value_t = 8 << 20)]
    pub cache_size: usize,

    /// Bloom filter bits per key; 0 disables filters.
    #[arg(long = "bloom_bits", default_value_t = 10)]
    pub bloom_bits: u32,

    /// How every engine stores its table blocks: none, lz4 or zstd
    /// (db_bench's name; fjall has no zstd). Default: lz4, the engine's own.
    #[arg(long = "compression_type", default_value = "lz4")]
    pub compression_type: strata_engine::Compression,

    /// Strata only: a codec per level from level 0 (`none,lz4,zstd`),
    /// overriding `--compression_type`.
    #[arg(long = "compression_per_level")]
    pub compression_per_level: Option<String>,

    /// How far values compress, as db_bench makes them: each 100 bytes of
    /// the value stream are `100 × ratio` random printable bytes repeated
    /// (0.5, db_bench's default, halves; 1 is incompressible).
    #[arg(long = "compression_ratio", default_value_t = 0.5)]
    pub compression_ratio: f64,

    /// Operations of each read benchmark (readrandom, readmissing,
    /// seekrandom); -1 = `--num` (db_bench's name and default).
    #[arg(long = "reads", default_value_t = -1, allow_negative_numbers = true)]
    pub reads: i64,

    /// Memtable size in bytes.
    #[arg(long = "write_buffer_size", default_value_t = 64 << 20)]
    pub write_buffer_size: usize,

    /// Seed of the random key streams and values; 0 derives one from the
    /// clock (as db_bench does).
    #[arg(long = "seed", default_value_t = 0)]
    pub seed: u64,

    /// Open the database in `--db` as it is instead of starting empty.
    #[arg(long = "use_existing_db", value_parser = parse_bool, default_value = "false",
          num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub use_existing_db: bool,

    /// Storage engine to run.
    #[arg(long = "engine", value_enum, default_value_t = Engine::Strata)]
    pub engine: Engine,

    /// Print a JSON summary on stdout (the human-readable report then goes
    /// to stderr).
    #[arg(long = "json", value_parser = parse_bool, default_value = "false",
          num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub json: bool,
}

impl Default for BenchArgs {
    fn default() -> Self {
        BenchArgs {
            benchmarks: Benchmark::ALL.to_vec(),
            num: 1_000_000,
            key_size: 16,
            value_size: 100,
            threads: 1,
            sync: false,
            durability: None,
            db: None,
            cache_size: 8 << 20,
            bloom_bits: 10,
            compression_type: strata_engine::Compression::Lz4,
            compression_per_level: None,
            compression_ratio: 0.5,
            reads: -1,
            write_buffer_size: 64 << 20,
            seed: 0,
            use_existing_db: false,
            engine: Engine::Strata,
            json: false,
        }
    }
}

pub(crate) fn validate(args: &BenchArgs) -> Result<(), String> {
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    if args.num == 0 {
        return Err("--num must be at least 1".into());
    }
    if args.key_size == 0 {
        return Err("--key_size must be at least 1".into());
    }
    if args.key_size < 8 && args.num > 1u64 << (8 * args.key_size) {
        return Err(format!(
            "--num {} does not fit in --key_size {} bytes",
            args.num, args.key_size
        ));
    }
    if args.benchmarks.is_empty() {
        return Err("--benchmarks is empty".into());
    }
    if !(args.compression_ratio > 0.0 && args.compression_ratio <= 1.0) {
        return Err("--compression_ratio must be in (0, 1]".into());
    }
    if args.reads == 0 || args.reads < -1 {
        return Err("--reads must be -1 (= --num) or at least 1".into());
    }
    Ok(())
}
