//! `resp-load`: an open-loop Redis client at a fixed rate, for
//! scripts/cpu-per-request.sh, which compares the server CPU a Strata
//! request costs against a Redis command at the same rate.
//!
//! Each of `--connections` connections sends on its own schedule (the rate
//! split evenly, phases staggered), and `--threads` threads share them (by
//! default one, as light as `strata load` is at these rates; `--threads`
//! equal to `--connections` gives each connection a thread, the client of
//! the figures before 2026-11-28). A send waits for its time, never for
//! the previous answer's lateness to be forgiven, so the server sees the
//! same arrivals whether it is fast or slow (the answer is read before the
//! thread's next send; at 2,000 req/s a send is due every 500 µs, far
//! above either server's latency).
//!
//! Commands: `SET key value` with `--value-bytes` random-looking bytes, or
//! `GET key`, keys drawn uniformly from `--keys`; `fill` SETs every key
//! once as fast as answers come (before a GET run). Prints one line:
//! `sent=N errors=N late=N` (late: sends more than 1 ms past their time).
//!
//! Usage: `resp-load --addr 127.0.0.1:6379 --op set|get|fill --rate 2000
//! --connections 16 --seconds 10 [--threads 1] [--keys 1000000]
//! [--value-bytes 100]`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Set,
    Get,
    /// SET every key once, as fast as answers come (no schedule).
    Fill,
}

struct Args {
    addr: String,
    op: Op,
    rate: f64,
    connections: usize,
    threads: usize,
    seconds: f64,
    keys: u64,
    value_bytes: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        addr: "127.0.0.1:6379".into(),
        op: Op::Set,
        rate: 2000.0,
        connections: 16,
        threads: 1,
        seconds: 10.0,
        keys: 1_000_000,
        value_bytes: 100,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {v}: {e}");
        match flag.as_str() {
            "--addr" => a.addr = v,
            "--op" => {
                a.op = match v.as_str() {
                    "set" => Op::Set,
                    "get" => Op::Get,
                    "fill" => Op::Fill,
                    _ => return Err(format!("--op {v}: set, get or fill")),
                }
            }
            "--rate" => a.rate = v.parse().map_err(|e| bad(&e))?,
            "--connections" => a.connections = v.parse().map_err(|e| bad(&e))?,
            "--threads" => a.threads = v.parse().map_err(|e| bad(&e))?,
            "--seconds" => a.seconds = v.parse().map_err(|e| bad(&e))?,
            "--keys" => a.keys = v.parse().map_err(|e| bad(&e))?,
            "--value-bytes" => a.value_bytes = v.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.rate <= 0.0 || a.connections == 0 || a.keys == 0 || a.threads == 0 {
        return Err("--rate, --connections, --threads and --keys must be positive".into());
    }
    a.threads = a.threads.min(a.connections);
    Ok(a)
}

/// xorshift64*: the keys' and values' bytes (no dependency for a bench).
fn next(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

#[derive(Default)]
struct Count {
    sent: u64,
    errors: u64,
    late: u64,
}

/// One connection's stream and buffers.
struct Link {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    seed: u64,
}

impl Link {
    fn open(a: &Args, index: usize) -> Result<Link, String> {
        let stream = TcpStream::connect(&a.addr).map_err(|e| format!("{}: {e}", a.addr))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        Ok(Link {
            writer,
            reader: BufReader::new(stream),
            seed: 0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1),
        })
    }
}

/// Thread `t` of `a.threads`: connections `t`, `t + threads`, ... Sends
/// `k` of the whole run go out at `start + k / rate` on connection
/// `k % connections` (that connection's phase, then every
/// `connections / rate`); this thread takes the ones on its connections.
/// Under `fill` each connection SETs the keys equal to its index modulo
/// `connections`, as fast as answers come.
fn sender(a: &Args, t: usize, start: Instant) -> Result<Count, String> {
    let mine: Vec<usize> = (t..a.connections).step_by(a.threads).collect();
    let mut links = mine
        .iter()
        .map(|&i| Link::open(a, i))
        .collect::<Result<Vec<_>, _>>()?;
    let step = Duration::from_secs_f64(1.0 / a.rate);
    let end = start + Duration::from_secs_f64(a.seconds);
    let mut count = Count::default();
    let mut out = Vec::with_capacity(256 + a.value_bytes);
    let mut line = String::new();
    let mut bulk = Vec::new();
    let mut fill: Vec<u64> = mine.iter().map(|&i| i as u64).collect();
    let mut turn = 0usize;
    for k in 0u64.. {
        let (slot, n) = if a.op == Op::Fill {
            // Round robin over this thread's connections until each ran out.
            let Some(slot) = (0..links.len())
                .map(|j| (turn + j) % links.len())
                .find(|&j| fill[j] < a.keys)
            else {
                break;
            };
            turn = slot + 1;
            fill[slot] += a.connections as u64;
            (slot, fill[slot] - a.connections as u64)
        } else {
            let c = (k % a.connections as u64) as usize;
            if c % a.threads != t {
                continue;
            }
            let due = start + step.mul_f64(k as f64);
            if due >= end {
                break;
            }
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            } else if now - due > Duration::from_millis(1) {
                count.late += 1;
            }
            let slot = c / a.threads;
            (slot, next(&mut links[slot].seed) % a.keys)
        };
        let link = &mut links[slot];
        let key = format!("key{n:012}");
        out.clear();
        if a.op != Op::Get {
            let value: Vec<u8> = (0..a.value_bytes)
                .map(|_| b'a' + (next(&mut link.seed) % 26) as u8)
                .collect();
            write!(
                out,
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n",
                key.len(),
                value.len()
            )
            .map_err(|e| e.to_string())?;
            out.extend_from_slice(&value);
            out.extend_from_slice(b"\r\n");
        } else {
            write!(out, "*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len())
                .map_err(|e| e.to_string())?;
        }
        link.writer.write_all(&out).map_err(|e| e.to_string())?;
        count.sent += 1;
        line.clear();
        link.reader
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        match line.as_bytes().first() {
            Some(b'+') => {}
            Some(b'$') => {
                let n: i64 = line[1..]
                    .trim()
                    .parse()
                    .map_err(|e| format!("reply {line:?}: {e}"))?;
                if n >= 0 {
                    bulk.resize(n as usize + 2, 0);
                    link.reader
                        .read_exact(&mut bulk)
                        .map_err(|e| e.to_string())?;
                }
            }
            _ => count.errors += 1,
        }
    }
    Ok(count)
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("resp-load: {e}");
            std::process::exit(2);
        }
    };
    let start = Instant::now() + Duration::from_millis(50);
    let total = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let a = &a;
                s.spawn(move || sender(a, t, start))
            })
            .collect();
        let mut total = Count::default();
        for h in handles {
            match h.join().expect("connection thread") {
                Ok(c) => {
                    total.sent += c.sent;
                    total.errors += c.errors;
                    total.late += c.late;
                }
                Err(e) => {
                    eprintln!("resp-load: {e}");
                    std::process::exit(1);
                }
            }
        }
        total
    });
    println!(
        "sent={} errors={} late={}",
        total.sent, total.errors, total.late
    );
}
