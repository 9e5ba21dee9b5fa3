//! `strata cluster delay --listen ADDR --to ADDR --delay 5ms`: a TCP relay
//! that holds every byte it relays for a fixed time in each direction, the
//! network path of a distant client or node where the kernel has no netem
//! (run it inside a network namespace, in front of a node). Each
//! connection is relayed in order: what is read is stamped and written
//! once its time has come, so a request and its answer each take `delay`
//! more, and the path's bandwidth is the machine's. At most
//! `MAX_IN_FLIGHT` reads wait per direction (the reader stops reading
//! past them: TCP's own flow control holds the sender). Owns the relaying;
//! must not look into the bytes.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Reads waiting for their time, per direction of a connection.
const MAX_IN_FLIGHT: usize = 256;
const BUF: usize = 16 * 1024;

#[derive(clap::Args, Clone, Debug)]
pub struct DelayArgs {
    /// Where to accept connections.
    #[arg(long)]
    pub listen: SocketAddr,
    /// Where to relay them.
    #[arg(long)]
    pub to: SocketAddr,
    /// Added to each direction (5ms, 1s; a bare number is seconds): a
    /// round trip takes twice this more.
    #[arg(long, value_parser = crate::units::seconds)]
    pub delay: f64,
}

/// Relay until killed.
pub fn main(a: &DelayArgs) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let delay = Duration::from_secs_f64(a.delay.max(0.0));
    rt.block_on(async move {
        let l = TcpListener::bind(a.listen)
            .await
            .map_err(|e| format!("listen on {}: {e}", a.listen))?;
        // Scripts and tests wait for this line.
        println!("relaying {} to {} with {delay:?} each way", a.listen, a.to);
        loop {
            let (down, _) = l.accept().await.map_err(|e| e.to_string())?;
            let to = a.to;
            tokio::spawn(async move {
                if let Ok(up) = TcpStream::connect(to).await {
                    let _ = down.set_nodelay(true);
                    let _ = up.set_nodelay(true);
                    let (dr, dw) = down.into_split();
                    let (ur, uw) = up.into_split();
                    tokio::spawn(relay(dr, uw, delay));
                    tokio::spawn(relay(ur, dw, delay));
                }
            });
        }
    })
}

/// One direction: read, stamp, and write each read at its time.
async fn relay(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(MAX_IN_FLIGHT);
    let writer = tokio::spawn(async move {
        while let Some((at, bytes)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = vec![0u8; BUF];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_takes_twice_the_delay_more() {
        // An echo server, the relay in front of it, a client timing one
        // exchange.
        let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let to = echo.local_addr().unwrap();
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            let (mut s, _) = echo.accept().unwrap();
            let mut b = [0u8; 5];
            s.read_exact(&mut b).unwrap();
            s.write_all(&b).unwrap();
        });
        let listen = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let a = DelayArgs {
            listen,
            to,
            delay: 0.02,
        };
        std::thread::spawn(move || main(&a));
        let mut s = loop {
            match std::net::TcpStream::connect(listen) {
                Ok(s) => break s,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        use std::io::{Read, Write};
        let t = std::time::Instant::now();
        s.write_all(b"hello").unwrap();
        let mut b = [0u8; 5];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hello");
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(40), "{took:?}");
        assert!(took < Duration::from_millis(500), "{took:?}");
    }
}
