//! Backups of this node over HTTP. `POST /v0/backup` takes a checkpoint of
//! the store (`Db::checkpoint`: tables hard-linked, the WAL tail copied,
//! while the node serves) into `DATA/backups/ID/` and answers its files;
//! `GET /v0/backup/ID/FILE` streams one (read on the blocking pool, a
//! bounded channel of chunks to the connection); `DELETE /v0/backup/ID`
//! removes the checkpoint (`handle` answers all three). `strata backup`
//! drives these. Owns the
//! checkpoints' directory, their names and the file streaming; must not
//! decide what goes into a checkpoint (the engine does).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use strata_api::routes;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use strata_cluster::Cluster;
use strata_engine::{CheckpointInfo, Db};
use tokio::sync::mpsc;

use crate::reply::{json, text, Body};

/// Bytes read from a file per chunk sent.
const CHUNK: usize = 1 << 20;
/// Chunks read ahead of the connection.
const AHEAD: usize = 4;

static NEXT: AtomicU64 = AtomicU64::new(1);

/// Where this node keeps its checkpoints.
pub fn root(data_dir: &Path) -> PathBuf {
    data_dir.join("backups")
}

/// A checkpoint just taken: its id and every file in it with its size.
pub struct Taken {
    pub id: String,
    pub info: CheckpointInfo,
    pub files: Vec<(String, u64)>,
}

/// Take a checkpoint (blocking).
pub fn take(db: &Db, data_dir: &Path) -> Result<Taken, String> {
    let root = root(data_dir);
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let id = format!("{ms}-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let info = db.checkpoint(root.join(&id)).map_err(|e| e.to_string())?;
    let files = list(&root, &id)?;
    Ok(Taken { id, info, files })
}

/// The files of checkpoint `id`, by name, with their sizes.
pub fn list(root: &Path, id: &str) -> Result<Vec<(String, u64)>, String> {
    let dir = checkpoint_dir(root, id)?;
    let mut files = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let meta = e.metadata().map_err(|e| e.to_string())?;
        if meta.is_file() {
            files.push((e.file_name().to_string_lossy().into_owned(), meta.len()));
        }
    }
    files.sort();
    Ok(files)
}

/// A name is one plain path component: no separators, no `..`.
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn checkpoint_dir(root: &Path, id: &str) -> Result<PathBuf, String> {
    if !plain(id) {
        return Err(format!("bad backup id {id:?}"));
    }
    let dir = root.join(id);
    if !dir.is_dir() {
        return Err(format!("no backup {id}"));
    }
    Ok(dir)
}

/// The path of one file of checkpoint `id`.
pub fn file(root: &Path, id: &str, name: &str) -> Result<PathBuf, String> {
    if !plain(name) {
        return Err(format!("bad file name {name:?}"));
    }
    let p = checkpoint_dir(root, id)?.join(name);
    if !p.is_file() {
        return Err(format!("no file {name} in backup {id}"));
    }
    Ok(p)
}

/// Remove checkpoint `id`.
pub fn remove(root: &Path, id: &str) -> Result<(), String> {
    let dir = checkpoint_dir(root, id)?;
    std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// A file's bytes as a response body: read on the blocking pool, at most
/// `AHEAD` chunks ahead of the connection.
pub struct FileBody {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
}

impl FileBody {
    pub fn open(path: PathBuf) -> std::io::Result<FileBody> {
        let mut f = std::fs::File::open(&path)?;
        let (tx, rx) = mpsc::channel(AHEAD);
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            loop {
                let mut buf = vec![0u8; CHUNK];
                match f.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => {
                        buf.truncate(n);
                        if tx.blocking_send(Ok(Bytes::from(buf))).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.blocking_send(Err(e));
                        return;
                    }
                }
            }
        });
        Ok(FileBody { rx })
    }
}

impl hyper::body::Body for FileBody {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data)))
    }
}

/// Backups: `POST /v0/backup` takes a checkpoint and lists its files,
/// `GET /v0/backup/ID` lists them again, `GET /v0/backup/ID/FILE` streams
/// one, `DELETE /v0/backup/ID` removes the checkpoint (the functions below).
pub(crate) async fn handle(
    cluster: &Cluster,
    data_dir: &Path,
    req: &Request<Incoming>,
) -> Response<Body> {
    let root = root(data_dir);
    let rest = req.uri().path()[routes::BACKUP.len()..].trim_start_matches('/');
    let parts: Vec<&str> = if rest.is_empty() {
        vec![]
    } else {
        rest.split('/').collect()
    };
    let listed = |id: &str, files: &[(String, u64)]| strata_api::operate::BackupFiles {
        id: id.to_string(),
        files: files
            .iter()
            .map(|(name, bytes)| strata_api::operate::FileEntry {
                name: name.clone(),
                bytes: *bytes,
            })
            .collect(),
        node: None,
        tables: None,
        linked: None,
        table_bytes: None,
        wal_segments: None,
        wal_bytes: None,
    };
    let typed = |status, body: &strata_api::operate::BackupFiles| {
        json(status, &serde_json::to_value(body).unwrap_or_default())
    };
    match (req.method(), parts.as_slice()) {
        (&Method::POST, []) => {
            let db = cluster.local().clone();
            let dir = data_dir.to_path_buf();
            match tokio::task::spawn_blocking(move || take(&db, &dir)).await {
                Ok(Ok(t)) => {
                    let body = strata_api::operate::BackupFiles {
                        node: Some(cluster.advertise().to_string()),
                        tables: Some(t.info.tables as u64),
                        linked: Some(t.info.linked as u64),
                        table_bytes: Some(t.info.table_bytes),
                        wal_segments: Some(t.info.wal_segments as u64),
                        wal_bytes: Some(t.info.wal_bytes),
                        ..listed(&t.id, &t.files)
                    };
                    tracing::info!(id = %t.id, tables = t.info.tables, "backup checkpoint taken");
                    typed(StatusCode::CREATED, &body)
                }
                Ok(Err(e)) => text(StatusCode::INTERNAL_SERVER_ERROR, &e),
                Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            }
        }
        (&Method::GET, [id]) => match list(&root, id) {
            Ok(files) => typed(StatusCode::OK, &listed(id, &files)),
            Err(e) => text(StatusCode::NOT_FOUND, &e),
        },
        (&Method::GET, [id, name]) => match file(&root, id, name) {
            Ok(p) => match FileBody::open(p) {
                Ok(b) => {
                    let mut r = Response::new(b.boxed());
                    r.headers_mut().insert(
                        CONTENT_TYPE,
                        HeaderValue::from_static("application/octet-stream"),
                    );
                    r
                }
                Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            },
            Err(e) => text(StatusCode::NOT_FOUND, &e),
        },
        (&Method::DELETE, [id]) => match remove(&root, id) {
            Ok(()) => text(StatusCode::OK, "removed"),
            Err(e) => text(StatusCode::NOT_FOUND, &e),
        },
        _ => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "POST /v0/backup, GET /v0/backup/ID[/FILE], DELETE /v0/backup/ID",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_plain_component() {
        for ok in [
            "1732400000000-1",
            "000007.sst",
            "CURRENT",
            "MANIFEST-000012",
        ] {
            assert!(plain(ok), "{ok}");
        }
        for bad in ["", ".", "..", "../x", "a/b", "/etc", "a b", "x\0"] {
            assert!(!plain(bad), "{bad:?}");
        }
    }
}
