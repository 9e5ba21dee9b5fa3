//! A corrupted table on one replica, on real processes: bytes flipped in
//! a data block of one node's largest table while it was stopped. When
//! it starts again, the scan that builds its Merkle trees meets the
//! damage; the table is set aside (kept under `DATA/quarantine/`, counted
//! in `/metrics`), the trees are built again from what is left, and the
//! node pulls what it lost from its peers at once, with no command: its
//! own store ends with every key and the right values.

mod support;

use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use support::{ClusterProcs, NodeProc};

const KEYS: usize = 3000;

fn key(i: usize) -> String {
    format!("qk{i:06}")
}

fn value(i: usize) -> String {
    format!("value-{i:010}")
}

/// Node `n`'s own `qk…` entries.
fn own(n: &NodeProc) -> Vec<(String, String)> {
    let r = n.request("GET", "/v0/entities?start=qk&end=ql", b"");
    assert_eq!(r.status, 200);
    // One chunk per entry: key (8 bytes), `\n`, value (16).
    r.body
        .chunks(8 + 1 + 16)
        .map(|e| {
            let s = String::from_utf8_lossy(e);
            (s[..8].to_string(), s[9..].to_string())
        })
        .collect()
}

fn metric(n: &NodeProc, name: &str) -> f64 {
    let r = n.request("GET", "/metrics", b"");
    let text = String::from_utf8_lossy(&r.body).into_owned();
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}

/// Every key written through node 1 to all three replicas; the entries
/// each node should hold.
fn write_all(c: &ClusterProcs) -> Vec<(String, String)> {
    for i in 0..KEYS {
        let r = c.node(0).request(
            "PUT",
            &format!("/v0/entity?id={}&ack=3", key(i)),
            value(i).as_bytes(),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
    (0..KEYS).map(|i| (key(i), value(i))).collect()
}

/// Flip bytes inside the first data block of `table`.
fn damage(table: &std::path::Path) {
    let mut f = std::fs::OpenOptions::new().write(true).open(table).unwrap();
    f.seek(SeekFrom::Start(16)).unwrap();
    f.write_all(&[0xde, 0xad, 0xbe, 0xef]).unwrap();
    f.sync_all().unwrap();
}

fn largest_table(dir: &std::path::Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .expect("the node has tables")
}

#[test]
fn a_corrupted_table_is_set_aside_and_its_keys_come_back_from_the_peers() {
    let mut c = ClusterProcs::start(
        3,
        &[
            // Tables early, so the keys are in tables, not the memtable.
            "--memtable-bytes",
            "65536",
            "--anti-entropy-settle-ms",
            "200",
        ],
    );
    let want = write_all(&c);
    assert_eq!(own(c.node(1)), want);

    // Node 2 stops; a data block of its largest table is damaged.
    c.node(1)
        .request("GET", "/v0/status", b"")
        .status
        .eq(&200)
        .then_some(())
        .unwrap();
    let p = c.nodes[1].take().unwrap();
    assert_eq!(p.stop(), Some(0));
    let table = largest_table(&c.dirs[1]);
    damage(&table);
    c.start_node(1);

    // Detected by the scan that builds the trees (before any client
    // reads: a client's scan that met it would fail mid-answer) and set
    // aside, then repaired from the peers, unasked.
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(c.node(1), "strata_engine_tables_quarantined_total") < 1.0 {
        assert!(Instant::now() < deadline, "the damage was never found");
        std::thread::sleep(Duration::from_millis(50));
    }
    loop {
        let got = own(c.node(1));
        if got == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 2 holds {} of {KEYS} keys after a minute",
            got.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let n = c.node(1);
    assert_eq!(metric(n, "strata_engine_tables_quarantined_total"), 1.0);
    assert!(metric(n, "strata_antientropy_pulled_total") > 0.0);
    let kept = c.dirs[1]
        .join("quarantine")
        .join(table.file_name().unwrap());
    assert!(kept.exists(), "{} kept for a post-mortem", kept.display());
    assert!(!table.exists(), "the damaged table left the store");
    // The peers were never touched.
    for i in [0, 2] {
        assert_eq!(own(c.node(i)), want);
        assert_eq!(
            metric(c.node(i), "strata_engine_tables_quarantined_total"),
            0.0
        );
    }
}

/// The background scrub finds a flipped bit that no read lands on, on a
/// running node: the table is set aside and its keys come back from the
/// peers, unasked; the scrub's progress and finding are in `/metrics`.
#[test]
fn the_scrub_finds_damage_on_a_running_node_and_it_is_repaired() {
    let c = ClusterProcs::start(
        3,
        &[
            "--memtable-bytes",
            "65536",
            "--anti-entropy-settle-ms",
            "200",
            // A pass over a few hundred KiB in well under a second.
            "--scrub-rate",
            "1048576",
        ],
    );
    let want = write_all(&c);
    let n = c.node(1);
    // The scrub runs over clean tables first: passes, no findings.
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(n, "strata_engine_scrub_passes_total") < 2.0 {
        assert!(Instant::now() < deadline, "the scrub never finished a pass");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(metric(n, "strata_engine_scrub_corruptions_total"), 0.0);
    assert!(metric(n, "strata_engine_scrub_bytes_total") > 0.0);
    // Damage a block of its largest table while it runs; no client reads.
    let table = largest_table(&c.dirs[1]);
    damage(&table);
    while metric(n, "strata_engine_scrub_corruptions_total") < 1.0 {
        assert!(
            Instant::now() < deadline,
            "the scrub never found the damage"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(metric(n, "strata_engine_tables_quarantined_total"), 1.0);
    loop {
        let got = own(n);
        if got == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 2 holds {} of {KEYS} keys after a minute",
            got.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!table.exists(), "the damaged table left the store");
}
