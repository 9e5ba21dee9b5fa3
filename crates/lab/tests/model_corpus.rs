//! The capacity model scored on the corpus (issue 62): every recorded
//! sweep's trials below half its breaking point replayed through the one
//! fitting path `strata calibrate` uses (`experiment::model_check`), its
//! answer set against the breaking point the sweep measured, and the
//! errors in both directions asserted against the floor in
//! `corpus/model-floor.json` (a change to the model may not make it
//! worse: fewer within a fifth, more off by 2× either way, a larger median,
//! fewer ranges that hold the truth). Pure and deterministic: no process
//! runs, no timing is read; the same corpus gives the same score.
//! `UPDATE_MODEL_FLOOR=1` writes the score as the new floor.

use std::path::{Path, PathBuf};

use strata_lab::experiment::model_check::{self, ModelScore};
use strata_lab::report::model_check::ModelCheck;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn checks() -> Vec<(String, ModelCheck)> {
    strata_lab::experiment::corpus::sweep_dirs(&corpus().join("sweeps"))
        .unwrap()
        .into_iter()
        .map(|d| {
            let r = strata_lab::report::read_any(&d).unwrap();
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            (name, model_check::check(&r))
        })
        .collect()
}

#[test]
fn the_model_holds_its_floor_on_the_corpus_in_both_directions() {
    let all = checks();
    for (n, c) in &all {
        println!("{n:60} {}", c.words());
    }
    let cs: Vec<ModelCheck> = all.into_iter().map(|(_, c)| c).collect();
    let s = ModelScore::of(&cs);
    println!("{s:?}");
    let floor_file = corpus().join("model-floor.json");
    if std::env::var_os("UPDATE_MODEL_FLOOR").is_some() {
        let json = serde_json::to_string_pretty(&s).unwrap();
        std::fs::write(&floor_file, json + "\n").unwrap();
        return;
    }
    let f: ModelScore =
        serde_json::from_str(&std::fs::read_to_string(&floor_file).unwrap()).unwrap();
    assert_eq!(
        s.checked, f.checked,
        "the sweeps the model can check changed"
    );
    assert!(
        s.within_fifth >= f.within_fifth,
        "within a fifth: {s:?} < {f:?}"
    );
    assert!(
        s.in_range >= f.in_range,
        "ranges holding the truth: {s:?} < {f:?}"
    );
    assert!(
        s.over_twice <= f.over_twice,
        "off by 2× high: {s:?} > {f:?}"
    );
    assert!(s.under_half <= f.under_half, "off by 2× low: {s:?} > {f:?}");
    assert!(s.over <= f.over, "too high by a fifth: {s:?} > {f:?}");
    assert!(s.under <= f.under, "too low by a fifth: {s:?} > {f:?}");
    assert!(
        s.median_error <= f.median_error + 1e-9,
        "median error: {s:?} > {f:?}"
    );
}

#[test]
fn a_check_is_the_same_every_time() {
    let dirs = strata_lab::experiment::corpus::sweep_dirs(&corpus().join("sweeps")).unwrap();
    // Three sweeps the model can check, replayed twice.
    let mut n = 0;
    for d in dirs {
        let r = strata_lab::report::read_any(&d).unwrap();
        let a = model_check::check(&r);
        if a.unchecked.is_some() {
            continue;
        }
        assert_eq!(a, model_check::check(&r), "{}", d.display());
        n += 1;
        if n == 3 {
            break;
        }
    }
    assert_eq!(n, 3);
}
