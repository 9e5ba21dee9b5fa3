//! The checked runner against a tiny in-process store (a `Mutex<HashMap>`
//! behind hyper, served on two ports as two "nodes"): an honest store
//! passes, also while it refuses writes, times out after applying them and
//! stalls; a store that forgets acknowledged writes and serves old values
//! fails, with lost and stale reads counted. The history survives a round
//! trip through JSON lines.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use strata_lab::check::{self, Config, Kind, Outcome, Quorum};

/// How the store misbehaves; 0 = never.
#[derive(Default)]
struct Faults {
    /// Every n-th PUT: answer 201 without storing.
    forget_every: u64,
    /// Every n-th GET: answer with the version before the newest (404 if
    /// there is none).
    stale_every: u64,
    /// Every n-th PUT: store, then answer 504 (an unknown outcome).
    unknown_every: u64,
    /// Every n-th PUT: answer 503 without storing (refused).
    refuse_every: u64,
    /// While set, every request waits this long before it is applied.
    stall: AtomicBool,
}

#[derive(Default)]
struct Store {
    /// Every version of every key, oldest first.
    versions: Mutex<HashMap<Vec<u8>, Vec<Vec<u8>>>>,
    puts: AtomicU64,
    gets: AtomicU64,
    faults: Faults,
    /// Each method with the query parameters it came with besides `id`.
    params: Mutex<std::collections::BTreeSet<String>>,
}

const STALL: Duration = Duration::from_millis(500);

fn decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn answer(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r
}

async fn serve(store: Arc<Store>, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    let query = req.uri().query().unwrap_or("").to_string();
    let Some(id) = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("id="))
        .map(decode)
    else {
        return answer(StatusCode::BAD_REQUEST, b"no id".to_vec());
    };
    let method = req.method().clone();
    let rest: Vec<&str> = query
        .split('&')
        .filter(|kv| !kv.starts_with("id="))
        .collect();
    store
        .params
        .lock()
        .unwrap()
        .insert(format!("{method} {}", rest.join("&")));
    let body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
    if store.faults.stall.load(Ordering::Relaxed) {
        tokio::time::sleep(STALL).await;
    }
    let f = &store.faults;
    let every = |n: u64, k: u64| n > 0 && k % n == n - 1;
    match method {
        Method::PUT => {
            let k = store.puts.fetch_add(1, Ordering::Relaxed);
            if every(f.refuse_every, k) {
                return answer(StatusCode::SERVICE_UNAVAILABLE, b"busy".to_vec());
            }
            if !every(f.forget_every, k) {
                store
                    .versions
                    .lock()
                    .unwrap()
                    .entry(id)
                    .or_default()
                    .push(body);
            }
            if every(f.unknown_every, k) {
                return answer(
                    StatusCode::GATEWAY_TIMEOUT,
                    b"not enough replicas: got 1 of 2".to_vec(),
                );
            }
            answer(StatusCode::CREATED, Vec::new())
        }
        Method::GET => {
            let k = store.gets.fetch_add(1, Ordering::Relaxed);
            let versions = store.versions.lock().unwrap();
            let v = versions.get(&id).map(Vec::as_slice).unwrap_or(&[]);
            let v = if every(f.stale_every, k) {
                v.len().checked_sub(2).map(|i| &v[i])
            } else {
                v.last()
            };
            match v {
                Some(v) => answer(StatusCode::OK, v.clone()),
                None => answer(StatusCode::NOT_FOUND, Vec::new()),
            }
        }
        _ => answer(StatusCode::METHOD_NOT_ALLOWED, Vec::new()),
    }
}

/// Serve `store` on `nodes` ports; their URLs.
fn start(store: Arc<Store>, nodes: usize) -> Vec<String> {
    let mut urls = Vec::new();
    for _ in 0..nodes {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        urls.push(format!("http://{}", listener.local_addr().unwrap()));
        listener.set_nonblocking(true).unwrap();
        let store = store.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let (s, _) = listener.accept().await.unwrap();
                    let store = store.clone();
                    tokio::spawn(async move {
                        let svc = service_fn(move |req| {
                            let store = store.clone();
                            async move { Ok::<_, Infallible>(serve(store, req).await) }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(s), svc)
                            .await;
                    });
                }
            });
        });
    }
    urls
}

fn config(urls: Vec<String>) -> Config {
    Config {
        clients: 8,
        duration: Duration::from_secs(20),
        target_writes: Some(1500),
        timeout: Duration::from_millis(250),
        final_backoff: Duration::from_millis(10),
        ..Config::new(urls)
    }
}

