//! The worker's HTTP server: `GET /v0/worker` (its status), `POST
//! /v0/worker/run` (one run: the share of a trial the body names, sent by
//! the load driver from the instant it names, answered with what it
//! measured). It will not start without its own token (`--worker-token`,
//! at least `MIN_TOKEN` bytes, never the token it shows the node); every
//! request without it is answered 401 before its body is read (compared
//! in constant time). One run at a time (another gets 409), request
//! bodies up to `MAX_REQUEST` (413 past it); a workload is the request's
//! own (`RunRequest::workload_toml`), a built-in, or a file under
//! `--workloads` (403 for a name outside it, `..` and symlinks included).
//! Owns serving the protocol; must not merge or judge.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use super::{same_token, RunRequest, Status, MAX_REQUEST, MIN_TOKEN, RUN_ROUTE, STATUS_ROUTE};
use crate::load::driver::wire::{PartWire, SecondWire};
use crate::load::driver::{self};
use crate::load::segment::Segment;
use crate::load::workload::{spec::BUILTIN_NAMES, Workload};

/// How to make a worker's token, for the error that asks for one.
const MAKE_TOKEN: &str = "make one with `strata secret new --out worker.token` (any random string of at least 16 bytes; mode 0600), copy it to each load machine and to the controller, and give it to both with --worker-token-file worker.token";

/// `strata worker`.
#[derive(clap::Args, Clone, Debug)]
pub struct WorkerArgs {
    /// Where to listen for the controller.
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub listen: SocketAddr,
    /// A file holding the bearer token a controller must show this worker
    /// (the controller's --worker-token-file holds the same; at least 16
    /// bytes): required, loopback included. Not the node's token: that is
    /// the global --token.
    #[arg(long, env = "STRATA_WORKER_TOKEN_FILE", value_name = "FILE")]
    pub worker_token_file: Option<PathBuf>,
    /// This worker's token itself, the one controllers must show it
    /// (--worker-token-file wins over it; prefer the file: a command line
    /// is visible to every local user).
    #[arg(long, env = "STRATA_WORKER_TOKEN", hide_env_values = true)]
    pub worker_token: Option<String>,
    /// The directory whose workload files a request may name (by a path
    /// relative to it); without it, a workload file must come in the
    /// request (a controller sends its contents).
    #[arg(long, value_name = "DIR")]
    pub workloads: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long)]
    pub quiet: bool,
}

impl WorkerArgs {
    /// The worker's own token, checked: given, long enough, and not the
    /// token it shows the node (`node_token`).
    fn token(&self, node_token: Option<&str>) -> Result<String, String> {
        let t = match super::given_token(&self.worker_token, &self.worker_token_file)? {
            Some(t) => t,
            None => {
                return Err(format!(
                    "a worker needs its own token, which every controller must show it: --worker-token-file FILE (or STRATA_WORKER_TOKEN); {MAKE_TOKEN}. (--token is another credential: the one the worker shows the node under test, if the node checks tokens.)"
                ))
            }
        };
        if t.len() < MIN_TOKEN {
            return Err(format!(
                "the worker's token: at least {MIN_TOKEN} bytes ({} given); {MAKE_TOKEN}",
                t.len()
            ));
        }
        if node_token.is_some_and(|n| n.trim() == t) {
            return Err(
                "the worker's token is the token it shows the node (--token): give it its own, so that a controller never holds the node's credentials nor the node the worker's"
                    .into(),
            );
        }
        Ok(t)
    }
}

struct Worker {
    /// The SHA-256 of the token a controller must show.
    token_digest: String,
    /// `--workloads`, canonical.
    workloads: Option<PathBuf>,
    busy: AtomicBool,
    quiet: bool,
}

