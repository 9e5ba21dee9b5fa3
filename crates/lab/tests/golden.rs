//! The verdict's golden cases (issue 61): every recorded sweep of the
//! corpus judged by this build, written beside the cause it put there
//! (`src/experiment/verdict/causes/<cause>.golden`; the controls, which
//! put nothing there, in `controls.golden`), and compared with what is
//! kept. A change to a rule, a threshold or a cause's words shows here as
//! the verdicts it moved, sweep by sweep, for review:
//! `UPDATE_GOLDEN=1 cargo test -p strata-lab --test golden` writes
//! them again (then `git diff` shows what moved). Pure: no process runs,
//! no timing is read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use strata_lab::experiment::corpus::{self, Judged};

fn causes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/experiment/verdict/causes")
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/sweeps")
}

/// The golden file a sweep belongs to: its first expected cause's first
/// name (`stalls|io` is `stalls`), or `controls`; a two-cause sweep in
/// both of its causes' files.
fn files_of(j: &Judged) -> Vec<String> {
    if j.label.control {
        return vec!["controls".into()];
    }
    let mut out: Vec<String> = j
        .label
        .causes
        .iter()
        .filter_map(|c| c.cause.first().cloned())
        .collect();
    out.dedup();
    out
}

fn cause_words(cause: &str, node: Option<&str>) -> String {
    match node {
        Some(n) => format!("{cause} of {n}"),
        None => cause.to_string(),
    }
}

/// One sweep's case: what was put there, what the verdict named and
/// ranked, what moved, and its words.
fn case(j: &Judged) -> String {
    let name = j.dir.file_name().unwrap().to_string_lossy();
    let v = &j.verdict;
    let expected = j
        .label
        .causes
        .iter()
        .map(|c| cause_words(&c.cause.join("|"), c.node.as_deref()))
        .collect::<Vec<_>>()
        .join(" and ");
    let ranked = v
        .ranking
        .iter()
        .take(3)
        .enumerate()
        .map(|(i, c)| {
            format!(
                "{}. {}{}",
                i + 1,
                cause_words(&c.cause, c.node.as_deref()),
                c.share
                    .map(|s| format!(" {:.0}%", s * 100.0))
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let bp = j
        .report
        .breaking_point
        .map(|b| format!("{b:.0} req/s"))
        .unwrap_or_else(|| "none".into());
    let moved = v
        .host_moved
        .iter()
        .map(|m| {
            m.node
                .as_deref()
                .map(|n| format!("{} of {n}", m.what))
                .unwrap_or_else(|| m.what.clone())
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "## {name}\nput there: {expected} ({})\nnamed: {}; breaking point {bp}{}\nranked: {ranked}\nhost moved: {}\n{}\n",
        j.label.injected,
        cause_words(&v.cause, v.node.as_deref()),
        if j.not_the_limit {
            " (not the limit: its control broke as low)"
        } else {
            ""
        },
        if moved.is_empty() { "no" } else { &moved },
        v.text
    )
}

#[test]
fn every_corpus_sweep_gives_its_golden_verdict() {
    let s = corpus::score(&corpus_dir()).unwrap();
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for j in &s.sweeps {
        for f in files_of(j) {
            files.entry(f).or_default().push_str(&(case(j) + "\n"));
        }
    }
    let write = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut moved = Vec::new();
    for (f, text) in &files {
        let path = causes_dir().join(format!("{f}.golden"));
        if write {
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        if &kept != text {
            let first = kept
                .lines()
                .zip(text.lines())
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("kept: {a}\n  now: {b}"))
                .unwrap_or_else(|| "one holds more cases than the other".into());
            moved.push(format!("{}: {first}", path.display()));
        }
    }
    // No golden file of a cause the corpus no longer puts there.
    for e in std::fs::read_dir(causes_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "golden") {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            if !files.contains_key(&stem) {
                if write {
                    std::fs::remove_file(&p).unwrap();
                } else {
                    moved.push(format!("{}: no corpus sweep puts it there", p.display()));
                }
            }
        }
    }
    assert!(
        moved.is_empty(),
        "verdicts moved from their golden cases (review, then write them again with \
         UPDATE_GOLDEN=1 cargo test -p strata-lab --test golden):\n{}",
        moved.join("\n")
    );
}

/// Each golden file sits beside a cause's file, and names only sweeps
/// that put that cause there.
#[test]
fn each_golden_file_sits_beside_its_cause() {
    for e in std::fs::read_dir(causes_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "golden") {
            continue;
        }
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        if stem == "controls" {
            continue;
        }
        assert!(
            causes_dir().join(format!("{stem}.rs")).exists(),
            "{}: no cause file {stem}.rs beside it",
            p.display()
        );
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("## "), "{}: no case", p.display());
        for line in text.lines().filter(|l| l.starts_with("put there: ")) {
            assert!(line.contains(&stem), "{}: {line}", p.display());
        }
    }
}

/// The ranking's figures are computed once: each of the first three in
/// the verdict's words is the row the report's ranking table shows, for
/// every corpus sweep.
#[test]
fn the_ranking_in_words_is_the_reports_table() {
    let s = corpus::score(&corpus_dir()).unwrap();
    let mut seen = 0;
    for j in &s.sweeps {
        let name = j.dir.file_name().unwrap().to_string_lossy();
        let mut r = j.report.clone();
        r.ranking = j.verdict.ranking.clone();
        let md = strata_lab::report::markdown::render(&r);
        let table = strata_lab::report::markdown::ranking_table(&r);
        if !r.ranking.is_empty() {
            assert!(
                md.contains("### The causes ranked"),
                "{name}: no ranking table"
            );
        }
        for (i, c) in j.verdict.ranking.iter().enumerate() {
            let cell = |x: Option<String>| x.unwrap_or_else(|| "–".into());
            let row = [
                (i + 1).to_string(),
                c.cause.clone(),
                cell(c.node.clone()),
                cell(c.share_words()),
                cell(c.reading_words()),
            ];
            let shown = &table.as_ref().expect("a table").rows[i];
            assert_eq!(&shown[..5], &row[..], "{name}: row {}", i + 1);
            if i < 3 {
                if let Some(share) = c.share_words() {
                    let said = format!(
                        "{}. {} ({share} of the slowest time",
                        i + 1,
                        cause_words(&c.cause, c.node.as_deref())
                    );
                    assert!(
                        j.verdict.text.contains(&said),
                        "{name}: the verdict does not say {said:?}: {}",
                        j.verdict.text
                    );
                    seen += 1;
                }
            }
        }
    }
    assert!(seen >= 30, "only {seen} ranked causes checked");
}
