//! `http-ceiling`: the HTTP ceiling of this machine, for scripts/bench-node.sh.
//!
//! A trivial hyper 1.x HTTP/1.1 server (keep-alive, tokio multi-thread runtime,
//! mimalloc) that answers every request with 200 and a fixed 100-byte body,
//! the size of the node benchmark's values. The node's requests/s are reported
//! as a ratio of this server's, so both must run on the same stack.
//!
//! Usage: `http-ceiling [--listen ADDR] [--threads N]`
//! (defaults 127.0.0.1:8090 and 2 worker threads).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{body::Incoming, server::conn::http1, service::service_fn, Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

static BODY: &[u8; 100] = &[b'x'; 100];

async fn handle(_req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(BODY))))
}

fn main() {
    let (mut listen, mut threads) = ("127.0.0.1:8090".to_string(), 2usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--listen" => listen = value,
            "--threads" => threads = value.parse().unwrap_or_else(|_| usage("bad --threads")),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let listener = TcpListener::bind(&listen).await.expect("bind");
        eprintln!("http-ceiling listening on {listen} with {threads} worker threads");
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(async move {
                        let conn = http1::Builder::new()
                            .keep_alive(true)
                            .serve_connection(TokioIo::new(stream), service_fn(handle));
                        let _ = conn.await;
                    });
                }
            }
        }
    });
}

fn usage(msg: &str) -> ! {
    eprintln!("http-ceiling: {msg}\nusage: http-ceiling [--listen ADDR] [--threads N]");
    std::process::exit(2);
}
