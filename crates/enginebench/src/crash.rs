//! Crash harness: a child process writes with `sync` durability and prints
//! each write's intent before it and its acknowledgement after it; the
//! parent kills the child with SIGKILL at a random moment, reopens the
//! database and checks that every acknowledged write is there with its
//! newest value, that an unacknowledged write is either wholly there or
//! wholly absent, and nothing else changed. Must not reach into engine
//! internals: only the public API and the files.
//!
//! Child protocol on stdout, one line per event:
//! `I <counter> P|D <key>[,<key>...]` before a write (P = put, D = delete;
//! several keys = one atomic batch), `A <counter>` once it returned Ok.
//! Values are `<key>:<counter>:` followed by padding.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use strata_engine::{Db, Durability, Options, WriteBatch};

/// Options that make flushes and compactions frequent, so that kills land
/// in the middle of them too.
pub fn churn_options(durability: Durability) -> Options {
    Options {
        durability,
        memtable_size: 64 << 10,
        block_size: 1024,
        l0_compaction_trigger: 2,
        level1_size: 256 << 10,
        level_multiplier: 4,
        target_file_size: 64 << 10,
        manifest_checkpoint_size: 16 << 10,
        ..Options::default()
    }
}

fn key_name(k: u32) -> String {
    format!("key{k:05}")
}

/// The child: write forever from `threads` threads, each owning the keys
/// congruent to its index modulo `threads`.
pub fn child_main(dir: &Path, counter_base: u64, seed: u64, threads: usize, keys: u32) -> ! {
    let db = std::sync::Arc::new(
        Db::open(dir, churn_options(Durability::Sync)).unwrap_or_else(|e| {
            eprintln!("child: open failed: {e}");
            std::process::exit(3)
        }),
    );
    let out = std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let mut hs = vec![];
    for t in 0..threads {
        let db = db.clone();
        let out = out.clone();
        hs.push(std::thread::spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(
                seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
            let mut counter = counter_base + t as u64;
            let mine = |rng: &mut rand::rngs::StdRng| {
                let k = rng.random_range(0..keys / threads as u32) * threads as u32 + t as u32;
                key_name(k)
            };
            loop {
                counter += threads as u64;
                let r: f64 = rng.random();
                let (op, ks): (char, Vec<String>) = if r < 0.1 {
                    ('D', vec![mine(&mut rng)])
                } else if r < 0.25 {
                    let mut ks: Vec<String> = (0..3).map(|_| mine(&mut rng)).collect();
                    ks.sort();
                    ks.dedup();
                    ('P', ks)
                } else {
                    ('P', vec![mine(&mut rng)])
                };
                {
                    let mut o = out.lock().unwrap();
                    writeln!(o, "I {counter} {op} {}", ks.join(",")).unwrap();
                    o.flush().unwrap();
                }
                let mut b = WriteBatch::new();
                for k in &ks {
                    if op == 'D' {
                        b.delete(k.as_bytes());
                    } else {
                        let pad = rng.random_range(0..300);
                        let v = format!("{k}:{counter}:{}", "x".repeat(pad));
                        b.put(k.as_bytes(), v.as_bytes());
                    }
                }
                match db.write(b) {
                    Ok(()) => {
                        let mut o = out.lock().unwrap();
                        writeln!(o, "A {counter}").unwrap();
                        o.flush().unwrap();
                    }
                    Err(e) if e.is_busy() => continue,
                    Err(e) => {
                        eprintln!("child: write failed: {e}");
                        std::process::exit(4);
                    }
                }
            }
        }));
    }
    for h in hs {
        let _ = h.join();
    }
    std::process::exit(5)
}

/// Parameters of a stress run.
#[derive(Clone, Debug)]
pub struct StressConfig {
    pub dir: PathBuf,
    pub rounds: usize,
    pub seed: u64,
    pub threads: usize,
    pub keys: u32,
    /// Each child is killed after a random time in this range.
    pub min_run: Duration,
    pub max_run: Duration,
}

/// What a stress run verified.
#[derive(Clone, Debug, Default)]
pub struct StressReport {
    pub rounds: usize,
    pub acknowledged: u64,
    pub in_flight_at_kill: u64,
    pub in_flight_applied: u64,
    pub keys_checked: u64,
}

/// A key's state: its counter, or `None` if absent.
type State = Option<u64>;

struct Intent {
    op: char,
    keys: Vec<String>,
}

fn parse_value(k: &[u8], v: &[u8]) -> Result<u64, String> {
    let s = std::str::from_utf8(v).map_err(|_| "value is not UTF-8".to_string())?;
    let mut parts = s.splitn(3, ':');
    let key = parts.next().unwrap_or("");
    if key.as_bytes() != k {
        return Err(format!(
            "value {s:?} stored under key {:?}",
            String::from_utf8_lossy(k)
        ));
    }
    parts
        .next()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("malformed value {s:?}"))
}

