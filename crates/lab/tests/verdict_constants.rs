//! Every constant the verdict judges by is in docs/lab.md's table of
//! thresholds, named (issue 61: eight were missing): the constants of
//! `experiment/verdict/*.rs` and `experiment/verdict/causes/*.rs`, `load/slowest.rs` and `experiment/corpus.rs`
//! (numbers only; a file name is not a threshold).

use std::path::Path;

#[test]
fn every_threshold_of_the_verdict_is_in_the_docs_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("../../docs/lab.md")).unwrap();
    let table = docs
        .split("#### The verdict's thresholds")
        .nth(1)
        .expect("docs/lab.md: The verdict's thresholds");
    let rs = |dir: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect()
    };
    let mut files = rs("src/experiment/verdict");
    files.extend(rs("src/experiment/verdict/causes"));
    files.push(root.join("src/load/slowest.rs"));
    files.push(root.join("src/experiment/corpus.rs"));
    let mut missing = Vec::new();
    let mut seen = 0;
    for f in &files {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let l = line.trim_start().trim_start_matches("pub ");
            let Some(rest) = l.strip_prefix("const ") else {
                continue;
            };
            let Some((name, ty)) = rest.split_once(':') else {
                continue;
            };
            if !matches!(
                ty.split('=').next().unwrap().trim(),
                "f64" | "usize" | "u64"
            ) {
                continue;
            }
            seen += 1;
            if !table.contains(&format!("{name}`")) {
                missing.push(format!("{name} ({})", f.display()));
            }
        }
    }
    assert!(
        seen >= 30,
        "only {seen} constants found: the scan is broken"
    );
    assert!(
        missing.is_empty(),
        "not in docs/lab.md's table: {missing:?}"
    );
}
