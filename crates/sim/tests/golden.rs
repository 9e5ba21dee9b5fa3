//! Golden reports: each `golden/NAME.toml` is run with its own seed and
//! duration, and its text report (without the wall-time line) must equal
//! `golden/NAME.out` byte for byte. `UPDATE_GOLDEN=1 cargo test -p
//! strata-sim --test golden` rewrites the `.out` files; review the diff.

use std::path::Path;

use strata_sim::{simulate, Scenario};

#[test]
fn golden_reports() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no golden inputs in {}", dir.display());
    let mut failed = Vec::new();
    for input in inputs {
        let (sc, base) = Scenario::load(&input).unwrap();
        let (run, a) = simulate(&sc, &base, sc.seed).unwrap();
        let got = strata_sim::report::node::text::text(&run, &a, false);
        let out = input.with_extension("out");
        if update {
            std::fs::write(&out, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&out).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with UPDATE_GOLDEN=1 to create it)",
                out.display()
            )
        });
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(g, w)| g != w)
                .unwrap_or(got.lines().count().min(want.lines().count()));
            failed.push(format!(
                "{}: differs from line {}:\n  got:  {:?}\n  want: {:?}",
                out.display(),
                line + 1,
                got.lines().nth(line).unwrap_or(""),
                want.lines().nth(line).unwrap_or("")
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{}\n(UPDATE_GOLDEN=1 rewrites the files)",
        failed.join("\n")
    );
}
