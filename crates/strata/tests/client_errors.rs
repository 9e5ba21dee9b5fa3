//! The typed client's errors say what happened, once, in the node's own
//! words (docs/client.md, "Errors"): a node that wants credentials is
//! `Unauthorized` with its whole reason, a token that may not write is
//! `Forbidden`, something that is not a Strata node is `NotStrata`, a key
//! past the limit is `Status` 414, and a node gone is `Unavailable` with
//! each attempt and why. Credentials are per client: two clients of one
//! process show different tokens.

mod support;

use std::io::{Read, Write};

use strata_client::{Client, Error};
use support::new_token;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn refusals_are_typed_with_the_nodes_whole_reason_and_credentials_are_per_client() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tokens");
    let (read, write) = (new_token(&file, "read"), new_token(&file, "readwrite"));
    let n = support::start_with_tokens(&tmp.path().join("d"), &file);
    let rt = rt();
    // No credentials: the node's reason, whole (it is what the node
    // answers a bare request with).
    let bare = n.request("GET", "/v0/cluster", b"");
    assert_eq!(bare.status, 401);
    let words = String::from_utf8_lossy(&bare.body)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match rt.block_on(Client::builder().seed(n.url()).connect()) {
        Err(Error::Unauthorized { url, reason }) => {
            assert_eq!(url, n.url());
            assert_eq!(reason, words, "the reason is the node's, whole");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("connected without credentials"),
    }
    // Two clients of this process, two tokens.
    let reader = rt
        .block_on(Client::builder().seed(n.url()).token(&read).connect())
        .unwrap();
    let writer = rt
        .block_on(Client::builder().seed(n.url()).token(&write).connect())
        .unwrap();
    rt.block_on(writer.put("k", "v")).unwrap();
    assert_eq!(
        rt.block_on(reader.get("k")).unwrap().as_deref(),
        Some(&b"v"[..])
    );
    match rt.block_on(reader.put("k", "w")) {
        Err(e @ Error::Forbidden { .. }) => {
            let text = e.to_string();
            assert!(text.contains("forbidden (403)"), "{text}");
            assert_eq!(text.matches(&n.url()).count(), 1, "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        rt.block_on(writer.get("k")).unwrap().as_deref(),
        Some(&b"v"[..])
    );

    // A key past the node's limit (16 KiB): 414, in the node's words.
    match rt.block_on(writer.put(vec![b'k'; 17 * 1024], "v")) {
        Err(Error::Status { status, reason }) => {
            assert_eq!(status, 414);
            assert!(reason.contains("key too long"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    // The node gone: every attempt and why.
    drop(n);
    match rt.block_on(writer.get("k")) {
        Err(Error::Unavailable { tried, .. }) => {
            assert!(!tried.is_empty());
            assert!(
                tried.iter().all(|t| t.starts_with("http://127.0.0.1:")),
                "{tried:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn something_that_is_not_a_strata_node_is_named_so() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let mut s = s.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhello, world",
            );
        }
    });
    match rt().block_on(Client::builder().seed(format!("http://{addr}")).connect()) {
        Err(e @ Error::NotStrata(_)) => {
            let text = e.to_string();
            assert!(text.contains("is not a Strata node"), "{text}");
            assert_eq!(text.matches(&addr.to_string()).count(), 1, "{text}");
        }
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("took a plain HTTP server for a node"),
    }
}