fn read_db(dir: &Path) -> Result<BTreeMap<String, u64>, String> {
    let db = Db::open(dir, churn_options(Durability::Sync))
        .map_err(|e| format!("reopen failed: {e}"))?;
    let mut m = BTreeMap::new();
    for r in db.scan(..).map_err(|e| e.to_string())? {
        let (k, v) = r.map_err(|e| format!("scan failed: {e}"))?;
        let c = parse_value(&k, &v)?;
        m.insert(String::from_utf8_lossy(&k).into_owned(), c);
    }
    // Point reads must agree with the scan.
    for (k, c) in &m {
        let v = db.get(k.as_bytes()).map_err(|e| e.to_string())?;
        let got = v.map(|v| parse_value(k.as_bytes(), &v)).transpose()?;
        if got != Some(*c) {
            return Err(format!("get({k}) = {got:?} but scan saw {c}"));
        }
    }
    db.close().map_err(|e| e.to_string())?;
    Ok(m)
}

/// Run the rounds. `spawn` builds the child command for a counter base and
/// seed; the child must call [`child_main`].
pub fn run(
    cfg: &StressConfig,
    spawn: &dyn Fn(u64, u64) -> Command,
    mut progress: impl FnMut(&str),
) -> Result<StressReport, String> {
    std::fs::create_dir_all(&cfg.dir).map_err(|e| e.to_string())?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    let mut model: BTreeMap<String, u64> = read_db(&cfg.dir)?;
    let mut report = StressReport::default();
    for round in 0..cfg.rounds {
        let base = (round as u64 + 1) << 40;
        let child_seed: u64 = rng.random();
        let mut child = spawn(base, child_seed)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawn child: {e}"))?;
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut lines = vec![];
            for l in BufReader::new(stdout).lines() {
                match l {
                    Ok(l) => lines.push(l),
                    Err(_) => break,
                }
            }
            lines
        });
        let run_for = rng.random_range(cfg.min_run..=cfg.max_run);
        let start = Instant::now();
        while start.elapsed() < run_for {
            if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
                return Err(format!("child exited early with {st}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().map_err(|e| format!("kill: {e}"))?; // SIGKILL
        child.wait().map_err(|e| e.to_string())?;
        let lines = reader.join().map_err(|_| "reader thread panicked")?;
        // Replay the protocol: acknowledged writes update the model.
        let mut intents: HashMap<u64, Intent> = HashMap::new();
        let mut acked = 0;
        for l in &lines {
            let mut p = l.split(' ');
            match (p.next(), p.next(), p.next(), p.next()) {
                (Some("I"), Some(c), Some(op), Some(ks)) => {
                    let c: u64 = c.parse().map_err(|_| format!("bad line {l:?}"))?;
                    intents.insert(
                        c,
                        Intent {
                            op: op.chars().next().unwrap_or('?'),
                            keys: ks.split(',').map(str::to_string).collect(),
                        },
                    );
                }
                (Some("A"), Some(c), None, None) => {
                    let c: u64 = c.parse().map_err(|_| format!("bad line {l:?}"))?;
                    let i = intents
                        .remove(&c)
                        .ok_or_else(|| format!("ack without intent: {l:?}"))?;
                    for k in i.keys {
                        if i.op == 'D' {
                            model.remove(&k);
                        } else {
                            model.insert(k, c);
                        }
                    }
                    acked += 1;
                }
                _ if l.is_empty() => {}
                // The kill may cut the last line short.
                _ => {}
            }
        }
        let found = read_db(&cfg.dir)?;
        // Keys touched by unacknowledged writes may hold either state.
        let mut maybe: HashMap<&str, (u64, &Intent)> = HashMap::new();
        for (c, i) in &intents {
            for k in &i.keys {
                maybe.insert(k.as_str(), (*c, i));
            }
        }
        let mut applied = 0;
        for (c, i) in &intents {
            let states: Vec<bool> = i
                .keys
                .iter()
                .map(|k| {
                    let new: State = if i.op == 'D' { None } else { Some(*c) };
                    found.get(k).copied() == new && model.get(k).copied() != new
                })
                .collect();
            if states.iter().any(|&s| s) {
                if !states.iter().all(|&s| s) && i.op == 'P' {
                    return Err(format!(
                        "round {round}: batch {c} over {:?} applied partially",
                        i.keys
                    ));
                }
                applied += 1;
            }
        }
        let all_keys: std::collections::BTreeSet<&String> =
            model.keys().chain(found.keys()).collect();
        for k in all_keys {
            let want = model.get(k).copied();
            let got = found.get(k).copied();
            if want == got {
                continue;
            }
            match maybe.get(k.as_str()) {
                Some((c, i)) if got == if i.op == 'D' { None } else { Some(*c) } => {}
                _ => {
                    return Err(format!(
                        "round {round}: key {k}: acknowledged state {want:?}, found {got:?} (lost or invented write)"
                    ))
                }
            }
        }
        report.keys_checked += found.len() as u64;
        model = found;
        report.rounds += 1;
        report.acknowledged += acked;
        report.in_flight_at_kill += intents.len() as u64;
        report.in_flight_applied += applied;
        progress(&format!(
            "round {:>3}: killed after {:>4} ms, {acked} acknowledged writes verified, {} in flight ({applied} applied), {} keys",
            round + 1,
            run_for.as_millis(),
            intents.len(),
            model.len()
        ));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_parsing_checks_key() {
        assert_eq!(parse_value(b"key00001", b"key00001:42:xx").unwrap(), 42);
        assert!(parse_value(b"key00002", b"key00001:42:").is_err());
        assert!(parse_value(b"key00001", b"key00001:").is_err());
    }
}
