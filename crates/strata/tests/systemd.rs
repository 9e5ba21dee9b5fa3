//! The systemd unit (`deploy/systemd/`): `systemd-analyze verify` accepts
//! it (with ExecStart pointing at the binary under test), and every
//! variable of the sample environment file is one `strata serve` reads;
//! it runs with a tokens file.

use std::process::Command;

fn deploy() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/systemd")
}

#[test]
fn the_unit_verifies_and_its_environment_names_real_options() {
    let unit = std::fs::read_to_string(deploy().join("strata.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/strata serve"));
    // As shipped, data and metrics need tokens.
    assert!(unit.contains("Environment=STRATA_AUTH_TOKENS=/etc/strata/tokens"));
    assert!(!unit.contains("STRATA_CLIENT_AUTH"));
    let env = std::fs::read_to_string(deploy().join("strata.env")).unwrap();
    let help = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    // Set, or shown commented out (the TLS options): each a real option.
    let mut names: Vec<&str> = env
        .lines()
        .map(|l| l.trim_start_matches(['#', ' ']))
        .filter(|l| l.starts_with("STRATA_") && l.contains('='))
        .map(|l| l.split('=').next().unwrap())
        .collect();
    names.extend(
        unit.lines()
            .filter_map(|l| l.strip_prefix("Environment="))
            .map(|l| l.split('=').next().unwrap()),
    );
    assert!(names.len() >= 5, "{names:?}");
    for n in names {
        assert!(
            help.contains(&format!("[env: {n}=")),
            "{n} is not an option of strata serve"
        );
    }

    let ok = Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "systemd: systemd-analyze is missing; .ci/run installs it (apt-get install systemd)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("strata.service");
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/strata", env!("CARGO_BIN_EXE_strata")),
    )
    .unwrap();
    let o = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success() && out.trim().is_empty(), "{out}");
}
