//! Every input kept under `fuzz/regressions/TARGET/` (the seeds, and each
//! crash `scripts/fuzz.sh` found, once fixed) runs through its fuzz
//! target's code in the normal suite: a decoder that panics, or hangs, on
//! one of them fails here.

#[path = "../../../fuzz/src/dispatch.rs"]
mod dispatch;

use std::path::Path;

#[test]
fn every_kept_fuzz_input_still_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let scratch = tempfile::tempdir().unwrap();
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
        }
    }
}
