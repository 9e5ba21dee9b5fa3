//! The Prometheus configuration and alert rules in `deploy/prometheus/`
//! with the real tools (Debian's `prometheus` package: `.ci/run` installs
//! it): the configuration and rules are valid, every alert's unit tests
//! pass (`promtool test rules`: each fires on what it is about and stays
//! quiet on a healthy cluster), and every metric a rule reads is one that
//! a real three-node cluster exports.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use support::ClusterProcs;

fn deploy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus")
}

fn have_promtool() {
    let ok = Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "prometheus: promtool is missing; .ci/run installs it (apt-get install prometheus)"
    );
}

fn promtool(args: &[&str]) -> String {
    let o = Command::new("promtool")
        .args(args)
        .current_dir(deploy())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "promtool {args:?}:\n{text}");
    text
}

#[test]
fn the_configuration_and_rules_are_valid_and_every_alert_passes_its_unit_tests() {
    have_promtool();
    promtool(&["check", "config", "prometheus.yml"]);
    let rules = promtool(&["check", "rules", "alerts.yml"]);
    assert!(rules.contains("SUCCESS"), "{rules}");
    let tests = promtool(&["test", "rules", "alerts_test.yml"]);
    assert!(tests.contains("SUCCESS"), "{tests}");
    // Every alert has a test that expects it to fire.
    let alerts = std::fs::read_to_string(deploy().join("alerts.yml")).unwrap();
    let tested = std::fs::read_to_string(deploy().join("alerts_test.yml")).unwrap();
    for line in alerts.lines() {
        if let Some(name) = line.trim().strip_prefix("- alert: ") {
            assert!(
                tested.contains(&format!("alertname: {name}\n        exp_alerts:")),
                "{name} has no test where it fires"
            );
        }
    }
}

#[test]
fn every_metric_the_rules_read_is_exported_by_a_real_cluster() {
    let alerts = std::fs::read_to_string(deploy().join("alerts.yml")).unwrap();
    let mut wanted = BTreeSet::new();
    for expr in alerts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr: "))
    {
        let mut rest = expr;
        while let Some(i) = rest.find("strata_") {
            // Not a recording rule's name (`strata:...`), nor a label.
            let name: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[i + name.len()..];
            wanted.insert(name);
        }
    }
    assert!(wanted.len() >= 10, "{wanted:?}");
    let c = ClusterProcs::start(3, &[]);
    // Traffic, so that the request families have samples.
    assert_eq!(
        c.node(0).request("PUT", "/v0/entity?id=k", b"v").status,
        201
    );
    assert_eq!(c.node(1).request("GET", "/v0/entity?id=k", b"").status, 200);
    let r = c.node(0).request("GET", "/metrics", b"");
    let text = String::from_utf8_lossy(&r.body);
    let exported: BTreeSet<String> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect();
    let missing: Vec<&String> = wanted.iter().filter(|m| !exported.contains(*m)).collect();
    assert!(
        missing.is_empty(),
        "read by the rules, not exported: {missing:?}"
    );
}
