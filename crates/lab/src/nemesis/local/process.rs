//! What starting and stopping node processes needs beside the cluster's
//! own state: signals to a child, terminating many at once within a
//! deadline, the cluster secret's file, free loopback ports, the last
//! lines of a node's log. Owns those system calls; must not know a
//! cluster.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::net::TcpListener;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

pub(super) fn signal(c: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child, which has not been reaped (the
    // `Child` is still held), so the pid is not reused.
    unsafe {
        libc::kill(c.id() as libc::pid_t, sig);
    }
}

/// SIGTERM (and SIGCONT) each child, then wait for all until `deadline`;
/// a child still alive then is killed and reported.
pub(super) fn terminate_all(
    children: impl IntoIterator<Item = (usize, Child)>,
    deadline: Instant,
) -> Vec<Result<ExitStatus, String>> {
    let mut children: Vec<(usize, Child)> = children.into_iter().collect();
    for (_, c) in &children {
        signal(c, libc::SIGTERM);
        signal(c, libc::SIGCONT);
    }
    let mut out: Vec<Option<Result<ExitStatus, String>>> = vec![None; children.len()];
    loop {
        let mut waiting = false;
        for (k, (i, c)) in children.iter_mut().enumerate() {
            if out[k].is_some() {
                continue;
            }
            match c.try_wait() {
                Ok(Some(st)) => out[k] = Some(Ok(st)),
                Ok(None) if Instant::now() >= deadline => {
                    signal(c, libc::SIGKILL);
                    let _ = c.wait();
                    out[k] = Some(Err(format!(
                        "node-{} did not exit after SIGTERM; killed",
                        *i + 1
                    )));
                }
                Ok(None) => waiting = true,
                Err(e) => out[k] = Some(Err(format!("waiting for node-{}: {e}", *i + 1))),
            }
        }
        if !waiting {
            return out.into_iter().map(|r| r.expect("every child")).collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Write a fresh random secret (64 hex digits) to `path`, readable by the
/// owner only.
pub(super) fn write_secret(path: &Path) -> Result<(), String> {
    let bytes: [u8; 32] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)?;
    // `mode` applies to a new file only; an old one is narrowed too.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(fail)?;
    f.write_all(hex.as_bytes()).map_err(fail)?;
    f.write_all(b"\n").map_err(fail)?;
    f.sync_all().map_err(fail)
}

/// `base + k`, or an error past port 65535.
pub(super) fn port_at(base: u16, k: usize) -> Result<u16, String> {
    u16::try_from(base as usize + k).map_err(|_| format!("port {base} + {k} is past 65535"))
}

/// The nodes' ports: consecutive from `base`, or free ones when `base` is
/// 0, returned with the listeners that hold them (none repeats while they
/// are held; drop them before the nodes start).
pub(super) fn node_ports(base: u16, n: usize) -> Result<(Vec<u16>, Vec<TcpListener>), String> {
    if base != 0 {
        let ports = (0..n).map(|k| port_at(base, k)).collect::<Result<_, _>>()?;
        return Ok((ports, vec![]));
    }
    let held: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("choosing a free port: {e}"))?;
    let ports = held
        .iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(|e| format!("choosing a free port: {e}"))
        })
        .collect::<Result<_, _>>()?;
    Ok((ports, held))
}

/// The last `n` lines of the file at `path` (its last 64 KiB at most).
pub(super) fn tail(path: &Path, n: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let lines: Vec<String> = BufReader::new(f).lines().map_while(Result::ok).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
