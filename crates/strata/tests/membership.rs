//! Nodes joining and leaving on real processes, under load, with the
//! lab's consistency checker on: three nodes and a checked load through
//! all of them; a fourth node, started with `--seed`, joins with `strata
//! cluster join`; then the first leaves with `strata cluster leave`
//! while the load goes on (it keeps sending to the node that left, which
//! still coordinates). The checker must find 0 lost writes and 0 stale
//! reads; afterwards every node holds exactly the keys rendezvous hashing
//! gives it under the last layout (two replicas a key, so a key left
//! behind shows), the join placed about rf/N of the replicas (half the
//! keys gain a copy on the new node), and a restarted node keeps its
//! layout from `layout.json` over `--cluster`.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use strata_cluster::member_id;
use strata_cluster::placement::Placement;
use support::{ClusterProcs, NodeProc};

const PRELOAD: usize = 1500;

fn strata() -> Command {
    support::strata_operator()
}

fn key(i: usize) -> String {
    format!("mv{i:06}")
}

fn url(n: &NodeProc) -> String {
    format!("http://{}", n.addr)
}

/// Node `n`'s own `mv…` keys, in key order.
fn own(n: &NodeProc) -> Vec<String> {
    let r = n.request("GET", "/v0/entities?start=mv&end=mw", b"");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // One chunk per entry: the key (8 bytes), `\n`, the value (8).
    r.body
        .chunks(8 + 1 + 8)
        .map(|e| String::from_utf8_lossy(&e[..8]).into_owned())
        .collect()
}

fn view(n: &NodeProc) -> serde_json::Value {
    let r = n.request("GET", "/v0/cluster", b"");
    assert_eq!(r.status, 200);
    serde_json::from_slice(&r.body).unwrap()
}

fn cli(args: &[&str]) -> String {
    let o = strata().args(args).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "strata {args:?} failed: {out}\n{err}");
    eprintln!("strata {args:?}:\n{out}");
    out
}

/// The replicas of `k` under a layout of `members` (URLs), as URLs.
fn replicas(members: &[String], k: &str, rf: usize) -> Vec<String> {
    let p = Placement::new(members.iter().map(|u| member_id(u)).collect());
    p.replicas(k.as_bytes(), rf)
        .into_iter()
        .map(|i| members[i].clone())
        .collect()
}