/// Run the worker until the process is stopped. `node_token` is the
/// token it shows the node (the global `--token`), which its own must
/// differ from.
pub fn main(a: &WorkerArgs, node_token: Option<&str>) -> Result<(), String> {
    let token = a.token(node_token)?;
    let workloads = match &a.workloads {
        Some(d) => {
            let c = d
                .canonicalize()
                .map_err(|e| format!("--workloads {}: {e}", d.display()))?;
            if !c.is_dir() {
                return Err(format!("--workloads {}: not a directory", d.display()));
            }
            Some(c)
        }
        None => None,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let w = Arc::new(Worker {
        token_digest: strata_api::access::token_digest(&token),
        workloads,
        busy: AtomicBool::new(false),
        quiet: a.quiet,
    });
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(a.listen)
            .await
            .map_err(|e| format!("{}: {e}", a.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        // The address on stdout, for scripts that listen on port 0.
        println!("strata worker listening on http://{addr}");
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let w = w.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let w = w.clone();
                    async move { Ok::<_, Infallible>(w.serve(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    })
}

fn answer(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn error(status: StatusCode, why: &str) -> Response<Full<Bytes>> {
    answer(status, serde_json::json!({ "error": why }).to_string())
}

impl Worker {
    async fn serve(self: Arc<Self>, req: Request<Incoming>) -> Response<Full<Bytes>> {
        // Before anything else: the body is not read, nothing is run.
        let given = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            None => {
                return error(
                    StatusCode::UNAUTHORIZED,
                    "this worker wants its token: Authorization: Bearer TOKEN (the controller's --worker-token-file)",
                )
            }
            Some(g) if !same_token(g, &self.token_digest) => {
                return error(
                    StatusCode::UNAUTHORIZED,
                    "not this worker's token (the controller's --worker-token-file must hold the worker's)",
                )
            }
            Some(_) => {}
        }
        match (req.method().as_str(), req.uri().path()) {
            ("GET", STATUS_ROUTE) => {
                let s = Status {
                    version: env!("CARGO_PKG_VERSION").into(),
                    busy: self.busy.load(Ordering::Relaxed),
                    cpus: crate::load::cpu::own_cpus().unwrap_or(1.0) as usize,
                };
                answer(
                    StatusCode::OK,
                    serde_json::to_string(&s).unwrap_or_default(),
                )
            }
            ("POST", RUN_ROUTE) => {
                if self.busy.load(Ordering::Acquire) {
                    return error(StatusCode::CONFLICT, "this worker is running another trial");
                }
                let body = match Limited::new(req.into_body(), MAX_REQUEST).collect().await {
                    Ok(b) => b.to_bytes(),
                    Err(_) => {
                        return error(
                            StatusCode::PAYLOAD_TOO_LARGE,
                            &format!("a run request is at most {MAX_REQUEST} bytes"),
                        )
                    }
                };
                let run: RunRequest = match serde_json::from_slice(&body) {
                    Ok(r) => r,
                    Err(e) => {
                        return error(StatusCode::BAD_REQUEST, &format!("the run request: {e}"))
                    }
                };
                if self.busy.swap(true, Ordering::AcqRel) {
                    return error(StatusCode::CONFLICT, "this worker is running another trial");
                }
                let me = self.clone();
                let r = tokio::task::spawn_blocking(move || me.run(run)).await;
                self.busy.store(false, Ordering::Release);
                match r {
                    Ok(Ok(part)) => answer(StatusCode::OK, part),
                    Ok(Err((status, why))) => error(status, &why),
                    Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
                }
            }
            (_, STATUS_ROUTE | RUN_ROUTE) => error(
                StatusCode::METHOD_NOT_ALLOWED,
                "GET /v0/worker, POST /v0/worker/run",
            ),
            _ => error(StatusCode::NOT_FOUND, "GET /v0/worker, POST /v0/worker/run"),
        }
    }

    /// One run: the plan the request describes, sent from its instant.
    fn run(&self, r: RunRequest) -> Result<String, (StatusCode, String)> {
        let bad = |e: String| (StatusCode::BAD_REQUEST, e);
        let segment = Segment::new(r.segment.0, r.segment.1).map_err(bad)?;
        if !crate::units::positive(r.duration_s) || r.target.warmup < 0.0 {
            return Err(bad(
                "the duration must be positive, the warm-up not negative".into(),
            ));
        }
        let workload = Arc::new(self.workload(&r)?.with_segment(segment).map_err(bad)?);
        let nodes = r.target.nodes().map_err(bad)?;
        let mut plan = r
            .target
            .plan(&nodes, &workload, r.pace, r.duration_s, r.seed);
        plan.start_at = Some(SystemTime::UNIX_EPOCH + Duration::from_millis(r.start_at_ms));
        if !self.quiet {
            eprintln!(
                "run: share {segment} of {} for {}s",
                r.target.url, r.duration_s
            );
        }
        let mut seconds = Vec::new();
        let outcome = driver::run(&plan, &mut |s| seconds.push(SecondWire::of(s)), &mut |_| {})
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e))?;
        serde_json::to_string(&PartWire::of(&outcome, seconds))
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
    }

    /// The request's workload: its own contents, a built-in, or a file
    /// under `--workloads`; never another file.
    fn workload(&self, r: &RunRequest) -> Result<Workload, (StatusCode, String)> {
        let bad = |e: String| (StatusCode::BAD_REQUEST, e);
        let t = &r.target;
        if let Some(toml) = &r.workload_toml {
            return Workload::from_toml_str(toml)
                .map_err(|e| bad(format!("the workload sent ({}): {e}", t.workload)));
        }
        if BUILTIN_NAMES.contains(&t.workload.as_str()) {
            return Workload::builtin(&t.workload, t.keys, t.value_size).map_err(bad);
        }
        let Some(dir) = &self.workloads else {
            return Err((
                StatusCode::FORBIDDEN,
                format!(
                    "this worker reads no workload file a request names ({:?}): send its contents (a controller does), or start the worker with --workloads DIR",
                    t.workload
                ),
            ));
        };
        let path = under(dir, &t.workload).map_err(|e| (StatusCode::FORBIDDEN, e))?;
        Workload::from_toml_str(
            &std::fs::read_to_string(&path).map_err(|e| bad(format!("{}: {e}", path.display())))?,
        )
        .map_err(|e| bad(format!("{}: {e}", t.workload)))
    }
}

/// `name` as a file under `dir` (canonical), or why not: a path that
/// leaves it, by `..`, an absolute path or a symlink, is refused, and so
/// is one that is not there.
fn under(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let outside = || {
        format!(
            "workload {name:?} is not a file under this worker's --workloads {}",
            dir.display()
        )
    };
    let p = Path::new(name);
    if p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(outside());
    }
    let c = dir.join(p).canonicalize().map_err(|_| outside())?;
    if !c.starts_with(dir) || !c.is_file() {
        return Err(outside());
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_under_the_workloads_directory_are_read() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("w");
        std::fs::create_dir(&dir).unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a.toml"), "").unwrap();
        std::fs::write(root.path().join("secret.toml"), "").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret.toml"), dir.join("link.toml")).unwrap();
        let dir = dir.canonicalize().unwrap();
        assert_eq!(under(&dir, "sub/a.toml").unwrap(), dir.join("sub/a.toml"));
        let secret = root.path().join("secret.toml");
        for bad in [
            "../secret.toml",
            "sub/../../secret.toml",
            secret.to_str().unwrap(),
            "link.toml",
            "missing.toml",
            "sub",
        ] {
            let e = under(&dir, bad).unwrap_err();
            assert!(e.contains("not a file under"), "{bad}: {e}");
        }
    }
}
