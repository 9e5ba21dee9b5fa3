//! Test fixture: a stand-in for `strata serve --cluster`, so that the
//! launcher, the proxy and `cluster status` can be tested together in this
//! crate, where the real binary is not built. The lab's own test binary
//! runs as the node (through `sh`, which moves the serve arguments into an
//! environment variable and runs the one ignored test below). It takes
//! `--listen`, `--advertise` and `--cluster`, prints the ready line,
//! answers `/v0/status` and `/v0/cluster`, and keeps an internal
//! connection (the real upgrade head, `X-Strata-From`) to every peer with
//! a heartbeat byte every 50 ms; a peer unheard for 500 ms is `down`. Owns
//! nothing the product uses; must stay a fixture.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strata_api::routes;

const ENV: &str = "STRATA_LAB_FAKE_NODE_ARGS";

/// A command the launcher can use as `strata`: it runs this test binary
/// as a fake node with the arguments the launcher appends.
pub(crate) fn command() -> Command {
    let exe = std::env::current_exe().expect("the test binary");
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!(
            "export {ENV}=\"$*\"; exec \"$0\" --exact nemesis::fake_node::fake_node --ignored --nocapture --test-threads=1"
        ))
        .arg(exe);
    c
}

#[test]
#[ignore = "a fixture: the launcher's tests run it as a child process"]
fn fake_node() {
    let Ok(args) = std::env::var(ENV) else {
        return;
    };
    serve(&args.split_whitespace().collect::<Vec<_>>());
}

type Heard = Arc<Mutex<HashMap<String, Instant>>>;

fn serve(args: &[&str]) {
    let flag = |f: &str| {
        let k = args.iter().position(|a| *a == f).expect(f);
        args[k + 1].to_string()
    };
    let me = flag("--advertise");
    let members: Vec<String> = flag("--cluster").split(',').map(String::from).collect();
    let l = TcpListener::bind(flag("--listen")).expect("bind");
    println!(
        "strata node listening on http://{}",
        l.local_addr().unwrap()
    );
    let heard: Heard = Arc::default();
    for m in members.iter().filter(|m| **m != me) {
        let (m, me) = (m.clone(), me.clone());
        std::thread::spawn(move || dial(&m, &me));
    }
    for s in l.incoming().flatten() {
        let (heard, members, me) = (heard.clone(), members.clone(), me.clone());
        std::thread::spawn(move || answer(s, &heard, &members, &me));
    }
}

/// Keep a heartbeating internal connection to `peer`, reconnecting.
fn dial(peer: &str, me: &str) {
    loop {
        if let Ok(mut s) = TcpStream::connect(peer.trim_start_matches("http://")) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
            let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
            let head = format!(
                "GET /v0/internal HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: strata-internal/0\r\nX-Strata-From: {me}\r\nX-Strata-Auth: fake\r\n\r\n"
            );
            if s.write_all(head.as_bytes()).is_ok()
                && read_head(&mut s).is_some_and(|h| h.starts_with("HTTP/1.1 101"))
            {
                while s.write_all(b"h").is_ok() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn read_head(s: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).ok()? == 0 {
            return None;
        }
        head.push(b[0]);
    }
    String::from_utf8(head).ok()
}

fn answer(mut s: TcpStream, heard: &Heard, members: &[String], me: &str) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let Some(head) = read_head(&mut s) else {
        return;
    };
    let path = head.split(' ').nth(1).unwrap_or("");
    let from = head.split("\r\n").find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("x-strata-from")
            .then(|| v.trim().to_string())
    });
    let reply = |s: &mut TcpStream, status: &str, body: &str| {
        let _ = write!(
            s,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    };
    match (path, from) {
        (routes::INTERNAL, Some(from)) => {
            let _ = s.write_all(
                b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: strata-internal/0\r\n\r\n",
            );
            let _ = s.set_read_timeout(None);
            let mut b = [0u8; 64];
            while matches!(s.read(&mut b), Ok(n) if n > 0) {
                heard.lock().unwrap().insert(from.clone(), Instant::now());
            }
        }
        (routes::STATUS, _) => reply(&mut s, "200 OK", ""),
        (routes::CLUSTER, _) => {
            let heard = heard.lock().unwrap();
            let view: Vec<String> = members
                .iter()
                .map(|m| {
                    let age = heard.get(m).map(|t| t.elapsed().as_millis() as u64);
                    let state = if m == me || age.is_some_and(|a| a < 500) {
                        "up"
                    } else {
                        "down"
                    };
                    let last = match age {
                        Some(a) if m != me => a.to_string(),
                        _ => "null".into(),
                    };
                    format!(
                        r#"{{"url":"{m}","id":"fake","self":{},"state":"{state}","last_heard_ms":{last},"hints":{{"count":0,"bytes":0,"dropped":0}}}}"#,
                        m == me
                    )
                })
                .collect();
            let rf = members.len().min(3);
            let listed: Vec<String> = members.iter().map(|m| format!("{m:?}")).collect();
            let body = format!(
                r#"{{"node":"{me}","replication":{rf},"members":[{}],"layout":{{"version":1,"stage":"stable","replication":{rf},"members":[{}],"previous":null}}}}"#,
                view.join(","),
                listed.join(",")
            );
            reply(&mut s, "200 OK", &body)
        }
        _ => reply(&mut s, "400 Bad Request", ""),
    }
}
