//! Every input kept under `fuzz/regressions/TARGET/` (the seeds, and each
//! crash `scripts/fuzz.sh` found, once fixed) and every input of the kept
//! corpora (`fuzz/corpus/TARGET/`, what the fuzzers' hours built) runs
//! through its fuzz target's code in the normal suite: a decoder that
//! panics, or hangs, on one of them fails here.

#[path = "../../../fuzz/src/dispatch.rs"]
mod dispatch;

use std::path::Path;

/// Run every input under `fuzz/KIND/TARGET/` through its target.
fn replay(kind: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind);
    let scratch = tempfile::tempdir().unwrap();
    let mut n = 0;
    for target in dispatch::TARGETS {
        let dir = root.join(target);
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "no input kept for {target}");
        for input in inputs {
            let data = std::fs::read(&input).unwrap();
            let scratch = tempfile::tempdir_in(scratch.path()).unwrap();
            let r = std::panic::catch_unwind(|| dispatch::run(target, scratch.path(), &data));
            assert!(r.is_ok(), "{target} panics on {}", input.display());
            n += 1;
        }
    }
    n
}

#[test]
fn every_kept_fuzz_input_still_passes() {
    replay("regressions");
}

#[test]
fn every_input_of_the_kept_corpora_passes() {
    let n = replay("corpus");
    assert!(n > 1000, "only {n} corpus inputs: is fuzz/corpus/ kept?");
}
