//! `strata backup URL DIR` and `strata restore BACKUP DATA-DIR`. A backup
//! asks the node for a checkpoint of its store (`POST /v0/backup`: the
//! node hard-links its tables and copies its WAL tail while it serves),
//! downloads every file of it into `DIR/HOST_PORT/` with a `backup.json`
//! listing them and their sizes, and has the node remove its checkpoint;
//! `--all` does so for every member of the cluster, one after the other
//! (each node's copy is consistent on its own; anti-entropy levels the
//! nodes after a restore). A restore checks a node's backup against its
//! `backup.json` and copies it into a new data directory, from which
//! `strata serve --data-dir` starts (replaying the WAL tail). Owns the
//! downloading, the listing and the copying; must not read or write the
//! store's formats (the node and the engine do).

use std::path::{Path, PathBuf};
use std::time::Duration;
use strata_api::routes;

use serde::{Deserialize, Serialize};

use strata_client::control::same_url as same;

use crate::status::fetch;
use strata_client::control;

/// How long a node may be silent while it answers one request.
const IDLE: Duration = Duration::from_secs(120);

#[derive(clap::Args, Clone, Debug)]
pub struct BackupArgs {
    /// A member's URL, e.g. http://127.0.0.1:7001.
    pub url: String,
    /// Where the backup goes (created): one directory per node in it.
    pub dir: PathBuf,
    /// Every member of the cluster, not only URL.
    #[arg(long)]
    pub all: bool,
}

#[derive(clap::Args, Clone, Debug)]
pub struct RestoreArgs {
    /// One node's backup (a directory `strata backup` wrote, with its
    /// backup.json).
    pub backup: PathBuf,
    /// The new data directory for that node (must not exist, or be empty).
    pub data_dir: PathBuf,
}

/// `backup.json`: what a node's backup holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    pub node: String,
    pub id: String,
    pub taken_at_ms: u64,
    pub files: Vec<FileEntry>,
}

/// One file of a backup, and a node's answer listing them (typed once, in
/// `strata-api`).
pub use strata_api::operate::{BackupFiles as Taken, FileEntry};

/// A node's backup directory under `dir`: its host and port.
pub fn node_dir(dir: &Path, url: &str) -> PathBuf {
    let name: String = url
        .trim_end_matches('/')
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(name)
}

/// Back up the node at `url` into `node_dir(dir, url)`.
pub fn backup_one(url: &str, dir: &Path) -> Result<(PathBuf, Manifest), String> {
    let base = url.trim_end_matches('/');
    let t: Taken = control::json("POST", base, routes::BACKUP, 201, IDLE)?;
    let out = node_dir(dir, base);
    let got = download_all(base, &t, &out);
    // The node's checkpoint goes whether or not the download worked.
    let _ = control::request(
        "DELETE",
        base,
        &format!("{}/{}", routes::BACKUP, t.id),
        IDLE,
    );
    got?;
    let m = Manifest {
        node: t
            .node
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| base.to_string()),
        id: t.id,
        taken_at_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        files: t.files,
    };
    let text = serde_json::to_string_pretty(&m).map_err(|e| e.to_string())?;
    let p = out.join("backup.json");
    std::fs::write(&p, text + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
    Ok((out, m))
}

