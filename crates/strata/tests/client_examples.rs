//! The client's examples run as written: each program under
//! `crates/client/examples/` is compiled into this test (as a module) and
//! run against real nodes (a cluster of three, and a node that wants a
//! token), and
//! `docs/client.md` shows each of them exactly as the file holds it, so
//! the documentation's examples are the ones that run.

mod support;

use support::ClusterProcs;

#[path = "../../client/examples/blocking.rs"]
mod blocking;
#[path = "../../client/examples/round_trip.rs"]
mod round_trip;
#[path = "../../client/examples/secured.rs"]
mod secured;

const EXAMPLES: [&str; 3] = ["round_trip.rs", "secured.rs", "blocking.rs"];

fn example(name: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../client/examples")
            .join(name),
    )
    .unwrap()
}

#[test]
fn every_example_in_the_docs_is_a_file_that_runs() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/client.md"),
    )
    .unwrap();
    let blocks: Vec<&str> = doc
        .split("```rust\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    for name in EXAMPLES {
        let text = example(name);
        assert!(
            blocks.iter().any(|b| *b == text),
            "docs/client.md does not show crates/client/examples/{name} as it is"
        );
    }
    assert_eq!(
        blocks.len(),
        EXAMPLES.len(),
        "every rust block of docs/client.md is one of the examples"
    );
}

#[test]
fn the_examples_run_against_real_nodes() {
    let tmp = tempfile::tempdir().unwrap();
    // A cluster of three, as `strata cluster up` starts (the example asks
    // for ack=3 of from=3 once).
    let cluster = ClusterProcs::start(3, &[]);
    let plain = cluster.node(0);
    // SAFETY: this test is the only one in its binary that reads the
    // environment, and it sets it before any thread of its own starts.
    unsafe { std::env::set_var("STRATA_URL", plain.url()) };
    round_trip::main().expect("round_trip");
    blocking::main().expect("blocking");

    // A node that wants a token: the example shows the refusal, then
    // uses its own token.
    let file = tmp.path().join("tokens");
    let token = support::new_token(&file, "readwrite");
    let secured_node = support::start_with_tokens(&tmp.path().join("secured"), &file);
    unsafe {
        std::env::set_var("STRATA_URL", secured_node.url());
        std::env::set_var("STRATA_TOKEN", &token);
    }
    secured::main().expect("secured");
    // The data the examples wrote and deleted is gone, the rest is there.
    let r = plain.request("GET", "/v0/entity?id=user%3A43", b"");
    assert_eq!((r.status, &r.body[..]), (200, &b"world"[..]));
    assert_eq!(
        plain.request("GET", "/v0/entity?id=user%3A42", b"").status,
        404
    );
    assert_eq!(
        secured_node
            .request("GET", "/v0/entity?id=secret%3A1", b"")
            .status,
        401
    );
}
