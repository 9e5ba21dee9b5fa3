//! When a request arrived: a client connection whose reads carry the
//! kernel's receive timestamp (`SO_TIMESTAMPNS`; `recvmsg` returns the time
//! the last segment read reached the socket). A request's time between
//! arriving and being read is the queue admission control could not see
//! before: connections waiting for a runtime worker, data waiting in the
//! socket. Owns the socket reads and the arrival time of the last one;
//! must not parse HTTP.

use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// The arrival time of the data a connection read last, ns since the Unix
/// epoch (0: unknown).
#[derive(Clone, Default)]
pub struct Arrival(Arc<AtomicU64>);

impl Arrival {
    /// How long ago the last data read arrived (zero when unknown, or when
    /// the clock went back).
    pub fn waited(&self) -> Duration {
        let at = self.0.load(Ordering::Relaxed);
        if at == 0 {
            return Duration::ZERO;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Duration::from_nanos(now.saturating_sub(at))
    }
}

/// A TCP stream that records the arrival time of what it reads.
pub struct TimedStream {
    inner: TcpStream,
    arrival: Arrival,
    /// False when the socket option could not be set: plain reads.
    timed: bool,
}

/// Ask the kernel to stamp what `socket` receives. On a listening socket
/// this also turns stamping on before the first connection arrives (the
/// kernel enables it lazily, and data received before is not stamped), and
/// accepted connections inherit it. False if the option cannot be set.
pub fn stamp_receives(socket: &impl AsRawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: a valid fd and an int option.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// The first bytes waiting in `socket`, without reading them: `Some(0)`
/// if the peer closed, `None` if nothing has arrived yet (or on an error).
pub fn peek(socket: &impl AsRawFd, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: buf is valid for writes of its length.
    let n = unsafe {
        libc::recv(
            socket.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).ok()
}

impl TimedStream {
    pub fn new(inner: TcpStream) -> (TimedStream, Arrival) {
        let timed = stamp_receives(&inner);
        let arrival = Arrival::default();
        (
            TimedStream {
                inner,
                arrival: arrival.clone(),
                timed,
            },
            arrival,
        )
    }
}

/// One `recvmsg` into `buf`: the bytes read and the receive timestamp, ns.
fn recv_timed(fd: i32, buf: &mut [std::mem::MaybeUninit<u8>]) -> io::Result<(usize, Option<u64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one SCM_TIMESTAMPNS (a timespec) with its header, aligned.
    let mut control = [0u64; 8];
    // SAFETY: zeroed msghdr is valid; the pointers below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg describes valid, writable buffers.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut at = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                at = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, at))
}

impl AsyncRead for TimedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.timed {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        loop {
            ready!(this.inner.poll_read_ready(cx))?;
            let fd = this.inner.as_raw_fd();
            // SAFETY: recvmsg only writes into the unfilled part, and
            // exactly `n` bytes of it are marked filled below.
            let unfilled = unsafe { buf.unfilled_mut() };
            let room = unfilled.len();
            // A read that did not fill the buffer took everything queued:
            // the closure then reports WouldBlock so that tokio clears the
            // readiness (only if no newer event arrived meanwhile), and the
            // next read waits for epoll instead of costing a recvmsg that
            // returns EAGAIN (tokio's own TcpStream does the same).
            let mut got = None;
            let r = this.inner.try_io(Interest::READABLE, || {
                let (n, at) = recv_timed(fd, unfilled)?;
                got = Some((n, at));
                if n > 0 && n < room {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(())
            });
            let r = match (r, got) {
                (_, Some(read)) => Ok(read),
                (Err(e), None) => Err(e),
                (Ok(()), None) => unreachable!("a read that succeeded recorded its bytes"),
            };
            match r {
                Ok((n, at)) => {
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    if let Some(at) = at {
                        this.arrival.0.store(at, Ordering::Relaxed);
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for TimedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_read_knows_when_its_data_arrived() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let (mut server, arrival) = TimedStream::new(server);
        assert_eq!(arrival.waited(), Duration::ZERO, "nothing read yet");
        // The kernel turns stamping on lazily: the first data may arrive
        // unstamped (then the wait is unknown, zero). Every stamped read
        // must show the wait.
        let mut stamped = 0;
        for _ in 0..10 {
            client.write_all(b"hello").await.unwrap();
            // The data waits in the socket before it is read.
            tokio::time::sleep(Duration::from_millis(60)).await;
            let mut buf = [0u8; 5];
            server.read_exact(&mut buf).await.unwrap();
            assert_eq!(&buf, b"hello");
            let waited = arrival.waited();
            if waited.is_zero() {
                continue;
            }
            assert!(
                waited >= Duration::from_millis(50) && waited < Duration::from_secs(5),
                "{waited:?}"
            );
            stamped += 1;
        }
        assert!(stamped >= 5, "only {stamped} of 10 reads were stamped");
        // Writes pass through.
        server.write_all(b"back").await.unwrap();
        let mut back = [0u8; 4];
        client.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"back");
    }
}
