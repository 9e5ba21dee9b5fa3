//! The proxy's tests: relayed bytes, partitions as silences, heals, the peers' tags.

use super::relay::header;
use super::*;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener as StdListener, TcpStream as StdStream};
use std::time::Instant;

const QUIET: Duration = Duration::from_millis(300);

/// A node stand-in: a listener whose connections the test accepts.
struct Upstream {
    l: StdListener,
}

impl Upstream {
    fn new() -> Upstream {
        let l = StdListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        Upstream { l }
    }

    fn addr(&self) -> SocketAddr {
        self.l.local_addr().unwrap()
    }

    /// The next relayed connection, if one comes within `within`.
    fn accept(&self, within: Duration) -> Option<StdStream> {
        let end = Instant::now() + within;
        loop {
            match self.l.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    s.set_read_timeout(Some(QUIET)).unwrap();
                    return Some(s);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() > end {
                        return None;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

fn head(from: Option<&str>) -> String {
    match from {
        Some(f) => format!(
            "GET /v0/internal HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: strata-internal/0\r\nx-strata-from: {f}\r\n\r\n"
        ),
        None => "GET /v0/status HTTP/1.1\r\nHost: x\r\n\r\n".into(),
    }
}

fn dial(route: &str, from: Option<&str>) -> StdStream {
    let mut s = StdStream::connect(route.strip_prefix("http://").unwrap()).unwrap();
    s.set_read_timeout(Some(QUIET)).unwrap();
    s.write_all(head(from).as_bytes()).unwrap();
    s
}

/// A connection through a route that may refuse it: the proxy may reset
/// it before the head is written (then the write fails, and the
/// connection is closed all the same).
fn dial_refused(route: &str, from: Option<&str>) -> StdStream {
    let mut s = StdStream::connect(route.strip_prefix("http://").unwrap()).unwrap();
    s.set_read_timeout(Some(QUIET)).unwrap();
    let _ = s.write_all(head(from).as_bytes());
    s
}

/// A connection through `route` from `from`, and the node's end of it.
fn pair(route: &str, up: &Upstream, from: Option<&str>) -> (StdStream, StdStream) {
    let c = dial(route, from);
    let mut n = up.accept(Duration::from_secs(5)).expect("relayed");
    let h = head(from);
    let mut got = vec![0u8; h.len()];
    n.read_exact(&mut got).unwrap();
    assert_eq!(got, h.as_bytes());
    (c, n)
}

/// Whether `msg` written on `a` arrives on `b`.
fn passes(a: &mut StdStream, b: &mut StdStream, msg: &[u8]) -> bool {
    a.write_all(msg).unwrap();
    let mut got = vec![0u8; msg.len()];
    match b.read_exact(&mut got) {
        Ok(()) => {
            assert_eq!(got, msg);
            true
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
        Err(e) => panic!("connection broke instead of going silent: {e}"),
    }
}

fn both_ways(c: &mut StdStream, n: &mut StdStream) -> (bool, bool) {
    (passes(c, n, b"ping"), passes(n, c, b"pong"))
}

/// Whether `s` is closed (end of stream or reset) within two seconds.
fn closed(s: &mut StdStream) -> bool {
    let end = Instant::now() + Duration::from_secs(2);
    let mut b = [0u8; 64];
    while Instant::now() < end {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn relays_both_ways_and_counts() {
    let p = FaultProxy::start().unwrap();
    let up = Upstream::new();
    let a = p
        .bind_route("127.0.0.1:0".parse().unwrap(), up.addr())
        .unwrap();
    let (mut c, mut n) = pair(&a, &up, None);
    assert_eq!(both_ways(&mut c, &mut n), (true, true));
    // The counter moves just after the bytes do.
    let want = head(None).len() as u64 + 8;
    let end = Instant::now() + Duration::from_secs(2);
    while p.stats(&a).unwrap().bytes_forwarded < want && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    let s = p.stats(&a).unwrap();
    assert_eq!(s.accepted, 1);
    assert_eq!(s.open, 1);
    assert_eq!(s.bytes_forwarded, want);
    assert_eq!(s.bytes_dropped, 0);
    // A close on one side reaches the other.
    drop(n);
    assert!(closed(&mut c));
}

#[test]
fn a_partition_silences_the_node_s_connections_both_ways_and_a_heal_restores() {
    let p = FaultProxy::start().unwrap();
    let (up_a, up_b) = (Upstream::new(), Upstream::new());
    let any = "127.0.0.1:0".parse().unwrap();
    let a = p.bind_route(any, up_a.addr()).unwrap();
    let b = p.bind_route(any, up_b.addr()).unwrap();
    let c_url = "http://127.0.0.1:1";

    let (mut a_to_b, mut a_to_b_n) = pair(&b, &up_b, Some(&a));
    let (mut b_to_a, mut b_to_a_n) = pair(&a, &up_a, Some(&b));
    let (mut c_to_b, mut c_to_b_n) = pair(&b, &up_b, Some(c_url));
    let (mut client_b, mut client_b_n) = pair(&b, &up_b, None);
    for (x, y) in [
        (&mut a_to_b, &mut a_to_b_n),
        (&mut b_to_a, &mut b_to_a_n),
        (&mut c_to_b, &mut c_to_b_n),
        (&mut client_b, &mut client_b_n),
    ] {
        assert_eq!(both_ways(x, y), (true, true));
    }

    p.partition(&format!("{a}/"), Fault::BlackHole);
    assert_eq!(p.fault(&a), Some(Fault::BlackHole));
    // From A and to A: silent both ways, and still open.
    assert_eq!(both_ways(&mut a_to_b, &mut a_to_b_n), (false, false));
    assert_eq!(both_ways(&mut b_to_a, &mut b_to_a_n), (false, false));
    // Neither: untouched.
    assert_eq!(both_ways(&mut c_to_b, &mut c_to_b_n), (true, true));
    assert_eq!(both_ways(&mut client_b, &mut client_b_n), (true, true));
    // A new connection from A is accepted, and goes nowhere.
    let mut late = dial(&b, Some(&a));
    assert!(up_b.accept(QUIET).is_none());
    let mut b1 = [0u8; 1];
    assert!(late.write_all(b"more").is_ok());
    assert!(matches!(
        late.read(&mut b1).map_err(|e| e.kind()),
        Err(ErrorKind::WouldBlock | ErrorKind::TimedOut)
    ));
    // So is a new one to A, tagged or not.
    let mut late_to_a = dial(&a, None);
    assert!(up_a.accept(QUIET).is_none());

    let (sa, sb) = (p.stats(&a).unwrap(), p.stats(&b).unwrap());
    assert_eq!((sa.open, sa.black_holed), (2, 2));
    assert_eq!((sb.open, sb.black_holed), (4, 2));
    assert!(sa.bytes_dropped >= 8, "{sa:?}");
    assert!(sb.bytes_dropped >= 8 + 4, "{sb:?}");

    p.heal(&a);
    assert_eq!(p.fault(&a), None);
    // The black-holed connections are closed, so the nodes reconnect.
    for s in [
        &mut a_to_b,
        &mut a_to_b_n,
        &mut b_to_a,
        &mut b_to_a_n,
        &mut late,
        &mut late_to_a,
    ] {
        assert!(closed(s));
    }
    assert_eq!(both_ways(&mut c_to_b, &mut c_to_b_n), (true, true));
    assert_eq!(both_ways(&mut client_b, &mut client_b_n), (true, true));
    let (mut again, mut again_n) = pair(&b, &up_b, Some(&a));
    assert_eq!(both_ways(&mut again, &mut again_n), (true, true));
    let sb = p.stats(&b).unwrap();
    assert_eq!(sb.black_holed, 0);
    assert_eq!(sb.closed_by_proxy, 2);
}

#[test]
fn a_reset_partition_closes_at_once_and_refuses_until_healed() {
    let p = FaultProxy::start().unwrap();
    let (up_a, up_b) = (Upstream::new(), Upstream::new());
    let any = "127.0.0.1:0".parse().unwrap();
    let a = p.bind_route(any, up_a.addr()).unwrap();
    let b = p.bind_route(any, up_b.addr()).unwrap();
    let (mut a_to_b, mut a_to_b_n) = pair(&b, &up_b, Some(&a));
    let (mut client_b, mut client_b_n) = pair(&b, &up_b, None);

    p.partition(&a, Fault::Reset);
    assert!(closed(&mut a_to_b));
    assert!(closed(&mut a_to_b_n));
    assert_eq!(both_ways(&mut client_b, &mut client_b_n), (true, true));
    let mut refused = dial_refused(&a, None);
    assert!(closed(&mut refused));
    assert!(up_a.accept(QUIET).is_none());

    p.heal_all();
    let (mut x, mut y) = pair(&a, &up_a, Some(&b));
    assert_eq!(both_ways(&mut x, &mut y), (true, true));
}

#[test]
fn finds_the_dialler_in_the_head() {
    let h = b"GET /v0/internal HTTP/1.1\r\nUpgrade: strata-internal/0\r\nX-Strata-From:  http://127.0.0.1:7001 \r\n\r\nbinary";
    assert_eq!(
        header(h, "x-strata-from").as_deref(),
        Some("http://127.0.0.1:7001")
    );
    assert_eq!(
        header(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "x-strata-from"),
        None
    );
    assert_eq!(
        header(b"GET / HTTP/1.1\r\nX-Strata-From: u\r\n", "x-strata-from"),
        None
    );
}
