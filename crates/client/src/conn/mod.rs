//! A lean HTTP/1.1 client connection (for load generation and the
//! client's sessions): one keep-alive
//! TCP connection (TLS for https://, opened by `stream`), requests written by hand into a reused buffer, answers
//! decoded by `answer` and their bodies (sized or chunked) read and
//! dropped, or kept in the caller's buffer when it asks (`request_into`,
//! for the consistency checker, which must see what a GET returned). The
//! generator's cost per request is what limits the rate one core can
//! offer, so this does no more than a load generator needs, as wrk does.
//! It says whether a failed request could have reached the server
//! (`sent`): a reused connection the server has closed is found before the
//! request is written, so a dead node's idle connections never leave a
//! write in doubt. A request that meets a reused connection the server
//! closed is sent once more on a new one only when that cannot apply it
//! twice: a GET, a write named with `strata-write-id` (the nodes apply it
//! once), or a write that was not written whole the first time. Owns the
//! wire; must not decide what to send or when.

use std::io::{self, Write as _};

use crate::answer::{self, Framing, Head};
use crate::stream::NodeStream;
use strata_api::headers::NOT_APPLIED;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub use crate::stream::Target;

/// What came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body_bytes: u64,
    /// The node said it refused the request before acting on it
    /// (`strata_api::headers::NOT_APPLIED`).
    pub not_applied: bool,
}

/// How much of a failed answer's body a connection keeps (and a reason
/// the client reports, `said`): far more than a node's longest reason
/// (under 1 KiB), so a reason always reaches the caller whole, and still
/// a bound on what a connection holds.
pub const ERROR_BODY: usize = 8 * 1024;

/// One keep-alive connection, opened on first use and again after an error
/// or a `Connection: close`.
pub struct Conn {
    target: Target,
    stream: Option<NodeStream>,
    wbuf: Vec<u8>,
    rbuf: Box<[u8]>,
    /// Bytes of `rbuf` holding data not yet consumed: `rbuf[start..end]`.
    start: usize,
    end: usize,
    /// The last request went out twice (see `resent`).
    resent: bool,
    /// The last answer's `Server-Timing` value, as sent (empty: none).
    timing: Vec<u8>,
    /// The last answer's body when it failed (status 400 and above), its
    /// first `ERROR_BODY` bytes: what the node said.
    error_body: Vec<u8>,
    /// The last request was written whole at least once.
    sent: bool,
    /// Look for a close before writing on a reused connection.
    stale_check: bool,
}

const READ_BUF: usize = 64 * 1024;
/// The largest chunk `next_chunk` reads: a range entry of the largest key
/// and value a node takes (`--max-value-bytes` at most 32 MiB) and more.
pub const MAX_CHUNK: u64 = 40 << 20;

