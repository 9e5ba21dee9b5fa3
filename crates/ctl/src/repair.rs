//! `strata cluster repair URL`: anti-entropy on demand. Asks the node at
//! `URL` (or, with `--all`, every member it lists, one after the other) to
//! compare each of its ranges with every other replica now
//! (`POST /v0/cluster/repair`), and prints what each exchange found and
//! moved as a table. Owns the asking and the table; must not compare or
//! move anything itself (the nodes do).

use std::time::Duration;
use strata_api::routes;

use strata_api::human::bytes as size;
use strata_client::control::same_url as same;

use crate::status::{aligned, fetch, short};
use strata_client::control;

#[derive(clap::Args, Clone, Debug)]
pub struct RepairArgs {
    /// A member's URL, e.g. http://127.0.0.1:7001.
    pub url: String,
    /// Repair from every member in turn, not only URL.
    #[arg(long)]
    pub all: bool,
    /// How long one node has for its exchanges (1h; a bare number is
    /// seconds).
    #[arg(long, default_value = "1h", value_parser = strata_api::duration::parse)]
    pub timeout: Duration,
}

/// One exchange as a node reports it, and a repair's answer (typed once,
/// in `strata-api`).
pub use strata_api::operate::{Exchange, Repaired};

/// Ask one node to repair now.
pub fn repair_one(url: &str, timeout: Duration) -> Result<Repaired, String> {
    control::json("POST", url, routes::CLUSTER_REPAIR, 200, timeout)
}

/// Run `strata cluster repair`: the table; an error if any exchange
/// failed.
pub fn repair(a: &RepairArgs) -> Result<(), String> {
    let mut urls = vec![a.url.clone()];
    if a.all {
        let v = fetch(&a.url)?;
        for m in &v.head.members {
            if !same(&m.url, &a.url) && !same(&m.url, &v.head.node) {
                urls.push(m.url.clone());
            }
        }
    }
    let mut done = Vec::new();
    for u in &urls {
        done.push(repair_one(u, a.timeout)?);
    }
    print!("{}", format_table(&done));
    let failed: usize = done
        .iter()
        .map(|d| d.exchanges.iter().filter(|x| x.error.is_some()).count())
        .sum();
    if failed > 0 {
        return Err(format!("{failed} exchange(s) failed (see above)"));
    }
    Ok(())
}

/// A row per exchange: who with whom, the range, what differed, what
/// moved, the bytes and the time.
pub fn format_table(done: &[Repaired]) -> String {
    let mut rows = vec![[
        "node",
        "peer",
        "range",
        "keys here/there",
        "leaves",
        "pulled",
        "pushed",
        "already",
        "sent",
        "received",
        "time",
        "result",
    ]
    .map(String::from)
    .to_vec()];
    for d in done {
        for x in &d.exchanges {
            rows.push(vec![
                short(&d.node),
                short(&x.peer),
                x.set.chars().take(8).collect(),
                format!("{}/{}", x.local_keys, x.peer_keys),
                if x.roots_equal {
                    "same".into()
                } else {
                    x.leaves_differing.to_string()
                },
                x.pulled.to_string(),
                x.pushed.to_string(),
                x.already_there.to_string(),
                size(x.bytes_sent),
                size(x.bytes_received),
                format!("{:.0} ms", x.elapsed_ms),
                x.error.clone().unwrap_or_else(|| "ok".into()),
            ]);
        }
    }
    aligned(&rows).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_of_two_exchanges() {
        let d: Repaired = serde_json::from_str(
            r#"{"node":"http://127.0.0.1:7001","failed":1,"exchanges":[
              {"set":"0123456789abcdef","peer":"http://127.0.0.1:7002","local_keys":1000,"peer_keys":1000,"roots_equal":true,"leaves_differing":0,"keys_compared":0,"pulled":0,"pushed":0,"already_there":0,"bytes_sent":51,"bytes_received":68,"elapsed_ms":1.4,"error":null},
              {"set":"0123456789abcdef","peer":"http://127.0.0.1:7003","local_keys":1000,"peer_keys":0,"roots_equal":false,"leaves_differing":900,"keys_compared":1000,"pulled":0,"pushed":1000,"already_there":0,"bytes_sent":180000,"bytes_received":9000,"elapsed_ms":812.0,"error":null}]}"#,
        )
        .unwrap();
        let want = "\
node            peer            range     keys here/there  leaves  pulled  pushed  already  sent       received  time    result
127.0.0.1:7001  127.0.0.1:7002  01234567  1000/1000        same    0       0       0        51 B       68 B      1 ms    ok
127.0.0.1:7001  127.0.0.1:7003  01234567  1000/0           900     0       1000    0        175.8 KiB  8.8 KiB   812 ms  ok
";
        assert_eq!(format_table(&[d]), want);
    }
}
