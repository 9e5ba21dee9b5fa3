//! Raw HTTP/1.1 for tests of a real node (in this process or another):
//! requests written by hand, answers read back whole (content-length or
//! chunked, each chunk kept). Shared by the node's own tests and the
//! binary's (`crates/strata/tests/support`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A connection to `addr` as the tests use it: no Nagle delay, reads time
/// out after 20 s.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    // Head and body go out in two writes: without this, Nagle's
    // algorithm holds the body for the peer's delayed ACK (40 ms).
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// One request on a fresh connection to `addr`, with more headers.
pub fn request_to(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut s = connect(addr);
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = s
        .write_all(head.as_bytes())
        .and_then(|()| s.write_all(body));
    read_response(&mut s)
}

pub fn send(s: &mut TcpStream, method: &str, target: &str, body: &[u8]) {
    try_send(s, method, target, body).unwrap()
}

/// Send a request; the server may answer and close before the body is
/// through (413), so a write error is returned, not raised.
pub fn try_send(s: &mut TcpStream, method: &str, target: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A chunked body's chunks, one by one (empty otherwise).
    pub chunks: Vec<Vec<u8>>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Read one response (content-length or chunked) from a keep-alive stream.
pub fn read_response(s: &mut TcpStream) -> Response {
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = vec![];
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let mut resp = Response {
        status,
        headers,
        body: vec![],
        chunks: vec![],
    };
    if resp.header("transfer-encoding") == Some("chunked") {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut chunk = vec![0u8; n + 2];
            r.read_exact(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            resp.body.extend_from_slice(&chunk[..n]);
            resp.chunks.push(chunk[..n].to_vec());
        }
    } else if let Some(n) = resp.header("content-length") {
        let mut b = vec![0u8; n.parse().unwrap()];
        r.read_exact(&mut b).unwrap();
        resp.body = b;
    }
    resp
}
