//! The worker's HTTP server: `GET /v0/worker` (its status), `POST
//! /v0/worker/run` (one run: the share of a trial the body names, sent by
//! the load driver from the instant it names, answered with what it
//! measured). One run at a time (another gets 409), request bodies up to
//! `MAX_REQUEST` (413 past it), a bearer token checked in constant time
//! when one is set (401), and none accepted beyond loopback without one.
//! Owns serving the protocol; must not merge or judge.

use std::convert::Infallible;
use std::net::SocketAddr;
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

/// `strata worker`.
#[derive(clap::Args, Clone, Debug)]
pub struct WorkerArgs {
    /// Where to listen for the controller.
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub listen: SocketAddr,
    /// The bearer token a controller must send (at least 16 bytes);
    /// required unless --listen is a loopback address.
    #[arg(long, env = "STRATA_WORKER_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print nothing but errors.
    #[arg(long)]
    pub quiet: bool,
}

struct Worker {
    token: Option<String>,
    busy: AtomicBool,
    quiet: bool,
}

/// Run the worker until the process is stopped.
pub fn main(a: &WorkerArgs) -> Result<(), String> {
    match &a.token {
        Some(t) if t.len() < MIN_TOKEN => {
            return Err(format!(
                "--token: at least {MIN_TOKEN} bytes ({} given)",
                t.len()
            ))
        }
        None if !a.listen.ip().is_loopback() => {
            return Err(format!(
                "a worker listening on {} needs --token (or STRATA_WORKER_TOKEN, at least {MIN_TOKEN} bytes): whoever reaches it could send load anywhere",
                a.listen
            ))
        }
        _ => {}
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let w = Arc::new(Worker {
        token: a.token.clone(),
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
        if let Some(t) = &self.token {
            let given = req
                .headers()
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            if !same_token(given.as_bytes(), t.as_bytes()) {
                return error(StatusCode::UNAUTHORIZED, "this worker wants its token");
            }
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
        let nodes = r.target.nodes().map_err(bad)?;
        let workload = r.target.workload_share(segment).map_err(bad)?;
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
}
