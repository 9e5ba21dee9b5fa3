//! The client's blocking face for control requests to a node (status,
//! the cluster's view, repair, metrics scrapes, a Prometheus query, a
//! profile or a backup downloaded): one request on a fresh connection with
//! `Connection: close`, bounded by a deadline, the answer decoded by
//! `answer` (the same decoder as the async connection's) and read whole
//! into memory (at most 4 MiB), or streamed into a file of any size
//! (`download`). Owns that exchange; must not be used for load (the
//! async `conn` is) or keep connections.

use std::io::Write;
use std::time::{Duration, Instant};

use strata_api::operate::ClusterView;
use strata_api::routes;

use crate::answer::{self, Framing, Head};
use crate::stream::{BlockingStream, Target};

/// Largest answer read into memory (its body).
const MAX_ANSWER: usize = 4 << 20;
/// The read buffer: the largest head, or chunk size line, taken.
const READ_BUF: usize = 64 << 10;

/// A node's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    /// Where each chunk of a chunked body ends in `body` (empty for a
    /// body that was not chunked).
    pub chunks: Vec<usize>,
}

impl Reply {
    /// The chunks of a chunked body, in order.
    pub fn chunks(&self) -> impl Iterator<Item = &[u8]> {
        let mut from = 0;
        self.chunks.iter().map(move |&end| {
            let c = &self.body[from..end];
            from = end;
            c
        })
    }
}

/// `GET path` from the node at `url` (`http://host:port`), everything
/// within `timeout`. An error names the URL and what went wrong (refused,
/// timed out, not HTTP).
pub fn get(url: &str, path: &str, timeout: Duration) -> Result<Reply, String> {
    request("GET", url, path, timeout)
}

/// `METHOD path` answered `want`, its JSON body decoded; any other answer
/// is an error naming the URL, the status and the body.
pub fn json<T: serde::de::DeserializeOwned>(
    method: &str,
    url: &str,
    path: &str,
    want: u16,
    timeout: Duration,
) -> Result<T, String> {
    let base = url.trim_end_matches('/');
    let r = request(method, base, path, timeout)?;
    if r.status != want {
        return Err(format!(
            "{base}{path} answered {}: {}",
            r.status,
            String::from_utf8_lossy(&r.body).trim()
        ));
    }
    serde_json::from_slice(&r.body).map_err(|e| format!("{base}{path}: {e}"))
}

/// `METHOD path` (GET, POST with an empty body, DELETE), as [`get`].
pub fn request(method: &str, url: &str, path: &str, timeout: Duration) -> Result<Reply, String> {
    let target = Target::parse(url).map_err(|e| format!("{url}{path}: {e}"))?;
    request_to(method, &target, path, timeout).map_err(|e| format!("{url}{e}"))
}

/// `GET /v0/cluster` from the node at `url`: its whole view
/// (`strata_api::operate::ClusterView`).
pub fn cluster_view(url: &str, timeout: Duration) -> Result<ClusterView, String> {
    json("GET", url, routes::CLUSTER, 200, timeout)
}

/// Whether two URLs name the same node (with or without a trailing `/`).
pub fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// As [`request`], to a parsed target (a sampler's, every second); an
/// error starts with the path.
pub fn request_to(
    method: &str,
    target: &Target,
    path: &str,
    timeout: Duration,
) -> Result<Reply, String> {
    let fail = |e: String| format!("{path}: {e}");
    let deadline = Instant::now() + timeout;
    let s = send(method, target, path, timeout).map_err(&fail)?;
    let mut r = Reader::new(s, Wait::Until(deadline));
    let h = r.head().map_err(&fail)?;
    let (mut body, mut chunks) = (Vec::new(), Vec::new());
    r.body(&h, &mut |piece| {
        match piece {
            Piece::Data(d) => {
                if body.len() + d.len() > MAX_ANSWER {
                    return Err("answer larger than 4 MiB".into());
                }
                body.extend_from_slice(d);
            }
            Piece::ChunkEnd => chunks.push(body.len()),
        }
        Ok(())
    })
    .map_err(&fail)?;
    Ok(Reply {
        status: h.status,
        body,
        chunks,
    })
}

