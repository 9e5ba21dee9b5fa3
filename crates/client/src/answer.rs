//! An HTTP/1.1 answer decoded from bytes, without I/O: its head (the
//! status, how its body is framed, whether the server closes the
//! connection after it, the headers a caller wants to see) and a chunked
//! body's size lines and trailers. The one decoder under both faces of the
//! client: the async connection (`conn`, load and sessions) and the
//! blocking control exchange (`control`, operator requests, scrapes and
//! downloads) feed it the bytes they read. Owns the framing rules; must
//! not read or write a socket.

/// How many headers an answer may carry.
pub const MAX_HEADERS: usize = 64;

/// How an answer's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` bytes (0 for a status that has no body: 1xx, 204,
    /// 304).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Neither: the body runs until the server closes the connection.
    UntilClose,
}

/// An answer's status line and headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub body: Framing,
    /// `Connection: close`: the server closes after this answer.
    pub close: bool,
    /// Bytes of the head (the body starts there).
    pub size: usize,
}

/// The head at the start of `buf`, once it has all arrived (`None`
/// before); `each` sees every header's name and value. An error says why
/// the bytes are not an HTTP answer.
pub fn head(buf: &[u8], mut each: impl FnMut(&str, &[u8])) -> Result<Option<Head>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let size = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("not an HTTP answer: {e}")),
    };
    let status = resp.code.unwrap_or(0);
    let no_body = status == 204 || status == 304 || (100..200).contains(&status);
    let (mut len, mut chunked, mut close) = (None, false, false);
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value).ok().map(str::trim);
            len = Some(
                v.and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| format!("a bad Content-Length {:?}", v.unwrap_or("")))?,
            );
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            && h.value.eq_ignore_ascii_case(b"chunked")
        {
            chunked = true;
        } else if h.name.eq_ignore_ascii_case("connection")
            && h.value.eq_ignore_ascii_case(b"close")
        {
            close = true;
        }
        each(h.name, h.value);
    }
    let body = match (no_body, chunked, len) {
        (true, _, _) => Framing::Length(0),
        (false, true, _) => Framing::Chunked,
        (false, false, Some(n)) => Framing::Length(n),
        (false, false, None) => Framing::UntilClose,
    };
    Ok(Some(Head {
        status,
        body,
        close: close || body == Framing::UntilClose,
        size,
    }))
}

/// The next chunk's size line at the start of `buf`: the bytes it takes
/// and the chunk's size (0: the last chunk), or `None` until it has all
/// arrived.
pub fn chunk_size(buf: &[u8]) -> Result<Option<(usize, u64)>, String> {
    match httparse::parse_chunk_size(buf) {
        Ok(httparse::Status::Complete((used, size))) => Ok(Some((used, size))),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(_) => {
            let line = buf.split(|&b| b == b'\n').next().unwrap_or(buf);
            let line = String::from_utf8_lossy(&line[..line.len().min(40)]);
            Err(format!("bad chunk size {:?}", line.trim()))
        }
    }
}

/// The trailers after the last chunk at the start of `buf`, up to and
/// including the empty line that ends them: the bytes they take, or `None`
/// until the empty line has arrived.
pub fn trailers(buf: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let i = buf[at..].windows(2).position(|w| w == b"\r\n")?;
        at += i + 2;
        if i == 0 {
            return Some(at);
        }
    }
}

/// The two bytes that end a chunk's data.
pub const CHUNK_END: &[u8] = b"\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn of(b: &[u8]) -> Head {
        head(b, |_, _| {}).unwrap().unwrap()
    }

    #[test]
    fn a_head_says_how_its_body_ends() {
        let h = of(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nrest");
        assert_eq!(
            (h.status, h.body, h.close, h.size),
            (200, Framing::Length(12), false, 39)
        );
        let h = of(b"HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        assert_eq!((h.body, h.close), (Framing::Chunked, true));
        let h = of(b"HTTP/1.1 200 OK\r\n\r\nuntil close");
        assert_eq!((h.body, h.close), (Framing::UntilClose, true));
        let h = of(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(h.body, Framing::Length(0));
        assert_eq!(head(b"HTTP/1.1 200 OK\r\nContent-Le", |_, _| {}), Ok(None));
        assert!(head(b"SSH-2.0-x\r\n\r\n", |_, _| {})
            .unwrap_err()
            .contains("not an HTTP"));
        let e = head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", |_, _| {}).unwrap_err();
        assert!(e.contains("Content-Length"), "{e}");
    }

    #[test]
    fn every_header_is_shown_to_the_caller() {
        let mut seen = Vec::new();
        head(
            b"HTTP/1.1 200 OK\r\nA: 1\r\nContent-Length: 0\r\n\r\n",
            |n, v| seen.push((n.to_string(), v.to_vec())),
        )
        .unwrap();
        assert_eq!(seen[0], ("A".to_string(), b"1".to_vec()));
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn chunk_sizes_and_trailers() {
        assert_eq!(chunk_size(b"1a\r\ndata"), Ok(Some((4, 26))));
        assert_eq!(chunk_size(b"1a;ext=1\r\n"), Ok(Some((10, 26))));
        assert_eq!(chunk_size(b"1a"), Ok(None));
        assert!(chunk_size(b"zz\r\n").unwrap_err().contains("zz"));
        assert_eq!(trailers(b"\r\nnext"), Some(2));
        assert_eq!(trailers(b"X: y\r\n\r\n"), Some(8));
        assert_eq!(trailers(b"X: y\r\n"), None);
    }
}