#[test]
fn a_join_and_a_leave_under_load_lose_nothing_and_move_what_they_should() {
    // Two replicas a key on three, then four, then three nodes: every
    // node holds some keys and not others, so a key left behind shows.
    let mut c = ClusterProcs::start(3, &["--replication", "2"]);
    for i in 0..PRELOAD {
        let r = c.node(i % 3).request(
            "PUT",
            &format!("/v0/entity?id={}&ack=2", key(i)),
            format!("{i:08}").as_bytes(),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
    // The new node: outside any layout until it joins.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("node-new");
    let first = c.urls[0].clone();
    let (new, _) = support::start_joining(&d, &first);
    let r = new.request("GET", "/v0/entity?id=mv000001", b"");
    assert_eq!(r.status, 503, "a node outside the layout refuses clients");
    assert_eq!(view(&new)["layout"]["version"], 0);

    // A checked load through the three first nodes, all along.
    let out = tmp.path().join("load");
    let load = strata()
        .args(["load", &c.urls.join(",")])
        .args(["--rate", "300", "--duration", "30s", "--keys", "2000"])
        .args(["--check", "--json", "--quiet", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));

    // Join: the CLI follows the move to its end.
    let said = cli(&["cluster", "join", &url(&new)]);
    assert!(said.contains("keys changed replicas"), "{said}");
    let v = view(&new);
    let change = &v["change"];
    assert_eq!(change["done"], true, "{v:#}");
    assert_eq!(v["layout"]["version"], 2);
    assert_eq!(v["layout"]["stage"], "stable");
    let streams = change["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 3, "every old member streamed");
    let f = |s: &serde_json::Value, k: &str| s[k].as_u64().unwrap();
    let keys: u64 = streams.iter().map(|s| f(s, "keys")).sum();
    let copies: u64 = streams.iter().map(|s| f(s, "copies")).sum();
    let scanned: u64 = streams.iter().map(|s| f(s, "scanned")).sum();
    // A join: only the new node gains, one copy per key that moves...
    assert_eq!(keys, copies);
    // ...and about rf/N of the keys move (2/4 with 4 nodes and rf 2).
    let share = keys as f64 / (scanned as f64 / 2.0);
    assert!((0.4..0.6).contains(&share), "moved {share} of the keys");
    // Once stable, one layout: the old one is forgotten everywhere.
    for n in [c.node(0), c.node(1), c.node(2), &new] {
        let l = &view(n)["layout"];
        assert_eq!(l["stage"], "stable");
        assert!(l["previous"].is_null(), "{l}");
    }

    // While the load goes on, no member takes a record it does not
    // replicate under the new layout (writes and repairs follow it).
    std::thread::sleep(Duration::from_secs(2));
    let four: Vec<String> = vec![
        c.urls[0].clone(),
        c.urls[1].clone(),
        c.urls[2].clone(),
        url(&new),
    ];
    for (n, u) in [c.node(0), c.node(1), c.node(2), &new]
        .into_iter()
        .zip(&four)
    {
        // The load goes on, so admission may refuse the scan (503 with
        // Retry-After, as the API says a client then waits and asks again):
        // a refusal is the node's answer to load, not the layout's; any
        // other answer counts as it is.
        let mut r = n.request("GET", "/v0/entities?start=%01", b"");
        for _ in 0..50 {
            if r.status != 503 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            r = n.request("GET", "/v0/entities?start=%01", b"");
        }
        assert_eq!(r.status, 200);
        let strays: Vec<String> = r
            .chunks
            .iter()
            .map(|e| String::from_utf8_lossy(e.split(|&b| b == b'\n').next().unwrap()).into_owned())
            .filter(|k| !replicas(&four, k, 2).contains(u))
            .collect();
        assert!(r.chunks.len() > PRELOAD / 4, "{u} holds {}", r.chunks.len());
        assert!(
            strays.is_empty(),
            "{u} holds {} keys it does not replicate, e.g. {:?}",
            strays.len(),
            &strays[..strays.len().min(5)]
        );
    }

    // Leave: the first node goes; the load still sends to it.
    let said = cli(&["cluster", "leave", &c.urls[0]]);
    assert!(said.contains("done in"), "{said}");

    let o = load.wait_with_output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let check = &report["check"];
    eprintln!("{}", check["text"].as_str().unwrap_or_default());
    assert!(
        check["writes_acknowledged"].as_u64().unwrap() > 500,
        "{check}"
    );
    assert_eq!(check["lost"], 0, "{}", check["text"]);
    assert_eq!(check["stale"], 0, "{}", check["text"]);
    assert_eq!(check["impossible"], 0, "{}", check["text"]);
    assert_eq!(check["passed"], true, "{}", check["text"]);
    assert!(o.status.success(), "the load failed");

    // The last layout: nodes 2, 3 and the new one.
    let members: Vec<String> = vec![c.urls[1].clone(), c.urls[2].clone(), url(&new)];
    let v = view(c.node(1));
    let got: Vec<String> = v["layout"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, members);
    assert_eq!(v["layout"]["version"], 3);
    // Every remaining node holds its preloaded keys: all it replicates
    // (written to both replicas, then moved), none it gave away.
    let nodes = [c.node(1), c.node(2), &new];
    for (n, u) in nodes.iter().zip(&members) {
        let want: Vec<String> = (0..PRELOAD)
            .map(key)
            .filter(|k| replicas(&members, k, 2).contains(u))
            .collect();
        assert_eq!(own(n), want, "{u}'s own keys");
    }
    // The node that left still answers, through the others.
    let r = c.node(0).request("GET", "/v0/entity?id=mv000007", b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"00000007");

    // A restarted member keeps layout 3 from layout.json, whatever its
    // --cluster says.
    c.kill(2);
    c.start_node(2);
    let v = view(c.node(2));
    assert_eq!(v["layout"]["version"], 3, "{v:#}");
    let r = c.node(2).request("GET", "/v0/entity?id=mv000009", b"");
    assert_eq!(r.status, 200);

    // No member keeps a record it does not replicate (the keys given
    // away were dropped after each change; nothing came back later): the
    // stores themselves, read with the nodes stopped.
    let dirs = [c.dirs[1].clone(), c.dirs[2].clone(), new.dir.clone()];
    c.kill(1);
    c.kill(2);
    new.stop();
    for (d, u) in dirs.iter().zip(&members) {
        let db = strata_engine::Db::open(d, strata_engine::Options::default()).unwrap();
        let (mut held, mut strays) = (0, Vec::new());
        for r in db.scan(..).unwrap() {
            let k = String::from_utf8_lossy(&r.unwrap().0).into_owned();
            held += 1;
            if !replicas(&members, &k, 2).contains(u) {
                strays.push(k);
            }
        }
        db.close().unwrap();
        assert!(held > PRELOAD, "{u} holds {held} records");
        assert!(
            strays.is_empty(),
            "{u} keeps {} records it does not replicate, e.g. {:?}",
            strays.len(),
            &strays[..strays.len().min(5)]
        );
    }
}

#[test]
fn changes_that_cannot_be_made_are_refused_with_the_reason() {
    let c = ClusterProcs::start(3, &[]);
    // Three members and three replicas a key: none can leave.
    let r = c.node(0).operate("POST", "/v0/cluster/leave", b"");
    assert_eq!(r.status, 409);
    let body = String::from_utf8_lossy(&r.body);
    assert!(body.contains("replication factor of 3"), "{body}");
    // A member cannot join again.
    let r = c.node(1).operate("POST", "/v0/cluster/join", b"");
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
    // A node with data of its own cannot join.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("full");
    let lone = NodeProc::start(&d, &[]);
    assert_eq!(lone.request("PUT", "/v0/entity?id=x", b"1").status, 201);
    lone.stop();
    let first = c.urls[0].clone();
    let (n, _) = support::start_joining(&d, &first);
    let r = n.operate("POST", "/v0/cluster/join", b"");
    assert_eq!(r.status, 409);
    let body = String::from_utf8_lossy(&r.body);
    assert!(body.contains("not empty"), "{body}");
    // --seed and --cluster exclude each other; a joining node needs a
    // port its peers can dial.
    for args in [
        &["--seed", &first, "--cluster", &first][..],
        &["--seed", &first, "--listen", "127.0.0.1:0"][..],
    ] {
        let o = strata().arg("serve").args(args).output().unwrap();
        assert!(!o.status.success(), "{args:?}");
    }
    n.stop();
}

#[test]
fn a_member_that_is_down_is_removed_through_another_and_its_keys_stay_replicated() {
    let mut c = ClusterProcs::start(4, &["--replication", "2"]);
    for i in 0..PRELOAD {
        let r = c.node(0).request(
            "PUT",
            &format!("/v0/entity?id={}&ack=2", key(i)),
            format!("{i:08}").as_bytes(),
        );
        assert_eq!(r.status, 201);
    }
    // A member that is up is not removed through another.
    let o = strata()
        .args(["cluster", "leave", &c.urls[1], "--via", &c.urls[0]])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("is up"), "{e}");

    // Node 4 dies; node 1 removes it.
    c.kill(3);
    assert!(c.wait_states(0, &["up", "up", "up", "down"], 10));
    let said = cli(&["cluster", "leave", &c.urls[3], "--via", &c.urls[0]]);
    assert!(said.contains("done in"), "{said}");
    let members: Vec<String> = c.urls[..3].to_vec();
    for i in 0..3 {
        let v = view(c.node(i));
        assert_eq!(v["layout"]["version"], 2, "{v:#}");
        assert_eq!(v["layout"]["stage"], "stable");
    }
    // Every key is on both of its replicas again (the ones the dead node
    // held were streamed by their other replica), and nowhere else: the
    // stores first (a read would repair what it finds missing)...
    for (i, u) in members.iter().enumerate() {
        let want: Vec<String> = (0..PRELOAD)
            .map(key)
            .filter(|k| replicas(&members, k, 2).contains(u))
            .collect();
        assert_eq!(own(c.node(i)), want, "{u}'s own keys");
    }
    // ...then through the API, from both replicas.
    for i in 0..PRELOAD {
        let r = c.node(i % 3).request(
            "GET",
            &format!("/v0/entity?id={}&ack=2&from=2", key(i)),
            b"",
        );
        assert_eq!(r.status, 200, "{}", key(i));
        assert_eq!(r.body, format!("{i:08}").as_bytes());
    }
    // While it is away, some of its keys are deleted and others written
    // again.
    for i in 0..100 {
        let (method, body) = if i < 50 {
            ("DELETE", &b""[..])
        } else {
            ("PUT", &b"REWRITE2"[..])
        };
        let r = c
            .node(i % 3)
            .request(method, &format!("/v0/entity?id={}&ack=2", key(i)), body);
        assert!(
            r.status == 201 || r.status == 202,
            "{method} {}: {}",
            key(i),
            r.status
        );
    }
    // It comes back with its old data and its old layout: it is fenced. It
    // says so, serves nothing (503, not applied: a client goes elsewhere),
    // and spreads none of its stale records.
    c.start_node(3);
    let r = c.node(3).request("GET", "/v0/status", b"");
    let said = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(r.status, 503, "{said}");
    assert!(said.contains("removed") && said.contains("join"), "{said}");
    for i in 0..100 {
        for (method, body) in [("GET", &b""[..]), ("PUT", &b"stale"[..])] {
            // An overload refusal (the node's connection guard, on a busy
            // machine) is a 503 too, for another reason: ask again.
            let mut r = c.node(3).request(
                method,
                &format!("/v0/entity?id={}&ack=1&from=1", key(i)),
                body,
            );
            for _ in 0..20 {
                if !String::from_utf8_lossy(&r.body).starts_with("overloaded") {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
                r = c.node(3).request(
                    method,
                    &format!("/v0/entity?id={}&ack=1&from=1", key(i)),
                    body,
                );
            }
            let said = String::from_utf8_lossy(&r.body);
            assert_eq!(
                r.status,
                503,
                "{method} {} through the removed node: {said}",
                key(i)
            );
            assert_eq!(r.header("strata-not-applied"), Some("1"), "{said}");
            assert!(said.contains("removed from the cluster"), "{said}");
        }
    }
    let r = c
        .node(3)
        .request("GET", "/v0/entities?start=mv&end=mw&scope=cluster", b"");
    assert_eq!(r.status, 503);
    c.node(3).operate("POST", "/v0/cluster/repair", b"");
    std::thread::sleep(std::time::Duration::from_secs(3));
    for i in 0..100 {
        let want: Option<&[u8]> = if i < 50 { None } else { Some(b"REWRITE2") };
        for (n, u) in members.iter().enumerate() {
            if !replicas(&members, &key(i), 2).contains(u) {
                continue;
            }
            // The replica's own store: nothing came back from node 4.
            let r = c.node(n).request(
                "GET",
                &format!("/v0/entity?id={}&ack=1&from=1", key(i)),
                b"",
            );
            match want {
                None => assert!(
                    r.status == 404 || own(c.node(n)).binary_search(&key(i)).is_err(),
                    "{} came back on {u}",
                    key(i)
                ),
                Some(v) => assert!(
                    r.status != 200 || r.body == v,
                    "{} on {u}: {:?}",
                    key(i),
                    String::from_utf8_lossy(&r.body)
                ),
            }
            let owned = own(c.node(n));
            assert_eq!(
                owned.binary_search(&key(i)).is_ok(),
                want.is_some(),
                "{} in {u}'s store",
                key(i)
            );
        }
    }
    for i in 0..3 {
        assert_eq!(view(c.node(i))["layout"]["version"], 2);
    }
}