/// Connect to `target` and write `METHOD path` (an empty body
/// for POST, `Connection: close`), within `timeout`.
fn send(
    method: &str,
    target: &Target,
    path: &str,
    timeout: Duration,
) -> Result<BlockingStream, String> {
    let mut s = crate::stream::connect_blocking(target, timeout)?;
    let body = if method == "POST" {
        "Content-Length: 0\r\n"
    } else {
        ""
    };
    let auth = match &target.token {
        Some(t) => format!("Authorization: Bearer {t}\r\n"),
        None => String::new(),
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{auth}{body}Connection: close\r\n\r\n",
        target.host
    );
    // Under TLS the handshake happens here, bounded by the timeouts.
    s.write_all(head.as_bytes()).map_err(|e| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => "timed out".to_string(),
        _ => e.to_string(),
    })?;
    Ok(s)
}

/// How long a read may wait.
#[derive(Clone, Copy)]
enum Wait {
    /// Everything by this instant (an answer read into memory).
    Until(Instant),
    /// Each read within this long (a download of any size).
    Each(Duration),
}

/// A piece of a body as it is read.
enum Piece<'a> {
    Data(&'a [u8]),
    /// The chunk whose data came last has ended.
    ChunkEnd,
}

/// An answer read from a blocking stream through one buffer.
struct Reader {
    s: BlockingStream,
    buf: Box<[u8]>,
    /// Bytes of `buf` not yet consumed: `buf[start..end]`.
    start: usize,
    end: usize,
    wait: Wait,
}

impl Reader {
    fn new(s: BlockingStream, wait: Wait) -> Reader {
        Reader {
            s,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            wait,
        }
    }

    fn have(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Read more; `false` when the server has closed the connection.
    fn fill(&mut self) -> Result<bool, String> {
        use std::io::Read;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end == self.buf.len() {
            if self.start == 0 {
                return Err("an answer's head or chunk line larger than 64 KiB".into());
            }
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        let t = match self.wait {
            Wait::Until(d) => d.saturating_duration_since(Instant::now()),
            Wait::Each(t) => t,
        };
        if t.is_zero() {
            return Err("timed out".into());
        }
        self.s
            .tcp()
            .set_read_timeout(Some(t))
            .map_err(|e| e.to_string())?;
        loop {
            match self.s.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return Err("timed out".into())
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Fill, where the close would cut the body short.
    fn more(&mut self) -> Result<(), String> {
        if self.fill()? {
            Ok(())
        } else {
            Err("connection closed inside the body".into())
        }
    }

    fn head(&mut self) -> Result<Head, String> {
        loop {
            if let Some(h) = answer::head(self.have(), |_, _| {})? {
                self.start += h.size;
                return Ok(h);
            }
            if !self.fill()? {
                return Err("connection closed before a whole answer".into());
            }
        }
    }

    /// Hand the body's pieces to `sink` as they arrive, framed as `h`
    /// says; after the last chunk the trailers are not waited for (the
    /// server closes).
    fn body(
        &mut self,
        h: &Head,
        sink: &mut dyn FnMut(Piece) -> Result<(), String>,
    ) -> Result<(), String> {
        match h.body {
            Framing::Length(n) => self.take(n, sink),
            Framing::UntilClose => loop {
                let n = self.have().len();
                sink(Piece::Data(&self.buf[self.start..self.end]))?;
                self.start += n;
                if !self.fill()? {
                    return Ok(());
                }
            },
            Framing::Chunked => loop {
                let size = loop {
                    if let Some((used, size)) = answer::chunk_size(self.have())? {
                        self.start += used;
                        break size;
                    }
                    self.more()?;
                };
                if size == 0 {
                    return Ok(());
                }
                self.take(size, sink)?;
                sink(Piece::ChunkEnd)?;
                while self.have().len() < answer::CHUNK_END.len() {
                    self.more()?;
                }
                if !self.have().starts_with(answer::CHUNK_END) {
                    return Err("a chunk longer than its size".into());
                }
                self.start += answer::CHUNK_END.len();
            },
        }
    }

    /// Hand the next `n` bytes to `sink`.
    fn take(
        &mut self,
        mut n: u64,
        sink: &mut dyn FnMut(Piece) -> Result<(), String>,
    ) -> Result<(), String> {
        loop {
            let k = (self.have().len() as u64).min(n) as usize;
            sink(Piece::Data(&self.buf[self.start..self.start + k]))?;
            self.start += k;
            n -= k as u64;
            if n == 0 {
                return Ok(());
            }
            self.more()?;
        }
    }
}

/// `GET path` from the node at `url`, the body streamed into the new file
/// `to` (any size; chunked or sized), each read within `idle`. Returns the
/// bytes written. A non-200 answer is an error with its body.
pub fn download(
    url: &str,
    path: &str,
    to: &std::path::Path,
    idle: Duration,
) -> Result<u64, String> {
    let fail = |e: String| format!("{url}{path}: {e}");
    let target = Target::parse(url).map_err(&fail)?;
    let s = send("GET", &target, path, idle).map_err(&fail)?;
    let mut r = Reader::new(s, Wait::Each(idle));
    let h = r.head().map_err(&fail)?;
    if h.status != 200 {
        // The first 4 KiB of what the node said; the rest is not read.
        let mut text = Vec::new();
        let _ = r.body(&h, &mut |piece| {
            if let Piece::Data(d) = piece {
                let room = 4096 - text.len();
                text.extend_from_slice(&d[..d.len().min(room)]);
                if text.len() == 4096 {
                    return Err("enough".into());
                }
            }
            Ok(())
        });
        return Err(fail(format!(
            "answered {}: {}",
            h.status,
            String::from_utf8_lossy(&text).trim()
        )));
    }
    if h.body == Framing::UntilClose {
        return Err(fail("an answer without a length".into()));
    }
    let mut out = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(to)
        .map_err(|e| format!("{}: {e}", to.display()))?;
    let mut written = 0u64;
    r.body(&h, &mut |piece| {
        if let Piece::Data(d) = piece {
            out.write_all(d)
                .map_err(|e| format!("{}: {e}", to.display()))?;
            written += d.len() as u64;
        }
        Ok(())
    })
    .map_err(&fail)?;
    out.sync_all()
        .map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    fn serve_once(answer: &'static [u8]) -> String {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut got = Vec::new();
            let mut b = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut b).unwrap();
                got.extend_from_slice(&b[..n]);
            }
            assert!(got.starts_with(b"GET /v0/cluster HTTP/1.1\r\n"));
            s.write_all(answer).unwrap();
            // Keep the connection open a while: a sized answer must not
            // need the close.
            std::thread::sleep(Duration::from_millis(300));
        });
        format!("http://{addr}")
    }