fn download_all(base: &str, t: &Taken, out: &Path) -> Result<(), String> {
    if out.exists() {
        return Err(format!("{} already exists", out.display()));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for f in &t.files {
        let to = out.join(&f.name);
        let n = control::download(
            base,
            &format!("{}/{}/{}", routes::BACKUP, t.id, f.name),
            &to,
            IDLE,
        )?;
        if n != f.bytes {
            return Err(format!(
                "{}: {n} bytes downloaded, the node listed {}",
                f.name, f.bytes
            ));
        }
    }
    Ok(())
}

/// `strata backup`.
pub fn backup(a: &BackupArgs) -> Result<(), String> {
    let mut urls = vec![a.url.clone()];
    if a.all {
        let v = fetch(&a.url)?;
        urls = vec![v.head.node.clone()];
        for m in &v.head.members {
            if !same(&m.url, &v.head.node) {
                urls.push(m.url.clone());
            }
        }
    }
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    for u in &urls {
        let t = std::time::Instant::now();
        let (out, m) = backup_one(u, &a.dir)?;
        let bytes: u64 = m.files.iter().map(|f| f.bytes).sum();
        println!(
            "{u}: {} files, {:.1} MiB in {:.1} s -> {}",
            m.files.len(),
            bytes as f64 / (1 << 20) as f64,
            t.elapsed().as_secs_f64(),
            out.display()
        );
    }
    Ok(())
}

/// Check `backup` against its `backup.json` and copy it into `data_dir`.
pub fn restore_one(backup: &Path, data_dir: &Path) -> Result<Manifest, String> {
    let mp = backup.join("backup.json");
    let text = std::fs::read_to_string(&mp).map_err(|e| format!("{}: {e}", mp.display()))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", mp.display()))?;
    for f in &m.files {
        let p = backup.join(&f.name);
        let len = std::fs::metadata(&p)
            .map_err(|e| format!("{}: {e}", p.display()))?
            .len();
        if len != f.bytes {
            return Err(format!(
                "{}: {len} bytes, backup.json says {}: the backup is damaged",
                p.display(),
                f.bytes
            ));
        }
    }
    if data_dir.exists()
        && std::fs::read_dir(data_dir)
            .map_err(|e| format!("{}: {e}", data_dir.display()))?
            .next()
            .is_some()
    {
        return Err(format!(
            "{} is not empty: restore into a new data directory",
            data_dir.display()
        ));
    }
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    for f in &m.files {
        let (from, to) = (backup.join(&f.name), data_dir.join(&f.name));
        std::fs::copy(&from, &to).map_err(|e| format!("{}: {e}", from.display()))?;
        std::fs::File::open(&to)
            .and_then(|f| f.sync_all())
            .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    std::fs::File::open(data_dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("{}: {e}", data_dir.display()))?;
    Ok(m)
}

/// `strata restore`.
pub fn restore(a: &RestoreArgs) -> Result<(), String> {
    let m = restore_one(&a.backup, &a.data_dir)?;
    println!(
        "restored {}'s backup ({} files) into {}; start it with: strata serve --data-dir {} (the node's own --cluster and --advertise)",
        m.node,
        m.files.len(),
        a.data_dir.display(),
        a.data_dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_backup_is_refused_and_a_good_one_restored() {
        let d = tempfile::tempdir().unwrap();
        let b = d.path().join("b");
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("000001.sst"), b"table").unwrap();
        std::fs::write(b.join("CURRENT"), b"MANIFEST-000002\n").unwrap();
        let m = Manifest {
            node: "http://127.0.0.1:7001".into(),
            id: "1-1".into(),
            taken_at_ms: 1,
            files: vec![
                FileEntry {
                    name: "000001.sst".into(),
                    bytes: 5,
                },
                FileEntry {
                    name: "CURRENT".into(),
                    bytes: 16,
                },
            ],
        };
        std::fs::write(b.join("backup.json"), serde_json::to_string(&m).unwrap()).unwrap();
        let to = d.path().join("data");
        assert_eq!(restore_one(&b, &to).unwrap(), m);
        assert_eq!(std::fs::read(to.join("000001.sst")).unwrap(), b"table");
        // Not into a directory that holds something.
        assert!(restore_one(&b, &to).unwrap_err().contains("not empty"));
        // A file cut short is found.
        std::fs::write(b.join("000001.sst"), b"tab").unwrap();
        let e = restore_one(&b, &d.path().join("data2")).unwrap_err();
        assert!(e.contains("damaged"), "{e}");
        assert_eq!(
            node_dir(Path::new("/b"), "http://127.0.0.1:7001/"),
            PathBuf::from("/b/127.0.0.1_7001")
        );
    }
}
