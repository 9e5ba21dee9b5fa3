//! The crash test: the real `strata` binary writes with sync durability in a
//! child process that is killed with SIGKILL at random moments, 20 times;
//! after each kill the database is reopened and every acknowledged write
//! must be there with its newest value.

use std::process::Command;

#[test]
fn twenty_sigkill_rounds_lose_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "stress", "engine", "--rounds", "20", "--seed", "7", "--min-ms", "30", "--max-ms",
            "400", "--dir",
        ])
        .arg(dir.path().join("db"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("20 rounds passed"), "{stdout}");
    // The test is only meaningful if writes were acknowledged before kills.
    let acked: u64 = stdout
        .lines()
        .last()
        .and_then(|l| l.split(", ").nth(1))
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(acked > 100, "{stdout}");
}
