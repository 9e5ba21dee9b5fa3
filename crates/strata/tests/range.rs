//! A range over a million keys streams: the client reads it through a small
//! buffer, slowly, and the node's anonymous memory (heap) does not grow with
//! the range. (File-backed pages of the memory-mapped tables are page cache
//! the kernel can drop; RssAnon is what the process itself holds.)

mod support;

use std::io::Read;
use std::time::Duration;

use strata_engine::{Db, Durability, Options, WriteBatch};
use support::{send, NodeProc};

fn rss_anon_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("RssAnon:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap()
}

#[test]
fn million_key_range_streams_in_bounded_memory() {
    const N: u32 = 1_000_000;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("db");
    {
        // Fill through the engine directly: a million HTTP requests would
        // only test the time of this test.
        let db = Db::open(
            &dir,
            Options {
                durability: Durability::None,
                ..Options::default()
            },
        )
        .unwrap();
        // Stored as the cluster stores them: versioned records.
        let value = strata_cluster::record::Record {
            version: strata_cluster::record::Version { hlc: 1, node: 1 },
            value: Some(vec![b'v'; 100].into()),
            marks: Vec::new(),
        }
        .encode();
        for chunk in 0..N / 1000 {
            let mut b = WriteBatch::new();
            for i in chunk * 1000..(chunk + 1) * 1000 {
                b.put(format!("key{i:07}").as_bytes(), &value);
            }
            db.write(b).unwrap();
        }
        db.compact().unwrap();
    }
    let node = NodeProc::start(&dir, &["--block-cache-bytes", "8388608"]);
    let pid = node.child.id();
    let before = rss_anon_kib(pid);
    let mut s = node.connect();
    send(&mut s, "GET", "/v0/entities?start=key", b"");
    let mut buf = [0u8; 16 << 10];
    let (mut total, mut entries, mut peak) = (0u64, 0u64, before);
    let mut reads = 0u64;
    // Each entry's chunk is "<size>\r\nkeyNNNNNNN\n<value>\r\n": count
    // "\nkey", carrying the last bytes over from one read to the next.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        total += n as u64;
        tail.extend_from_slice(&buf[..n]);
        entries += tail.windows(4).filter(|w| w == b"\nkey").count() as u64;
        tail.drain(..tail.len() - 3);
        reads += 1;
        if reads.is_multiple_of(512) {
            peak = peak.max(rss_anon_kib(pid));
            // A slow reader: the node must wait, not buffer.
            std::thread::sleep(Duration::from_millis(2));
        }
        // The terminating zero-length chunk.
        if tail.ends_with(b"\r\n") && buf[..n].ends_with(b"\r\n0\r\n\r\n") {
            break;
        }
    }
    assert_eq!(entries, N as u64, "{total} bytes read");
    assert!(total > 111_000_000);
    let grew_mib = (peak.saturating_sub(before)) / 1024;
    eprintln!("RssAnon before {before} KiB, peak during the range {peak} KiB (+{grew_mib} MiB) for {} MiB streamed", total >> 20);
    assert!(
        grew_mib < 48,
        "heap grew by {grew_mib} MiB while streaming {} MiB",
        total >> 20
    );
}
