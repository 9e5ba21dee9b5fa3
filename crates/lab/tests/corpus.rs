//! The verdict judged on the corpus (issue 61): every recorded sweep in
//! `corpus/sweeps` (real processes, a cause put there on purpose, each
//! beside a control; `scripts/record-corpus.sh` records them) judged again
//! by this build's rules, and the score asserted against the floor in
//! `corpus/floor.json`: a change to a rule may not lower it. Pure: no
//! process runs, no timing is read, the same corpus gives the same score.
//! The corpus stays within `BUDGET` bytes.

use std::path::{Path, PathBuf};

use strata_lab::experiment::corpus::{self, Floor, Score};

/// The corpus's size budget on disk.
const BUDGET: u64 = 8 << 20;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn size(p: &Path) -> u64 {
    if p.is_dir() {
        std::fs::read_dir(p)
            .unwrap()
            .map(|e| size(&e.unwrap().path()))
            .sum()
    } else {
        p.metadata().map(|m| m.len()).unwrap_or(0)
    }
}

#[test]
fn the_corpus_is_whole_and_within_its_budget() {
    let sweeps = root().join("sweeps");
    let total = size(&root());
    assert!(
        total <= BUDGET,
        "the corpus holds {total} bytes, over its budget of {BUDGET}"
    );
    let dirs = corpus::sweep_dirs(&sweeps).unwrap();
    assert!(!dirs.is_empty(), "no sweep under {}", sweeps.display());
    let s = corpus::score(&sweeps).unwrap();
    for j in &s.sweeps {
        let name = j.dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            j.dir.join(strata_lab::report::COMPRESSED).exists(),
            "{name}: its evidence"
        );
        assert!(!j.label.causes.is_empty(), "{name}: what it must name");
        if j.label.control {
            assert!(j.label.beside.is_none(), "{name}: a control beside another");
            assert!(j.label.mechanism.starts_with("control-"), "{name}");
        } else {
            // Every injected sweep has its control, swept beside it.
            let c = j
                .label
                .beside
                .as_deref()
                .unwrap_or_else(|| panic!("{name}: no control"));
            let control = s
                .sweeps
                .iter()
                .find(|o| o.dir.file_name().unwrap().to_string_lossy() == c)
                .unwrap_or_else(|| panic!("{name}: its control {c} is not in the corpus"));
            assert!(control.label.control, "{name}: {c} is not a control");
            assert_eq!(
                control.label.mechanism,
                format!("control-{}", j.label.mechanism),
                "{name}: its control is another scenario's"
            );
        }
        // Recorded whole (schema 2 on), by this build or an older one.
        assert!(
            (2..=strata_lab::report::model::SCHEMA).contains(&j.report.schema),
            "{name}: schema {}",
            j.report.schema
        );
    }
}

/// The score the verdict must not fall below (`corpus/floor.json`, set
/// with `strata report corpus corpus/sweeps --write-floor
/// corpus/floor.json` on the corpus as it is).
fn floor() -> Floor {
    serde_json::from_str(
        &std::fs::read_to_string(root().join("floor.json")).expect("corpus/floor.json"),
    )
    .unwrap()
}

fn judged() -> Score {
    corpus::score(&root().join("sweeps")).unwrap()
}

#[test]
fn the_verdict_scores_no_lower_than_its_floor() {
    let s = judged();
    println!("{}", corpus::table(&s));
    let floor = floor();
    let (n, first, top3, unknown) = s.counts();
    let (two, both) = s.two_causes();
    assert_eq!(
        (n, two),
        (floor.sweeps, floor.two_causes),
        "the corpus has {n} injected sweeps ({two} with two causes); its floor was set on {} ({}): \
         judge it and set the floor: strata report corpus corpus/sweeps --write-floor corpus/floor.json",
        floor.sweeps,
        floor.two_causes
    );
    assert!(
        first >= floor.first,
        "the cause first in {first} of {n}, below the floor's {}",
        floor.first
    );
    assert!(
        top3 >= floor.top3,
        "in the top three in {top3} of {n}, below the floor's {}",
        floor.top3
    );
    assert!(
        unknown <= floor.unknown,
        "\"cannot tell\" in {unknown} of {n}, above the floor's {}",
        floor.unknown
    );
    assert!(
        both >= floor.both_in_top3,
        "both causes in the top three in {both} of {two}, below the floor's {}",
        floor.both_in_top3
    );
}

/// Judged twice, every sweep gives the same verdict: nothing in the
/// judgement reads the clock, the machine or the order of the files.
#[test]
fn judging_the_corpus_is_deterministic() {
    let a = judged();
    let b = judged();
    assert_eq!(a.sweeps.len(), b.sweeps.len());
    for (x, y) in a.sweeps.iter().zip(&b.sweeps) {
        assert_eq!(x.verdict, y.verdict, "{}", x.dir.display());
    }
}
