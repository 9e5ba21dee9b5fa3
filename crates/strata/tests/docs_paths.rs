//! The docs name files that exist: every `crates/...` path in README.md
//! and docs/*.md (`crates/x/src/{a,b}.rs` read as both files) is a file
//! or a directory of the repository. A file split into a directory (say
//! `store.rs` into `store/`) leaves its old name in the docs until they
//! are told; this test says where.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The docs this test reads: README.md and every docs/*.md.
fn docs() -> Vec<PathBuf> {
    let mut out = vec![repo().join("README.md")];
    let mut md: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    md.sort();
    out.extend(md);
    out
}

/// Every `crates/...` path in `line`: letters, digits, `_-./`, and a
/// `{a,b}` group; a sentence's `.` or `,` after it is not part of it.
fn paths_in(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crates/") {
        // Only where a path can start (not inside a longer word).
        let before = rest[..at].chars().next_back();
        let tail = &rest[at..];
        let mut end = 0;
        let mut in_braces = false;
        for (i, c) in tail.char_indices() {
            let ok = c.is_ascii_alphanumeric()
                || "_-./".contains(c)
                || (c == '{' && !in_braces)
                || (c == ',' && in_braces)
                || (c == '}' && in_braces);
            if !ok {
                break;
            }
            in_braces = match c {
                '{' => true,
                '}' => false,
                _ => in_braces,
            };
            end = i + c.len_utf8();
        }
        let mut p = &tail[..end];
        rest = &tail[end.max(1)..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/') {
            continue;
        }
        if in_braces {
            // An unclosed group: the path up to it.
            p = &p[..p.find('{').unwrap()];
        }
        let p = p.trim_end_matches(['.', ',']);
        out.extend(expand(p));
    }
    out
}

/// `a/{b,c}.rs` as `a/b.rs` and `a/c.rs`.
fn expand(p: &str) -> Vec<String> {
    match (p.find('{'), p.find('}')) {
        (Some(open), Some(close)) if open < close => p[open + 1..close]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &p[..open], &p[close + 1..])))
            .collect(),
        _ => vec![p.to_string()],
    }
}

#[test]
fn paths_are_read_as_written() {
    assert_eq!(
        paths_in("see `crates/a/src/{b,c}.rs` and crates/d/e.rs, or crates/f/."),
        [
            "crates/a/src/b.rs",
            "crates/a/src/c.rs",
            "crates/d/e.rs",
            "crates/f/"
        ]
    );
    assert_eq!(
        paths_in("(`crates/x/src/y/`: `mod.rs`) xcrates/no.rs"),
        ["crates/x/src/y/"]
    );
}

#[test]
fn every_crates_path_in_the_docs_exists() {
    let root = repo();
    let mut missing = Vec::new();
    let mut seen = 0;
    for doc in docs() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        for (i, line) in text.lines().enumerate() {
            for p in paths_in(line) {
                seen += 1;
                if !root.join(&p).exists() {
                    missing.push(format!("{name}:{}: {p}", i + 1));
                }
            }
        }
    }
    assert!(seen > 100, "only {seen} paths found: is the scan broken?");
    assert!(
        missing.is_empty(),
        "the docs name {} paths that do not exist (a file split into a directory? name the file that holds it now):\n{}",
        missing.len(),
        missing.join("\n")
    );
}
