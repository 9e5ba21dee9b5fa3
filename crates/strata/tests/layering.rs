//! The workspace's shape, enforced (issue 30). Data flows one way, `lab →
//! HTTP → node → cluster → engine`, with `sim` on its own and `api` the
//! contracts every side may read; this test reads every crate's manifest
//! and fails when a crate depends (normal, dev or build) on a Strata crate
//! its layer may not see, or when a crate appears that has no rule here.
//! It also reads every library's `lib.rs`: its opening doc must name each
//! of its modules and say what the crate must not do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What each crate may depend on among the workspace's own. `strata` is
/// the binary that puts everything together: anything.
fn allowed() -> BTreeMap<&'static str, &'static [&'static str]> {
    BTreeMap::from([
        ("strata-api", &[][..]),
        ("strata-tls", &[][..]),
        ("strata-engine", &[][..]),
        ("strata-cluster", &["strata-engine", "strata-api"][..]),
        (
            "strata-node",
            &[
                "strata-cluster",
                "strata-engine",
                "strata-tls",
                "strata-api",
            ][..],
        ),
        ("strata-client", &["strata-api", "strata-tls"][..]),
        // Operator commands: HTTP and the contracts, nothing else.
        ("strata-ctl", &["strata-api", "strata-client"][..]),
        (
            "strata-lab",
            &[
                "strata-api",
                "strata-client",
                "strata-ctl",
                "strata-tls",
                "strata-sim",
            ][..],
        ),
        // The simulator stands on its own but for the contracts it reads
        // (metric names and their text format).
        ("strata-sim", &["strata-api"][..]),
        ("strata-enginebench", &["strata-engine"][..]),
        ("strata-httpceiling", &[][..]),
        ("strata-respload", &[][..]),
    ])
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (crate name, manifest) of every crate under `crates/`.
fn manifests() -> Vec<(String, toml::Table, PathBuf)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let dir = e.unwrap().path();
        let path = dir.join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let t: toml::Table = text
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = t["package"]["name"].as_str().unwrap().to_string();
        out.push((name, t, dir));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The workspace crates `m` names in any of its dependency tables.
fn strata_deps(m: &toml::Table) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for table in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(deps) = m.get(table).and_then(|d| d.as_table()) {
            for name in deps.keys().filter(|k| k.starts_with("strata")) {
                out.push((name.clone(), table));
            }
        }
    }
    out
}

/// Forbidden edges of the manifests `ms` under the rules `rules`.
fn violations(
    ms: &[(String, toml::Table, PathBuf)],
    rules: &BTreeMap<&str, &[&str]>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, m, _) in ms {
        if name == "strata" {
            continue;
        }
        let Some(may) = rules.get(name.as_str()) else {
            out.push(format!(
                "{name}: no layering rule (add one to tests/layering.rs)"
            ));
            continue;
        };
        for (dep, table) in strata_deps(m) {
            if !may.contains(&dep.as_str()) {
                out.push(format!("{name} depends on {dep} ([{table}])"));
            }
        }
    }
    out
}

#[test]
fn no_crate_depends_on_a_layer_it_may_not_see() {
    let ms = manifests();
    assert!(ms.len() >= 10, "found only {} crates", ms.len());
    let bad = violations(&ms, &allowed());
    assert!(
        bad.is_empty(),
        "forbidden dependencies:\n{}",
        bad.join("\n")
    );
}

/// The check itself catches an edge pointing up: the lab on the node, the
/// engine on the cluster.
#[test]
fn an_edge_pointing_up_is_caught() {
    let mut ms = manifests();
    for (name, m, _) in &mut ms {
        let up = match name.as_str() {
            "strata-lab" => "strata-node",
            "strata-engine" => "strata-cluster",
            _ => continue,
        };
        m.entry("dev-dependencies")
            .or_insert_with(|| toml::Value::Table(Default::default()))
            .as_table_mut()
            .unwrap()
            .insert(up.into(), toml::Value::String("0.1".into()));
    }
    let bad = violations(&ms, &allowed());
    assert_eq!(
        bad,
        [
            "strata-engine depends on strata-cluster ([dev-dependencies])",
            "strata-lab depends on strata-node ([dev-dependencies])"
        ]
    );
}

/// The modules `lib.rs` declares (`mod x;`, `pub mod x;`, `pub(crate) mod
/// x;`), and its opening doc (the `//!` lines).
fn declared(lib: &str) -> (Vec<String>, String) {
    let mut mods = Vec::new();
    let mut doc = String::new();
    for line in lib.lines() {
        let l = line.trim();
        if let Some(d) = l.strip_prefix("//!") {
            doc.push_str(d);
            doc.push('\n');
        }
        let rest = l
            .strip_prefix("pub mod ")
            .or_else(|| l.strip_prefix("pub(crate) mod "))
            .or_else(|| l.strip_prefix("mod "));
        if let Some(r) = rest.and_then(|r| r.strip_suffix(';')) {
            mods.push(r.trim().to_string());
        }
    }
    (mods, doc)
}

#[test]
fn every_library_names_its_modules_and_what_it_must_not_do() {
    let mut bad = Vec::new();
    for (name, _, dir) in manifests() {
        let Ok(lib) = std::fs::read_to_string(dir.join("src/lib.rs")) else {
            continue;
        };
        let (mods, doc) = declared(&lib);
        let lower = doc.to_lowercase();
        if !lower.contains("must not") {
            bad.push(format!(
                "{name}: lib.rs does not say what the crate must not do"
            ));
        }
        // A `tests` module is the crate's own unit tests, not a part.
        for m in mods.into_iter().filter(|m| m != "tests") {
            if !doc.contains(&format!("`{m}`")) {
                bad.push(format!("{name}: lib.rs does not name module `{m}`"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
