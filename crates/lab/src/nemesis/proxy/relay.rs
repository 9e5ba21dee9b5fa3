//! The proxy's moving parts: each route's accept loop, and each accepted
//! connection relayed to its upstream from its head (read to learn which
//! peer is calling) to its close, both directions pumped through a fault
//! that can turn into silence at any moment and counted. Owns the bytes'
//! way; must not decide which link is cut (the proxy's callers do).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::{Route, Shared, State, BUF, MAX_PEEK, PEEK_TIMEOUT};

pub(super) async fn accept_loop(
    listener: TcpListener,
    route: Arc<Route>,
    shared: Arc<Shared>,
    upstream: SocketAddr,
) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                route.accepted.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(relay(sock, route.clone(), shared.clone(), upstream));
            }
            // Out of descriptors and the like: wait, do not spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// One accepted connection, from its head to its close.
async fn relay(
    mut client: TcpStream,
    route: Arc<Route>,
    shared: Arc<Shared>,
    upstream: SocketAddr,
) {
    let conn = shared.register(&route);
    let mut rx = conn.state.subscribe();
    let mut head = Vec::with_capacity(1024);
    read_head(&mut client, &mut head, &mut rx).await;
    shared.tag(&conn, header(&head, "x-strata-from"));
    let state = *rx.borrow_and_update();
    match state {
        State::Closed => {
            let _ = client.set_zero_linger();
        }
        State::BlackHole => {
            route
                .dropped
                .fetch_add(head.len() as u64, Ordering::Relaxed);
            let (r, w) = client.into_split();
            pump(r, None, rx, &route).await;
            w.forget();
        }
        State::Forward => {
            let Ok(up) = TcpStream::connect(upstream).await else {
                // The node is down: the dialler sees a reset, as it would
                // from the node's own closed port.
                let _ = client.set_zero_linger();
                return;
            };
            let _ = up.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (ur, mut uw) = up.into_split();
            if *rx.borrow_and_update() == State::Forward && uw.write_all(&head).await.is_ok() {
                route
                    .forwarded
                    .fetch_add(head.len() as u64, Ordering::Relaxed);
            } else {
                route
                    .dropped
                    .fetch_add(head.len() as u64, Ordering::Relaxed);
            }
            let rx2 = conn.state.subscribe();
            // Each pump owns the write half it writes to; on a proxy close
            // it forgets it so that no FIN goes before the reset.
            tokio::join!(
                pump(cr, Some(uw), rx, &route),
                pump(ur, Some(cw), rx2, &route)
            );
        }
    }
    drop(conn);
}

/// Read the start of a connection into `head`: up to the end of an HTTP
/// request head, `MAX_PEEK` bytes, end of stream, `PEEK_TIMEOUT`, or the
/// proxy closing the connection, whichever comes first.
async fn read_head(s: &mut TcpStream, head: &mut Vec<u8>, rx: &mut watch::Receiver<State>) {
    let deadline = tokio::time::sleep(PEEK_TIMEOUT);
    tokio::pin!(deadline);
    let mut b = [0u8; 4096];
    while head.len() < MAX_PEEK && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        tokio::select! {
            _ = &mut deadline => return,
            _ = rx.wait_for(|s| *s == State::Closed) => return,
            r = s.read(&mut b[..(MAX_PEEK - head.len()).min(4096)]) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&b[..n]),
            },
        }
    }
}

/// The value of header `name` in the request head at the start of `head`.
pub(super) fn header(head: &[u8], name: &str) -> Option<String> {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let text = std::str::from_utf8(&head[..end]).ok()?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// Relay `src` to `dst` while the connection relays; read and drop while
/// it is black-holed (`dst` is `None` for a connection black-holed from
/// its start); close with a reset when the proxy closes it.
async fn pump(
    mut src: OwnedReadHalf,
    mut dst: Option<OwnedWriteHalf>,
    mut rx: watch::Receiver<State>,
    route: &Route,
) {
    let mut buf = vec![0u8; BUF];
    let mut src_open = true;
    loop {
        if *rx.borrow_and_update() == State::Closed {
            let _ = src.as_ref().set_zero_linger();
            if let Some(d) = dst {
                let _ = d.as_ref().set_zero_linger();
                d.forget();
            }
            return;
        }
        tokio::select! {
            r = rx.changed() => {
                if r.is_err() {
                    return;
                }
            }
            r = src.read(&mut buf), if src_open => {
                // The state now, not before the read: bytes that arrive
                // after a partition are never relayed.
                let st = *rx.borrow();
                match r {
                    Ok(n) if n > 0 && st == State::Forward => {
                        let d = dst.as_mut().expect("a relaying connection has a destination");
                        let wrote = tokio::select! {
                            biased;
                            _ = rx.wait_for(|s| *s != State::Forward) => None,
                            r = d.write_all(&buf[..n]) => Some(r.is_ok()),
                        };
                        match wrote {
                            Some(true) => {
                                route.forwarded.fetch_add(n as u64, Ordering::Relaxed);
                            }
                            Some(false) => return,
                            None => {
                                route.dropped.fetch_add(n as u64, Ordering::Relaxed);
                            }
                        }
                    }
                    Ok(n) if n > 0 => {
                        route.dropped.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    // End of stream or an error.
                    _ if st == State::Forward => {
                        if let Some(d) = dst.as_mut() {
                            let _ = d.shutdown().await;
                        }
                        return;
                    }
                    // Black-holed: the other side hears nothing of it.
                    _ => src_open = false,
                }
            }
        }
    }
}
