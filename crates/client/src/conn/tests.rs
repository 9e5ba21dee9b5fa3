//! The connection against canned servers: sized, chunked and split answers, a closed idle connection reopened once, bodies kept, a named PUT resent once and an unnamed one not.

use super::*;
use tokio::net::TcpListener;

/// A server that answers each request on a connection with the next
/// canned answer, then closes.
async fn canned(answers: Vec<&'static [u8]>) -> Target {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        for a in answers {
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            s.write_all(a).await.unwrap();
        }
    });
    Target::parse(&format!("http://{addr}")).unwrap()
}

#[tokio::test]
async fn sized_chunked_and_split_answers() {
    let t = canned(vec![
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n",
        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
    ])
    .await;
    let mut c = Conn::new(t);
    let a = c.request("GET", "/x", b"").await.unwrap();
    assert_eq!(
        a,
        Answer {
            status: 200,
            body_bytes: 5,
            not_applied: false
        }
    );
    let a = c.request("GET", "/y", b"").await.unwrap();
    assert_eq!(
        a,
        Answer {
            status: 200,
            body_bytes: 7,
            not_applied: false
        }
    );
    let a = c.request("PUT", "/z", b"v").await.unwrap();
    assert_eq!(
        a,
        Answer {
            status: 404,
            body_bytes: 0,
            not_applied: false
        }
    );
}

#[tokio::test]
async fn a_closed_idle_connection_is_reopened_once() {
    // The server answers once per connection and closes it; the
    // client's next request finds it closed and goes out again on a
    // new connection.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..2 {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await.unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .await
                .unwrap();
        }
    });
    let mut c = Conn::new(Target::parse(&format!("http://{addr}")).unwrap());
    assert_eq!(c.request("GET", "/", b"").await.unwrap().status, 200);
    // The server dropped the first connection after answering.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(c.request("GET", "/", b"").await.unwrap().status, 200);
}

#[tokio::test]
async fn request_into_keeps_sized_and_chunked_bodies() {
    let t = canned(vec![
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n",
        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
    ])
    .await;
    let mut c = Conn::new(t);
    let mut body = b"old".to_vec();
    let a = c.request_into("GET", "/x", b"", &mut body).await.unwrap();
    assert_eq!((a.status, &body[..]), (200, &b"hello"[..]));
    let a = c.request_into("GET", "/y", b"", &mut body).await.unwrap();
    assert_eq!(
        (a.status, a.body_bytes, &body[..]),
        (200, 7, &b"abcdefg"[..])
    );
    let a = c.request_into("GET", "/z", b"", &mut body).await.unwrap();
    assert_eq!((a.status, &body[..]), (404, &b""[..]));
    assert!(!c.resent());
}

/// A server that answers one request on its first connection and
/// closes it; on its second, answers with the bytes of the request
/// that arrives as the body.
async fn closes_then_echoes() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf).await.unwrap();
        s.write_all(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
            .await
            .unwrap();
        drop(s);
        let (mut s, _) = l.accept().await.unwrap();
        let mut got = Vec::new();
        let body_start = |g: &[u8]| g.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
        while body_start(&got).is_none_or(|b| got.len() < b + 5) {
            let n = s.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        // Anything more (a second copy of the body) would arrive now.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        if let Ok(Ok(n)) =
            tokio::time::timeout(std::time::Duration::from_millis(1), s.read(&mut buf)).await
        {
            got.extend_from_slice(&buf[..n]);
        }
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", got.len());
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(&got).await.unwrap();
    });
    addr
}

#[tokio::test]
async fn a_resent_named_put_carries_its_name_and_body_once() {
    let addr = closes_then_echoes().await;
    let mut c = Conn::new(Target::parse(&format!("http://{addr}")).unwrap());
    assert_eq!(c.request("PUT", "/a", b"value").await.unwrap().status, 201);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let mut body = Vec::new();
    let a = c
        .request_named(("PUT", "/b"), Some(0xabc), b"value", Some(&mut body))
        .await
        .unwrap();
    assert_eq!(a.status, 200);
    assert!(c.resent());
    let text = String::from_utf8_lossy(&body);
    assert!(body.starts_with(b"PUT /b HTTP/1.1\r\n"));
    assert!(
        text.contains("\r\nstrata-write-id: 00000000000000000000000000000abc\r\n"),
        "{text:?}"
    );
    assert!(body.ends_with(b"\r\n\r\nvalue"), "{text:?}");
}

#[tokio::test]
async fn an_unnamed_put_the_server_may_have_read_is_not_sent_again() {
    let addr = closes_then_echoes().await;
    let mut c = Conn::new(Target::parse(&format!("http://{addr}")).unwrap());
    assert_eq!(c.request("PUT", "/a", b"value").await.unwrap().status, 201);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let e = c.request("PUT", "/b", b"value").await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted, "{e}");
    assert!(c.sent(), "written whole: in doubt");
    assert!(!c.resent());
    // (A GET meeting such a connection is sent again:
    // `a_closed_idle_connection_is_reopened_once`.)
}

#[test]
fn itoa_writes_digits() {
    assert_eq!(itoa(0, &mut [0; 20]), b"0");
    assert_eq!(itoa(1234567, &mut [0; 20]), b"1234567");
    assert_eq!(itoa(u64::MAX, &mut [0; 20]), b"18446744073709551615");
}
