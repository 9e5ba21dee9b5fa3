//! A tiny blocking HTTP/1.1 GET or empty POST for control requests to a
//! node (`/v0/status`, `/v0/cluster`, `/v0/cluster/repair`): one request on a fresh connection with
//! `Connection: close`, bounded by a deadline, the whole answer read into
//! memory. Owns that exchange; must not be used for load (the generator
//! has its own, `strata_lab::load::driver`) or for large bodies.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use strata_client::conn::Target;
use strata_client::stream::BlockingStream;

/// Largest answer read (head and body).
const MAX_ANSWER: usize = 4 << 20;

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

/// As [`request`], to a parsed target (a sampler's, every second); an
/// error starts with the path.
pub fn request_to(
    method: &str,
    target: &Target,
    path: &str,
    timeout: Duration,
) -> Result<Reply, String> {
    let deadline = Instant::now() + timeout;
    let fail = |e: String| format!("{path}: {e}");
    let mut s = send(method, target, path, timeout).map_err(&fail)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Ok(t) = left(deadline) else {
            return Err(fail("timed out".into()));
        };
        s.tcp()
            .set_read_timeout(Some(t))
            .map_err(|e| fail(e.to_string()))?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > MAX_ANSWER {
                    return Err(fail("answer larger than 4 MiB".into()));
                }
                // A complete sized answer ends the exchange even if the
                // server keeps the connection open.
                if let Some(r) = parse(&buf, false).map_err(&fail)? {
                    return Ok(r);
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return Err(fail("timed out".into()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(fail(e.to_string())),
        }
    }
    parse(&buf, true)
        .map_err(&fail)?
        .ok_or_else(|| fail("connection closed before a whole answer".into()))
}

/// Connect to `target` and write `METHOD path` (an empty body
/// for POST, `Connection: close`), within `timeout`.
fn send(
    method: &str,
    target: &Target,
    path: &str,
    timeout: Duration,
) -> Result<BlockingStream, String> {
    let mut s = strata_client::stream::connect_blocking(target, timeout)?;
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

fn left(deadline: Instant) -> Result<Duration, String> {
    let t = deadline.saturating_duration_since(Instant::now());
    if t.is_zero() {
        Err("timed out".into())
    } else {
        Ok(t)
    }
}

/// The answer in `buf` if it is complete; `eof` says the server closed the
/// connection (which ends a body without a length).
fn parse(buf: &[u8], eof: bool) -> Result<Option<Reply>, String> {
    let Some(Head {
        status,
        len,
        chunked,
        size: n,
    }) = head(buf)?
    else {
        return Ok(None);
    };
    let rest = &buf[n..];
    if (100..200).contains(&status) || status == 204 || status == 304 {
        return Ok(Some(Reply {
            status,
            body: vec![],
            chunks: vec![],
        }));
    }
    if chunked {
        return dechunk(rest).map(|b| {
            b.map(|(body, chunks)| Reply {
                status,
                body,
                chunks,
            })
        });
    }
    match len {
        Some(l) if rest.len() >= l => Ok(Some(Reply {
            status,
            body: rest[..l].to_vec(),
            chunks: vec![],
        })),
        Some(_) if eof => Err("connection closed inside the body".into()),
        Some(_) => Ok(None),
        None if eof => Ok(Some(Reply {
            status,
            body: rest.to_vec(),
            chunks: vec![],
        })),
        None => Ok(None),
    }
}

/// An answer's status line and headers.
struct Head {
    status: u16,
    /// Content-Length.
    len: Option<usize>,
    chunked: bool,
    /// Bytes of the head.
    size: usize,
}

/// The head at the start of `buf`, if it has all arrived.
fn head(buf: &[u8]) -> Result<Option<Head>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let size = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("not an HTTP answer: {e}")),
    };
    let mut len = None;
    let mut chunked = false;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            len = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            && h.value.eq_ignore_ascii_case(b"chunked")
        {
            chunked = true;
        }
    }
    Ok(Some(Head {
        status: resp.code.unwrap_or(0),
        len,
        chunked,
        size,
    }))
}

/// A dechunked body and the end of each chunk in it.
type Dechunked = (Vec<u8>, Vec<usize>);