#[test]
fn an_honest_store_passes_through_refusals_unknown_outcomes_and_a_stall() {
    let store = Arc::new(Store {
        faults: Faults {
            unknown_every: 13,
            refuse_every: 17,
            ..Faults::default()
        },
        ..Store::default()
    });
    let urls = start(store.clone(), 2);
    let running = check::spawn(config(urls)).unwrap();
    // A fault in the middle of the run: the store stalls (as a node under
    // SIGSTOP would), requests time out and are applied late.
    assert!(running.wait_for(Duration::from_secs(20), |p| p.acknowledged() >= 300));
    store.faults.stall.store(true, Ordering::Relaxed);
    let before = running.progress().ops();
    assert!(running.wait_for(Duration::from_secs(20), |p| p.ops() >= before + 32));
    store.faults.stall.store(false, Ordering::Relaxed);
    let out = running.join().unwrap();
    let r = &out.report;
    println!("{r}");
    assert!(r.passed(), "{r}");
    assert!(r.set_acknowledged >= 1500, "{r}");
    assert!(r.writes_failed > 0 && r.writes_unknown > 0, "{r}");
    assert!(r.unknown_present > 0, "{r}");
    assert!(r.register_reads_checked > 100 && r.stale_checked, "{r}");
    assert_eq!(r.registers, 8 * 4);
    // Timeouts during the stall: outcomes no answer came for.
    assert!(out
        .history
        .ops
        .iter()
        .any(|o| o.outcome == Outcome::Unknown && o.status.is_none()));
    // Every key was read in the final pass, through both nodes.
    let finals: Vec<_> = out.history.ops.iter().filter(|o| o.final_read).collect();
    assert!(finals.len() as u64 >= r.set_acknowledged + 32);
    assert!(finals.iter().all(|o| o.kind == Kind::Read));
    let nodes: std::collections::HashSet<&str> = finals.iter().map(|o| &*o.node).collect();
    assert_eq!(nodes.len(), 2);

    // The history survives JSON lines and checks the same.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    out.history.write_jsonl(&path).unwrap();
    let back = check::History::read_jsonl(&path).unwrap();
    assert_eq!(back, out.history);
    assert_eq!(check::check(&back, Quorum::default()), out.report);
}

#[test]
fn a_store_that_forgets_and_serves_old_values_fails() {
    let store = Arc::new(Store {
        faults: Faults {
            forget_every: 10,
            stale_every: 5,
            ..Faults::default()
        },
        ..Store::default()
    });
    let urls = start(store, 2);
    let out = check::run::run(&config(urls)).unwrap();
    let r = &out.report;
    println!("{r}");
    assert!(!r.passed());
    assert!(r.lost > 0, "{r}");
    assert!(r.stale > 0, "{r}");
    assert_eq!(r.impossible, 0, "{r}");
    assert!(r.to_string().ends_with("FAILED\n"));
    assert!(!r.lost_examples.is_empty() && !r.stale_examples.is_empty());
}

#[test]
fn a_dead_node_refuses_writes_and_the_final_reads_go_around_it() {
    let store = Arc::new(Store::default());
    let mut urls = start(store, 1);
    // A port nothing listens on: connections are refused, as by a node
    // killed with SIGKILL.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    urls.push(format!("http://{}", dead.local_addr().unwrap()));
    drop(dead);
    let cfg = Config {
        target_writes: Some(300),
        ..config(urls.clone())
    };
    let out = check::run::run(&cfg).unwrap();
    let r = &out.report;
    println!("{r}");
    assert!(r.passed(), "{r}");
    let refused: Vec<_> = out
        .history
        .ops
        .iter()
        .filter(|o| o.kind == Kind::Write && &*o.node == urls[1].as_str())
        .collect();
    assert!(!refused.is_empty());
    assert!(refused
        .iter()
        .all(|o| o.outcome == Outcome::Failed && o.status.is_none()));
    // Each key's final read was answered, by the live node.
    assert_eq!(r.unverified, 0);
}

#[test]
fn stale_reads_are_not_judged_when_quorums_need_not_meet() {
    let store = Arc::new(Store {
        faults: Faults {
            stale_every: 5,
            ..Faults::default()
        },
        ..Store::default()
    });
    let urls = start(store.clone(), 1);
    let cfg = Config {
        quorum: Quorum::explicit(1, 1, 3),
        target_writes: Some(300),
        ..config(urls)
    };
    let out = check::run::run(&cfg).unwrap();
    let r = &out.report;
    assert!(!r.stale_checked);
    assert_eq!(r.stale, 0);
    // The requests carried the parameters; final reads asked every replica.
    let params: Vec<String> = store.params.lock().unwrap().iter().cloned().collect();
    assert_eq!(
        params,
        ["GET ack=1&from=3", "GET ack=3&from=3", "PUT ack=1&from=3"]
    );
    assert!(out.history.ops.iter().any(|o| o.final_read));
    println!("{r}");
}

#[test]
fn a_second_run_on_the_same_store_is_not_confused_by_the_first() {
    let store = Arc::new(Store::default());
    let urls = start(store.clone(), 1);
    let small = |urls: Vec<String>| Config {
        target_writes: Some(200),
        ..config(urls)
    };
    let first = check::spawn(small(urls.clone())).unwrap().join().unwrap();
    assert!(first.report.passed(), "{}", first.report);
    // Same seed, same clients: the same operations, on keys of its own.
    let second = check::spawn(small(urls)).unwrap().join().unwrap();
    let r = &second.report;
    assert!(r.passed(), "{r}");
    assert_eq!(r.impossible, 0, "{r}");
    let keys = |h: &check::History| -> std::collections::HashSet<Vec<u8>> {
        h.ops.iter().map(|o| o.key.clone()).collect()
    };
    assert!(keys(&first.history).is_disjoint(&keys(&second.history)));
}