impl Conn {
    pub fn new(target: Target) -> Conn {
        Conn {
            target,
            stream: None,
            wbuf: Vec::with_capacity(512),
            rbuf: vec![0u8; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            resent: false,
            timing: Vec::with_capacity(256),
            error_body: Vec::new(),
            sent: false,
            stale_check: false,
        }
    }

    /// Before each request on a reused plain connection, see whether the
    /// server closed it while idle (one non-blocking read), so that a
    /// request is never written into a dead node's connection: its
    /// failure is then certain not to have been applied.
    pub fn with_stale_check(mut self) -> Conn {
        self.stale_check = true;
        self
    }

    /// Whether the last request was written whole to a connection (if it
    /// then failed, the server may have acted on it); `false` when it
    /// failed before that (no connection could be opened).
    pub fn sent(&self) -> bool {
        self.sent
    }

    /// Whether a plain reused connection was closed by the server while
    /// idle (a FIN or RST already here, or bytes no request asked for).
    fn stale(&self) -> bool {
        match &self.stream {
            Some(NodeStream::Plain(s)) => {
                let mut b = [0u8; 1];
                !matches!(s.try_read(&mut b), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
            }
            _ => false,
        }
    }

    /// The last answer's `Server-Timing` header value (empty when it had
    /// none), for the caller to parse when it keeps the request.
    pub fn server_timing(&self) -> &[u8] {
        &self.timing
    }

    /// The last answer's body if it failed (status 400 and above; empty
    /// otherwise), at most `ERROR_BODY` bytes of it.
    pub fn error_body(&self) -> &[u8] {
        &self.error_body
    }

    /// Open the connection now if it is not open (a request opens it
    /// otherwise): a load generator opens its first connections before
    /// its clock starts, as wrk does, so that its first sends do not all
    /// wait for a handshake at once.
    pub async fn connect(&mut self) -> io::Result<()> {
        if self.stream.is_none() {
            self.open().await?;
        }
        Ok(())
    }

    async fn open(&mut self) -> io::Result<()> {
        self.stream = Some(crate::stream::connect(&self.target).await?);
        self.start = 0;
        self.end = 0;
        Ok(())
    }

    /// Send `method path` with `body` and read the whole answer. A reused
    /// connection the server had closed is reopened and the request sent
    /// once more; any other failure is an error (and the connection is
    /// dropped).
    pub async fn request(&mut self, method: &str, path: &str, body: &[u8]) -> io::Result<Answer> {
        self.send((method, path, None), body, None).await
    }

    /// As `request_into` (when `out` is given) or `request`, for a write
    /// named `write_id` (`strata_api::headers::WRITE_ID`; `None`: unnamed).
    pub async fn request_named(
        &mut self,
        (method, path): (&str, &str),
        write_id: Option<u128>,
        body: &[u8],
        out: Option<&mut Vec<u8>>,
    ) -> io::Result<Answer> {
        self.send((method, path, write_id), body, out).await
    }

    /// As `request`, and the answer's body (its data bytes, chunk framing
    /// removed) replaces the contents of `out`.
    pub async fn request_into(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        out: &mut Vec<u8>,
    ) -> io::Result<Answer> {
        self.send((method, path, None), body, Some(out)).await
    }

    /// Whether the last request was sent a second time on a new connection
    /// (the reused one turned out closed). The server may then have seen
    /// it twice: a caller that must know whether a write was applied
    /// cannot take a refusal of the second copy as the whole story.
    pub fn resent(&self) -> bool {
        self.resent
    }

    /// Write a request's head into `wbuf`: the request line, `Host`, the
    /// token, the write's name, the body's length.
    fn head(&mut self, (method, path, write_id): (&str, &str, Option<u128>), body: &[u8]) {
        self.wbuf.clear();
        self.wbuf.extend_from_slice(method.as_bytes());
        self.wbuf.push(b' ');
        self.wbuf.extend_from_slice(path.as_bytes());
        self.wbuf.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        self.wbuf.extend_from_slice(self.target.host.as_bytes());
        if let Some(t) = &self.target.token {
            self.wbuf.extend_from_slice(b"\r\nAuthorization: Bearer ");
            self.wbuf.extend_from_slice(t.as_bytes());
        }
        if let Some(id) = write_id {
            self.wbuf.extend_from_slice(b"\r\n");
            self.wbuf
                .extend_from_slice(strata_api::headers::WRITE_ID.as_bytes());
            // Written in place: no allocation on the sending path.
            let _ = write!(self.wbuf, ": {id:032x}");
        }
        if !body.is_empty() || method == "PUT" || method == "POST" {
            self.wbuf.extend_from_slice(b"\r\nContent-Length: ");
            self.wbuf
                .extend_from_slice(itoa(body.len() as u64, &mut [0u8; 20]));
        }
        self.wbuf.extend_from_slice(b"\r\n\r\n");
    }

    async fn send(
        &mut self,
        (method, path, write_id): (&str, &str, Option<u128>),
        body: &[u8],
        mut out: Option<&mut Vec<u8>>,
    ) -> io::Result<Answer> {
        self.head((method, path, write_id), body);
        let head = self.wbuf.len();
        self.sent = false;
        if self.stale_check && self.stream.is_some() && self.start == self.end && self.stale() {
            self.stream = None;
        }
        let reused = self.stream.is_some();
        self.resent = false;
        if let Some(o) = out.as_deref_mut() {
            o.clear();
        }
        match self.exchange(body, out.as_deref_mut()).await {
            Ok(a) => Ok(a),
            // Safe to send again: a read, a named write, or a write whose
            // bytes did not all go out (the server had closed: it read
            // none of them as a request).
            Err(e)
                if reused
                    && e.kind() == io::ErrorKind::ConnectionAborted
                    && (method == "GET" || write_id.is_some() || !self.sent) =>
            {
                self.stream = None;
                self.resent = true;
                // `exchange` may have appended a small body to the head.
                self.wbuf.truncate(head);
                if let Some(o) = out.as_deref_mut() {
                    o.clear();
                }
                self.exchange(body, out)
                    .await
                    .inspect_err(|_| self.stream = None)
            }
            Err(e) => {
                self.stream = None;
                Err(e)
            }
        }
    }

    async fn exchange(&mut self, body: &[u8], out: Option<&mut Vec<u8>>) -> io::Result<Answer> {
        if self.stream.is_none() {
            self.open().await?;
        }
        let s = self.stream.as_mut().expect("open");
        // A write or a first read that fails on a reused connection means
        // the server closed it in between: ConnectionAborted, retried.
        let closed = |e: io::Error| match e.kind() {
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => {
                io::Error::new(io::ErrorKind::ConnectionAborted, e)
            }
            _ => e,
        };
        if body.is_empty() {
            s.write_all(&self.wbuf).await.map_err(closed)?;
        } else if body.len() <= 4096 {
            self.wbuf.extend_from_slice(body);
            s.write_all(&self.wbuf).await.map_err(closed)?;
        } else {
            s.write_all(&self.wbuf).await.map_err(closed)?;
            s.write_all(body).await.map_err(closed)?;
        }
        self.sent = true;
        self.read_answer(out).await
    }

    /// Read more bytes into the buffer; `first` marks the first read of an
    /// answer, where EOF means the server closed an idle connection.
    async fn fill(&mut self, first: bool) -> io::Result<()> {
        if self.start > 0 && self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.end == self.rbuf.len() {
            if self.start == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "answer head larger than 64 KiB",
                ));
            }
            self.rbuf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let s = self.stream.as_mut().expect("open");
        let n = match s.read(&mut self.rbuf[self.end..]).await {
            Ok(n) => n,
            Err(e) if first && e.kind() == io::ErrorKind::ConnectionReset => {
                return Err(io::Error::new(io::ErrorKind::ConnectionAborted, e))
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            let kind = if first {
                io::ErrorKind::ConnectionAborted
            } else {
                io::ErrorKind::UnexpectedEof
            };
            return Err(io::Error::new(kind, "connection closed by the server"));
        }
        self.end += n;
        Ok(())
    }

    /// Send `GET path` and read the answer's head only, for a body read
    /// one chunk at a time (`next_chunk`): a range's entries. A status
    /// other than 200 has its body read (its words in `error_body`) and
    /// nothing is left to read; a 200 that is not chunked is an error.
    pub async fn open_chunks(&mut self, path: &str) -> io::Result<u16> {
        self.head(("GET", path, None), b"");
        if self.stream.is_none() {
            self.open().await?;
        }
        let s = self.stream.as_mut().expect("open");
        s.write_all(&self.wbuf).await?;
        self.sent = true;
        let (h, _) = self.read_head().await?;
        self.start += h.size;
        let status = h.status;
        if status != 200 {
            let mut err = std::mem::take(&mut self.error_body);
            err.clear();
            let r = self.body(h.body, Some(&mut err)).await;
            err.truncate(ERROR_BODY);
            err.shrink_to(ERROR_BODY);
            self.error_body = err;
            r?;
            if h.close {
                self.stream = None;
            }
            return Ok(status);
        }
        if h.body != Framing::Chunked {
            self.stream = None;
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a streamed answer that is not chunked",
            ));
        }
        Ok(status)
    }

    /// The next chunk of the answer `open_chunks` opened, in `out`
    /// (replaced); `false` after the last. A chunk larger than
    /// `MAX_CHUNK` is an error.
    pub async fn next_chunk(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        out.clear();
        let size = self.chunk_size().await?;
        if size > MAX_CHUNK {
            self.stream = None;
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a chunk of {size} bytes, more than {MAX_CHUNK}"),
            ));
        }
        if size == 0 {
            self.trailers().await?;
            return Ok(false);
        }
        self.skip(size, Some(out)).await?;
        self.skip(2, None).await?;
        Ok(true)
    }

    /// Consume the next chunk's size line; its size.
    async fn chunk_size(&mut self) -> io::Result<u64> {
        loop {
            match answer::chunk_size(&self.rbuf[self.start..self.end]) {
                Ok(Some((used, size))) => {
                    self.start += used;
                    return Ok(size);
                }
                Ok(None) => self.fill(false).await?,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
    }

    /// Consume the trailers after the last chunk: lines until an empty one.
    async fn trailers(&mut self) -> io::Result<()> {
        loop {
            match answer::trailers(&self.rbuf[self.start..self.end]) {
                Some(used) => {
                    self.start += used;
                    return Ok(());
                }
                None => self.fill(false).await?,
            }
        }
    }

    /// Read an answer's head (`answer::head`): the head, and whether it
    /// carried `strata-not-applied`.
    async fn read_head(&mut self) -> io::Result<(Head, bool)> {
        let mut first = true;
        loop {
            if self.end > self.start {
                let timing = &mut self.timing;
                timing.clear();
                let mut not_applied = false;
                let parsed = answer::head(&self.rbuf[self.start..self.end], |name, value| {
                    if name.eq_ignore_ascii_case(strata_api::timing::HEADER) {
                        timing.extend_from_slice(&value[..value.len().min(1024)]);
                    } else if name.eq_ignore_ascii_case(NOT_APPLIED) {
                        not_applied = true;
                    }
                })
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                if let Some(h) = parsed {
                    return Ok((h, not_applied && h.status == 503));
                }
            }
            self.fill(first).await?;
            first = false;
        }
    }

    async fn read_answer(&mut self, out: Option<&mut Vec<u8>>) -> io::Result<Answer> {
        let (h, not_applied) = self.read_head().await?;
        self.start += h.size;
        let status = h.status;
        // A failed answer's words are kept when the caller keeps no body.
        let mut err = std::mem::take(&mut self.error_body);
        err.clear();
        let out = match out {
            None if status >= 400 => Some(&mut err),
            out => out,
        };
        let body_bytes = self.body(h.body, out).await;
        err.truncate(ERROR_BODY);
        err.shrink_to(ERROR_BODY);
        self.error_body = err;
        let body_bytes = body_bytes?;
        if h.close {
            self.stream = None;
        }
        Ok(Answer {
            status,
            body_bytes,
            not_applied,
        })
    }

    /// Consume a body framed as `framing`, appending its data to `out` if
    /// given; returns the data bytes. A body that runs until the close
    /// leaves the connection closed.
    async fn body(&mut self, framing: Framing, out: Option<&mut Vec<u8>>) -> io::Result<u64> {
        match framing {
            Framing::Length(n) => self.skip(n, out).await,
            Framing::Chunked => self.skip_chunked(out).await,
            Framing::UntilClose => self.skip_to_close(out).await,
        }
    }

    /// Consume everything until the server closes the connection.
    async fn skip_to_close(&mut self, mut out: Option<&mut Vec<u8>>) -> io::Result<u64> {
        let mut total = 0;
        loop {
            let have = &self.rbuf[self.start..self.end];
            if let Some(o) = out.as_deref_mut() {
                o.extend_from_slice(have);
            }
            total += have.len() as u64;
            self.start = self.end;
            match self.fill(false).await {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.stream = None;
                    return Ok(total);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Consume `n` body bytes, appending them to `out` if given.
    async fn skip(&mut self, n: u64, mut out: Option<&mut Vec<u8>>) -> io::Result<u64> {
        let mut left = n;
        loop {
            let have = ((self.end - self.start) as u64).min(left);
            if let Some(o) = out.as_deref_mut() {
                o.extend_from_slice(&self.rbuf[self.start..self.start + have as usize]);
            }
            self.start += have as usize;
            left -= have;
            if left == 0 {
                return Ok(n);
            }
            self.fill(false).await?;
        }
    }

    /// Consume a chunked body (and its trailers), appending its data to
    /// `out` if given; returns the data bytes.
    async fn skip_chunked(&mut self, mut out: Option<&mut Vec<u8>>) -> io::Result<u64> {
        let mut total = 0;
        loop {
            let size = self.chunk_size().await?;
            if size == 0 {
                self.trailers().await?;
                return Ok(total);
            }
            self.skip(size, out.as_deref_mut()).await?;
            self.skip(2, None).await?;
            total += size;
        }
    }
}

/// Decimal digits of `v` without allocating.
fn itoa(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}

#[cfg(test)]
mod tests;
