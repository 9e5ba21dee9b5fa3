//! Credentials belong to a client (docs/client.md): after the process set
//! its own (`stream::credentials`, `stream::set_token_for`, what the lab
//! and the `strata` commands do), a `Client` built without `.token()`
//! sends no `Authorization` header to any node, one built with it sends
//! its own only, and the process's go only where asked for by name
//! (`Access::process`). And a node's refusal reaches the caller whole,
//! however long its reason. Against a fake node that records every
//! request head (a test binary of its own: the process's credentials are
//! global to it).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use strata_client::stream::{self, Access, Target};
use strata_client::{Client, Config, Error};

/// The node's longest refusal (the 401 of a node that serves callers
/// without credentials on loopback only, `crates/node/src/access.rs`), as
/// a caller beyond loopback gets it: how to fix it comes last.
const REASON: &str = "Read data needs credentials: `Authorization: Bearer TOKEN` or a client certificate, with one of the roles read, readwrite, operator. This node serves callers without credentials on loopback only (it has no tokens file and --client-auth is not open), and 192.0.2.2 is not a loopback address. To configure them, make a tokens file (`strata token new readwrite app --append tokens`) and start every member with `--auth-tokens tokens`, or give clients certificates (`--tls-ca`); to serve anyone who reaches the port, start it with `--client-auth open` (docs/security.md)";

/// A node on loopback that serves its cluster view (one member: itself)
/// and answers every other request 401 with `REASON`; every request
/// head it read, in order.
fn fake_node() -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (u, h) = (url.clone(), heads.clone());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let (u, h) = (u.clone(), h.clone());
            std::thread::spawn(move || serve(s, &u, &h));
        }
    });
    (url, heads)
}

fn serve(s: std::net::TcpStream, url: &str, heads: &Mutex<Vec<String>>) {
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let path = head.split(' ').nth(1).unwrap_or("").to_string();
        heads.lock().unwrap().push(head);
        let (status, body) = if path == "/v0/cluster" {
            let view = format!(
                r#"{{"node":"{url}","replication":1,"members":[{{"url":"{url}","self":true,"state":"up","last_heard_ms":0}}],"layout":{{"version":1,"stage":"stable","replication":1,"members":["{url}"],"previous":null}}}}"#
            );
            ("200 OK", view)
        } else {
            ("401 Unauthorized", REASON.to_string())
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if w.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The `Authorization` header of each head, if any.
fn authorizations(heads: &Mutex<Vec<String>>) -> Vec<Option<String>> {
    heads
        .lock()
        .unwrap()
        .iter()
        .map(|h| {
            h.lines()
                .find(|l| l.to_ascii_lowercase().starts_with("authorization:"))
                .map(|l| l.split_once(':').unwrap().1.trim().to_string())
        })
        .collect()
}

#[test]
fn a_client_sends_its_own_token_or_none_never_the_process_s() {
    let (url, heads) = fake_node();
    // What the lab and the `strata` commands set, for every node and for
    // this one.
    stream::credentials(Some("st0_the-process-token".into()), None);
    stream::set_token_for(&url, "so0_the-local-cluster-operator-token");
    // The process's connections do get them (so what follows is not
    // vacuous).
    let t = Target::parse(&url).unwrap();
    assert_eq!(
        t.token.as_deref(),
        Some("so0_the-local-cluster-operator-token")
    );
    let rt = rt();

    // Built without .token(): no Authorization header, on the view's
    // request and on a data request.
    let client = rt.block_on(Client::builder().seed(&url).connect()).unwrap();
    assert!(matches!(
        rt.block_on(client.get("k")),
        Err(Error::Unauthorized { .. })
    ));
    let sent = authorizations(&heads);
    assert!(sent.len() >= 2, "{sent:?}");
    assert!(sent.iter().all(Option::is_none), "{sent:?}");

    // Nor with a bare Config.
    heads.lock().unwrap().clear();
    let client = rt
        .block_on(Client::connect(
            std::slice::from_ref(&url),
            Config::default(),
        ))
        .unwrap();
    let _ = rt.block_on(client.get("k"));
    let sent = authorizations(&heads);
    assert!(
        !sent.is_empty() && sent.iter().all(Option::is_none),
        "{sent:?}"
    );

    // With .token(): that one, and only that one.
    heads.lock().unwrap().clear();
    let client = rt
        .block_on(Client::builder().seed(&url).token("st0_its-own").connect())
        .unwrap();
    let _ = rt.block_on(client.get("k"));
    let sent = authorizations(&heads);
    assert!(!sent.is_empty(), "{sent:?}");
    assert!(
        sent.iter()
            .all(|a| a.as_deref() == Some("Bearer st0_its-own")),
        "{sent:?}"
    );

    // The process's, only when asked for by name.
    heads.lock().unwrap().clear();
    let cfg = Config {
        access: Access::process(),
        ..Config::default()
    };
    let client = rt
        .block_on(Client::connect(std::slice::from_ref(&url), cfg))
        .unwrap();
    let _ = rt.block_on(client.get("k"));
    let sent = authorizations(&heads);
    assert!(
        !sent.is_empty()
            && sent
                .iter()
                .all(|a| a.as_deref() == Some("Bearer so0_the-local-cluster-operator-token")),
        "{sent:?}"
    );
}

#[test]
fn a_refusal_s_reason_reaches_the_caller_whole() {
    // Past the 300 characters a reason was once cut at, and the 512
    // bytes a connection once kept of it.
    assert!(REASON.len() > 512, "the test's reason is the long one");
    let (url, _) = fake_node();
    let rt = rt();
    let client = rt.block_on(Client::builder().seed(&url).connect()).unwrap();
    // A request whose body the client reads whole, and a range, whose
    // failed answer a connection keeps for its words.
    let got = rt.block_on(client.get("k"));
    let ranged = rt.block_on(async { client.range("a", Some(&b"z"[..])).next().await });
    for e in [got.map(|_| ()), ranged.expect("an answer").map(|_| ())] {
        match e {
            Err(e @ Error::Unauthorized { .. }) => {
                let Error::Unauthorized { reason, .. } = &e else {
                    unreachable!()
                };
                assert_eq!(reason, REASON, "the node's reason, whole");
                assert!(
                    e.to_string()
                        .ends_with("start it with `--client-auth open` (docs/security.md)"),
                    "{e}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