/// A whole chunked body and where each chunk ends in it, or `None` if it
/// has not all arrived.
fn dechunk(b: &[u8]) -> Result<Option<Dechunked>, String> {
    let (mut out, mut ends) = (Vec::new(), Vec::new());
    let mut r = std::io::Cursor::new(b);
    let read = read_chunked(&mut r, |chunk, n| {
        let got = chunk
            .take(n)
            .read_to_end(&mut out)
            .map_err(ChunkError::Io)?;
        if (got as u64) < n {
            return Err(ChunkError::Short);
        }
        ends.push(out.len());
        Ok(())
    });
    match read {
        Ok(()) => Ok(Some((out, ends))),
        Err(ChunkError::Short) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// Why a chunked body could not be read.
#[derive(Debug)]
enum ChunkError {
    /// The bytes ran out before the last chunk.
    Short,
    Bad(String),
    Io(std::io::Error),
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkError::Short => f.write_str("connection closed inside the body"),
            ChunkError::Bad(m) => f.write_str(m),
            ChunkError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Read a chunked body from `r` up to its last chunk, handing each chunk
/// to `each` as a reader and its length (it must read exactly that many
/// bytes). The one chunked decoder of the lab: whole answers in memory
/// (`dechunk`) and downloads streamed to a file (`download`).
fn read_chunked<R: std::io::BufRead>(
    r: &mut R,
    mut each: impl FnMut(&mut dyn Read, u64) -> Result<(), ChunkError>,
) -> Result<(), ChunkError> {
    use std::io::BufRead;
    let mut line = Vec::new();
    loop {
        line.clear();
        r.by_ref()
            .take(1024)
            .read_until(b'\n', &mut line)
            .map_err(ChunkError::Io)?;
        if line.last() != Some(&b'\n') {
            return Err(if line.len() >= 1024 {
                ChunkError::Bad("chunk size line longer than 1 KiB".into())
            } else {
                ChunkError::Short
            });
        }
        let text = String::from_utf8_lossy(&line);
        let size = u64::from_str_radix(text.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|_| ChunkError::Bad(format!("bad chunk size {:?}", text.trim())))?;
        if size == 0 {
            return Ok(());
        }
        each(r, size)?;
        let mut crlf = [0u8; 2];
        r.read_exact(&mut crlf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => ChunkError::Short,
            _ => ChunkError::Io(e),
        })?;
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
    use std::io::BufRead;
    let fail = |e: String| format!("{url}{path}: {e}");
    let target = Target::parse(url).map_err(&fail)?;
    let s = send("GET", &target, path, idle).map_err(&fail)?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, s);
    // The head: whatever arrives until it parses.
    let mut buf = Vec::new();
    let h = loop {
        let got = r.fill_buf().map_err(|e| fail(e.to_string()))?;
        if got.is_empty() {
            return Err(fail("connection closed before a whole answer".into()));
        }
        let n = got.len();
        buf.extend_from_slice(got);
        r.consume(n);
        if let Some(h) = head(&buf).map_err(&fail)? {
            break h;
        }
        if buf.len() > 64 << 10 {
            return Err(fail("answer head larger than 64 KiB".into()));
        }
    };
    // What came after the head, then the rest of the stream.
    let mut body = std::io::Cursor::new(buf.split_off(h.size)).chain(r);
    if h.status != 200 {
        let mut text = Vec::new();
        let _ = body.take(4096).read_to_end(&mut text);
        return Err(fail(format!(
            "answered {}: {}",
            h.status,
            String::from_utf8_lossy(&text).trim()
        )));
    }
    let mut out = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(to)
        .map_err(|e| format!("{}: {e}", to.display()))?;
    let mut written = 0u64;
    let mut copy = |body: &mut dyn Read, n: u64| -> Result<(), String> {
        let got = std::io::copy(&mut body.take(n), &mut out).map_err(|e| fail(e.to_string()))?;
        if got != n {
            return Err(fail("connection closed inside the body".into()));
        }
        written += n;
        Ok(())
    };
    if h.chunked {
        let mut body = std::io::BufReader::new(body);
        read_chunked(&mut body, |chunk, n| {
            copy(chunk, n).map_err(ChunkError::Bad)
        })
        .map_err(|e| fail(e.to_string()))?;
    } else {
        let n = h
            .len
            .ok_or_else(|| fail("an answer without a length".into()))?;
        copy(&mut body, n as u64)?;
    }
    out.sync_all()
        .map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
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
