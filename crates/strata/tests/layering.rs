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
        // Histories and their checkers: nothing of Strata's.
        ("strata-check", &[][..]),
        ("strata-tls", &[][..]),
        // The contracts: the names its threads go by.
        ("strata-engine", &["strata-api"][..]),
        // The cluster's simulation tests judge their histories with the
        // one checker.
        (
            "strata-cluster",
            &["strata-engine", "strata-api", "strata-check"][..],
        ),
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
                "strata-check",
                "strata-client",
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

/// The lab's rooms in the order its `lib.rs` table lists them: each may
/// import only itself and those listed before it.
fn lab_rooms(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| l.strip_prefix("//! | `"))
        .filter_map(|r| r.split_once('`').map(|(m, _)| m.to_string()))
        .collect()
}

/// `crate::room` paths in `text` (a file of room `own`) that name a room
/// listed after `own`, as "own -> other".
fn imports_up(own: &str, text: &str, rooms: &[String]) -> Vec<String> {
    let rank = |r: &str| rooms.iter().position(|x| x == r);
    let mut bad = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (i, _) in line.match_indices("crate::") {
            let rest = &line[i + "crate::".len()..];
            let room: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if let (Some(a), Some(b)) = (rank(own), rank(&room)) {
                if b > a {
                    bad.push(format!("{own} -> {room}"));
                }
            }
        }
    }
    bad
}

/// The module a file under `src/` belongs to: its first path component
/// (`check/run/mod.rs` is `check`, `units.rs` is `units`).
fn module_of(rel: &Path) -> String {
    rel.components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_string()
}

/// A file past 800 lines, said as "path: N lines".
fn too_long(rel: &Path, text: &str) -> Option<String> {
    let lines = text.lines().count();
    (lines > 800).then(|| format!("{}: {lines} lines", rel.display()))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Issue 30's end state for the lab: at most six rooms, none importing a
/// room after it, no file over 800 lines.
#[test]
fn the_lab_rooms_import_only_those_before_them() {
    let src = workspace().join("crates/lab/src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let rooms = lab_rooms(&lib);
    let (mods, _) = declared(&lib);
    let mut sorted = rooms.clone();
    sorted.sort();
    let mut declared_mods = mods.clone();
    declared_mods.sort();
    assert_eq!(sorted, declared_mods, "lib.rs's table lists every room");
    assert!(rooms.len() <= 6, "{} rooms: {rooms:?}", rooms.len());

    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let own = module_of(rel);
        let text = std::fs::read_to_string(f).unwrap();
        for b in imports_up(&own, &text, &rooms) {
            bad.push(format!("{}: {b}", rel.display()));
        }
        bad.extend(too_long(rel, &text));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));

    // And the rule catches what it is for.
    let rooms: Vec<String> = ["units", "check", "load"].map(String::from).to_vec();
    assert_eq!(
        imports_up(
            "check",
            "use crate::load::driver;\n// crate::load\nuse crate::units::x;",
            &rooms
        ),
        ["check -> load"]
    );
}

/// The modules `text` (a file of module `own`, its unit tests left out)
/// imports through `crate::`: `Ok(module)` for each module path,
/// `Err(name)` for a name that is not a module (a re-export of `lib.rs`,
/// or a glob), so reached through the crate's top.
fn crate_paths(own: &str, text: &str, modules: &[String]) -> Vec<Result<String, String>> {
    let body = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = Vec::new();
    for line in body.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (i, _) in line.match_indices("crate::") {
            // `$crate::` in a macro is the crate's own path too.
            let rest = &line[i + "crate::".len()..];
            let mut names: Vec<String> = Vec::new();
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                for item in inner.split(',') {
                    let first: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '*')
                        .collect();
                    if !first.is_empty() {
                        names.push(first);
                    }
                }
            } else {
                names.push(
                    rest.chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '*')
                        .collect(),
                );
            }
            for n in names.into_iter().filter(|n| n != own && !n.is_empty()) {
                out.push(if modules.contains(&n) { Ok(n) } else { Err(n) });
            }
        }
    }
    out
}

/// A loop among `edges` (module -> the modules it imports), if any.
fn a_circle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        edges: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut c = path[at..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.iter().any(|d| d == m) {
            return None;
        }
        path.push(m.to_string());
        for n in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(m.to_string());
        None
    }
    let mut done = Vec::new();
    edges
        .keys()
        .find_map(|m| visit(m, edges, &mut Vec::new(), &mut done))
}

/// Issue 48's end state for the cluster: its modules import each other
/// by their own paths, never through what `lib.rs` re-exports (lib.rs
/// is the top floor), and never in a circle; no file over 800 lines.
#[test]
fn the_cluster_modules_import_down_only() {
    let src = workspace().join("crates/cluster/src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let (modules, _) = declared(&lib);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    let mut edges: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        if rel == Path::new("lib.rs") || rel.ends_with("tests.rs") {
            continue;
        }
        let own = module_of(rel);
        let text = std::fs::read_to_string(f).unwrap();
        for p in crate_paths(&own, &text, &modules) {
            match p {
                Ok(m) => edges.entry(own.clone()).or_default().push(m),
                Err(n) => bad.push(format!(
                    "{}: crate::{n} is reached through lib.rs",
                    rel.display()
                )),
            }
        }
        bad.extend(too_long(rel, &text));
    }
    if let Some(c) = a_circle(&edges) {
        bad.push(format!("a circle: {}", c.join(" -> ")));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));

    // And the rules catch what they are for.
    let mods: Vec<String> = ["store", "wire", "error"].map(String::from).to_vec();
    assert_eq!(
        crate_paths(
            "wire",
            "use crate::{error::ClusterError, store};\nuse crate::Result;\nuse crate::*;\n#[cfg(test)]\nuse crate::Cluster;",
            &mods
        ),
        [
            Ok("error".to_string()),
            Ok("store".to_string()),
            Err("Result".to_string()),
            Err("*".to_string())
        ]
    );
    let circle = BTreeMap::from([
        ("error".to_string(), vec!["wire".to_string()]),
        ("store".to_string(), vec!["error".to_string()]),
        ("wire".to_string(), vec!["store".to_string()]),
    ]);
    assert!(a_circle(&circle).is_some());
    let line = BTreeMap::from([
        ("wire".to_string(), vec!["store".to_string()]),
        ("store".to_string(), vec!["error".to_string()]),
    ]);
    assert_eq!(a_circle(&line), None);
}
