//! `http-ceiling`: the HTTP ceiling of this machine, for scripts/bench-node.sh.
//!
//! A trivial hyper 1.x HTTP/1.1 server (keep-alive, tokio multi-thread runtime,
//! mimalloc) that answers every request with 200 and a fixed 100-byte body,
//! the size of the node benchmark's values. The node's requests/s are reported
//! as a ratio of this server's, so both must run on the same stack.
//!
//! With `--raw`, it skips hyper: each connection's bytes are split into
//! requests with `httparse` and answered with the same fixed response,
//! several per write when requests arrive together. That is the "trivial
//! server" the load generator's own speed is measured against: on the one
//! core left beside the generator, hyper would be the limit, not the
//! generator.
//!
//! With `--current-thread`, one current-thread runtime serves everything
//! (the node's per-core shape, one core's worth).
//!
//! Usage: `http-ceiling [--listen ADDR] [--threads N] [--raw]
//! [--current-thread]` (defaults 127.0.0.1:8090 and 2 worker threads).

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
    let (mut raw, mut current) = (false, false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--raw" {
            raw = true;
            continue;
        }
        if flag == "--current-thread" {
            current = true;
            continue;
        }
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--listen" => listen = value,
            "--threads" => threads = value.parse().unwrap_or_else(|_| usage("bad --threads")),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    let runtime = if current {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .enable_all()
            .build()
    }
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
                    if raw {
                        tokio::spawn(serve_raw(stream));
                        continue;
                    }
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

/// The fixed answer of `--raw` mode.
const RAW_ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

/// Answer every complete request on the connection with `RAW_ANSWER`.
async fn serve_raw(mut s: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    let (mut start, mut end) = (0usize, 0usize);
    let mut skip = 0usize; // body bytes still to drop
    let mut out = Vec::with_capacity(16 * 1024);
    loop {
        if start == end {
            start = 0;
            end = 0;
        } else if end == buf.len() {
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
        match s.read(&mut buf[end..]).await {
            Ok(0) | Err(_) => return,
            Ok(n) => end += n,
        }
        loop {
            if skip > 0 {
                let k = skip.min(end - start);
                start += k;
                skip -= k;
                if skip > 0 {
                    break;
                }
            }
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&buf[start..end]) {
                Ok(httparse::Status::Complete(n)) => {
                    skip = req
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                        .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                        .unwrap_or(0);
                    start += n;
                    out.extend_from_slice(RAW_ANSWER);
                }
                Ok(httparse::Status::Partial) => break,
                Err(_) => return,
            }
        }
        if !out.is_empty() {
            if s.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
    }
}

fn usage(msg: &str) -> ! {
    eprintln!("http-ceiling: {msg}\nusage: http-ceiling [--listen ADDR] [--threads N]");
    std::process::exit(2);
}
