//! What each fuzz target feeds its input to: the decoders of Strata's own
//! formats and parsers. Shared by the fuzz targets (`fuzz/fuzz_targets/`)
//! and by the regression test that replays every kept input in the normal
//! suite (`crates/strata/tests/fuzz_regressions.rs`, which includes this
//! file), so that a crash once found stays fixed.

use std::path::Path;

/// Every target, named as its folder of kept inputs under `fuzz/regressions/`.
pub const TARGETS: [&str; 8] = [
    "wal",
    "table",
    "block",
    "manifest",
    "wire",
    "workload_toml",
    "scenario_toml",
    "http_request",
];

/// Run `target` on `data`; `dir` is a scratch directory for the targets that
/// decode a file. Must return for any input.
pub fn run(target: &str, dir: &Path, data: &[u8]) {
    let text = std::str::from_utf8(data).ok();
    match target {
        // Storage formats: a WAL segment replayed, a table opened and read,
        // one block, a manifest recovered.
        "wal" => strata_engine::fuzzing::wal(dir, data),
        "table" => strata_engine::fuzzing::table(dir, data),
        "block" => strata_engine::fuzzing::block(data),
        "manifest" => strata_engine::fuzzing::manifest(dir, data),
        // The cluster's internal protocol: the first byte is the frame kind,
        // the rest its body; and a stored record.
        "wire" => {
            if let Some((&kind, body)) = data.split_first() {
                let body = strata_engine::fuzzing::bytes(body);
                let _ = strata_cluster::wire::decode_request(kind, body.clone());
                let _ = strata_cluster::wire::decode_response(kind, body.clone());
                let _ = strata_cluster::record::Record::decode(&body);
            }
        }
        "workload_toml" => {
            if let Some(t) = text {
                let _ = strata_lab::load::workload::Workload::from_toml_str(t);
            }
        }
        "scenario_toml" => {
            if let Some(t) = text {
                let _ = strata_sim::scenario::Config::from_toml(t);
            }
        }
        // The node's own part of the request path: the first bytes it
        // peeks at under overload, and the query it parses.
        "http_request" => {
            let _ = strata_node::api::priority_request(data);
            if let Some(t) = text {
                let target = t.split(' ').nth(1).unwrap_or(t);
                let query = target.split_once('?').map(|(_, q)| q);
                if let Ok(q) = strata_node::query::Query::parse(query) {
                    let _ = q.required("id");
                    let _ = q.number("ack");
                    let _ = q.number("from");
                    let _ = q.get("start");
                }
            }
        }
        other => panic!("unknown fuzz target {other}"),
    }
}