    #[test]
    fn sized_chunked_and_close_delimited_answers() {
        let t = Duration::from_secs(5);
        let u = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
        assert_eq!(
            get(&u, "/v0/cluster", t).unwrap(),
            Reply {
                status: 200,
                body: b"{}".to_vec(),
                chunks: vec![],
            }
        );
        let u = serve_once(
            b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n",
        );
        let r = get(&u, "/v0/cluster", t).unwrap();
        assert_eq!((r.status, &r.body[..]), (503, &b"abc"[..]));
        assert_eq!(r.chunks().collect::<Vec<_>>(), [&b"ab"[..], b"c"]);
        let u = serve_once(b"HTTP/1.1 200 OK\r\n\r\nuntil close");
        assert_eq!(get(&u, "/v0/cluster", t).unwrap().body, b"until close");
    }

    #[test]
    fn downloads_stream_sized_and_chunked_bodies_into_a_new_file() {
        let d = std::env::temp_dir().join(format!("strata-control-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let t = Duration::from_secs(5);
        let u = serve_once(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
        let f = d.join("chunked");
        let _ = std::fs::remove_file(&f);
        assert_eq!(download(&u, "/v0/cluster", &f, t), Ok(5));
        assert_eq!(std::fs::read(&f).unwrap(), b"abcde");
        // An existing file is not overwritten.
        let u = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nxy");
        assert!(download(&u, "/v0/cluster", &f, t).is_err());
        let u = serve_once(b"HTTP/1.1 404 Not Found\r\nContent-Length: 7\r\n\r\nno such");
        let e = download(&u, "/v0/cluster", &d.join("none"), t).unwrap_err();
        assert!(e.contains("answered 404: no such"), "{e}");
        // Of a long refusal, its first 4 KiB.
        let long: &'static [u8] = Box::leak(
            format!(
                "HTTP/1.1 500 X\r\nContent-Length: 9000\r\n\r\n{}",
                "x".repeat(9000)
            )
            .into_bytes()
            .into_boxed_slice(),
        );
        let u = serve_once(long);
        let e = download(&u, "/v0/cluster", &d.join("long"), t).unwrap_err();
        assert_eq!(e.matches('x').count(), 4096, "{}", e.len());
        let u = serve_once(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef");
        assert!(download(&u, "/v0/cluster", &d.join("short"), t).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn refused_and_silent_servers_are_errors() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let e = get(
            &format!("http://{addr}"),
            "/v0/status",
            Duration::from_secs(2),
        )
        .unwrap_err();
        assert!(e.contains("/v0/status"), "{e}");
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let e = get(
            &format!("http://{addr}"),
            "/v0/status",
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(e.contains("timed out"), "{e}");
        drop(l);
    }
}
