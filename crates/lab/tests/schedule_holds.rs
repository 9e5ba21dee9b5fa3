//! The open loop keeps its schedule by itself: against a server whose
//! latency rises through the run, a pool that grows (from --connections up
//! to --max-connections) sends every request on time, where a fixed pool
//! of the same start falls behind, drops the sends it cannot start within
//! --drop-after and counts them as errors. And a run ends at its duration
//! even when the server never answers.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use strata_lab::experiment::trial::{run, summary, LoadArgs, TargetArgs};

/// A server answering 201 after `delay(seconds since it started)`.
fn server(delay: fn(f64) -> Duration) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let born = Instant::now();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let (s, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let svc = service_fn(move |_req| async move {
                        tokio::time::sleep(delay(born.elapsed().as_secs_f64())).await;
                        let mut r = hyper::Response::new(Full::new(Bytes::new()));
                        *r.status_mut() = hyper::StatusCode::CREATED;
                        Ok::<_, Infallible>(r)
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(s), svc)
                        .await;
                });
            }
        });
    });
    addr
}

/// Latency rising from 2 ms by 40 ms a second: 160 ms after 4 s. At
/// 400 req/s the schedule needs 64 requests in flight by then.
fn rising(t: f64) -> Duration {
    Duration::from_secs_f64(0.002 + 0.040 * t)
}

fn args(addr: std::net::SocketAddr, max_connections: usize) -> LoadArgs {
    LoadArgs {
        target: TargetArgs {
            url: format!("http://{addr}"),
            workload: "put".into(),
            keys: 1000,
            value_size: 10,
            connections: 4,
            max_connections,
            drop_after: 0.5,
            threads: 1,
            arrivals: "constant".into(),
            seed: 1,
            warmup: 0.0,
            out: None,
            preload: false,
            json: false,
            quiet: true,
            ack: None,
            from: None,
            client: Default::default(),
        },
        rate: 400.0,
        uploads_per_day: None,
        duration: 4.0,
        clients: 0,
        think: 0.0,
        hdr: None,
        objective: Default::default(),
        share: Default::default(),
        workers: Default::default(),
        during: Default::default(),
    }
}

#[test]
fn a_growing_pool_keeps_a_schedule_a_fixed_pool_cannot() {
    let addr = server(rising);
    let grown = run(&args(addr, 10_000)).unwrap();
    eprintln!("{}", summary(grown.trial(), &grown.outcome));
    let g = &grown.outcome;
    assert_eq!(g.dropped, 0, "nothing dropped");
    assert_eq!(g.counted, 1600, "every scheduled request sent and answered");
    assert_eq!(g.statuses.get(&201), Some(&1600));
    assert!(
        g.connections > 4 * 4,
        "the pool grew well past its 4 connections: {}",
        g.connections
    );
    assert_eq!(grown.trial().errors, 0);

    let addr = server(rising);
    let fixed = run(&args(addr, 4)).unwrap();
    eprintln!("{}", summary(fixed.trial(), &fixed.outcome));
    let f = &fixed.outcome;
    assert_eq!(f.connections, 4, "the cap held");
    // Four connections carry at most 4 / latency: 100/s at 40 ms, 25/s at
    // 160 ms; most of the 1,600 sends never start within 0.5 s.
    assert!(f.dropped > 800, "dropped {}", f.dropped);
    let t = fixed.trial();
    assert_eq!(
        t.requests,
        f.counted + f.dropped,
        "dropped sends are requests"
    );
    assert_eq!(t.errors, f.errors + f.dropped, "and count as errors");
    assert!(t.error_pct > 50.0, "{}%", t.error_pct);
    // The timeline carries the drops too, second by second.
    let timeline_errors: u64 = t.timeline.iter().map(|s| s.errors).sum();
    assert_eq!(timeline_errors, t.errors);
}

/// A server that never answers.
fn silent(_: f64) -> Duration {
    Duration::from_secs(3600)
}

#[test]
fn a_run_ends_at_its_duration_when_the_server_never_answers() {
    let addr = server(silent);
    let a = LoadArgs {
        rate: 100.0,
        duration: 2.0,
        ..args(addr, 50)
    };
    let began = Instant::now();
    let r = run(&a).unwrap();
    let took = began.elapsed();
    eprintln!("{}", summary(r.trial(), &r.outcome));
    let o = &r.outcome;
    // 2 s, then 0.5 s for the last answers; a slow machine adds some, an
    // unbounded run would wait for an hour.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(o.unfinished, 50, "each connection abandoned its request");
    assert_eq!(o.counted, 50);
    assert_eq!(o.dropped, 150, "the rest never started");
    assert_eq!(r.trial().errors, 200, "everything failed");
}
