//! The dashboard and the alert rules against real data: a local cluster
//! of three real nodes, a real Prometheus (Debian's `prometheus`, which
//! `.ci/run` installs) scraping them every second with
//! `deploy/prometheus/alerts.yml` loaded, and a short `strata load`. Then
//! every query of `deploy/grafana/strata.json` and every rule of
//! `alerts.yml` is evaluated through Prometheus's HTTP API: each must
//! parse and return data. (An alert's comparison is evaluated with
//! `bool`, so that a healthy cluster still returns a sample per series:
//! the point is that the expression reads series that exist.)

mod support;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::ClusterProcs;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Prometheus {
    child: Child,
    addr: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_prometheus(dir: &Path, targets: &[String]) -> Prometheus {
    let rules = repo().join("deploy/prometheus/alerts.yml");
    let cfg = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: strata\n    static_configs:\n      - targets: [{}]\n",
        rules.display(),
        targets
            .iter()
            .map(|t| format!("'{}'", t.trim_start_matches("http://")))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let path = dir.join("prometheus.yml");
    std::fs::write(&path, cfg).unwrap();
    let addr = format!("127.0.0.1:{}", support::free_port());
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", path.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn();
    match child {
        Ok(child) => Prometheus { child, addr },
        Err(e) => panic!(
            "dashboard: prometheus did not start ({e}); .ci/run installs it (apt-get install prometheus)"
        ),
    }
}

/// GET `target` from Prometheus: (status, body).
fn get(addr: &str, target: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    support::send(&mut s, "GET", target, b"");
    let r = support::read_response(&mut s);
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Evaluate `q` now: the number of series it returns, or why it failed.
fn query(addr: &str, q: &str) -> Result<usize, String> {
    let (status, body) = get(addr, &format!("/api/v1/query?query={}", encode(q)));
    let v: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("{status}: {e}: {body}"))?;
    if v["status"] != "success" {
        return Err(format!("{status}: {body}"));
    }
    Ok(v["data"]["result"].as_array().map_or(0, |a| a.len()))
}

/// An alert's expression with each comparison made `bool`.
fn as_bool(expr: &str) -> String {
    let mut out = expr.to_string();
    for op in [" > ", " < ", " == "] {
        out = out.replace(op, &format!("{}bool ", op.trim_end().to_string() + " "));
    }
    out
}

#[test]
fn every_dashboard_query_and_alert_rule_returns_data_from_a_real_cluster() {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .map_or(true, |o| !o.status.success())
    {
        panic!(
            "dashboard: prometheus is missing; .ci/run installs it (apt-get install prometheus)"
        );
    }
    let c = ClusterProcs::start(3, &[]);
    let tmp = tempfile::tempdir().unwrap();
    let p = start_prometheus(tmp.path(), &c.urls);
    // Load through every node while Prometheus scrapes.
    let st = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "load",
            &c.urls.join(","),
            "--rate",
            "200",
            "--duration",
            "15s",
        ])
        .args(["--keys", "1000", "--quiet", "--out"])
        .arg(tmp.path().join("load"))
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    // Every target up, with samples over the load.
    let deadline = Instant::now() + Duration::from_secs(30);
    while query(&p.addr, "up{job=\"strata\"} == 1") != Ok(3) {
        assert!(Instant::now() < deadline, "targets never all up");
        std::thread::sleep(Duration::from_millis(250));
    }

    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("deploy/grafana/strata.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    let mut empty = Vec::new();
    for panel in dash["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap();
            match query(&p.addr, expr) {
                Ok(0) => empty.push(format!("{}: {expr}", panel["title"])),
                Ok(_) => {}
                Err(e) => panic!("{}: {expr}: {e}", panel["title"]),
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} dashboard queries");

    let rules = std::fs::read_to_string(repo().join("deploy/prometheus/alerts.yml")).unwrap();
    let mut lines = rules.lines().peekable();
    let mut rule_count = 0;
    while let Some(l) = lines.next() {
        let l = l.trim();
        let (name, alert) = if let Some(n) = l.strip_prefix("- record: ") {
            (n, false)
        } else if let Some(n) = l.strip_prefix("- alert: ") {
            (n, true)
        } else {
            continue;
        };
        let expr = lines.next().unwrap().trim().strip_prefix("expr: ").unwrap();
        let q = if alert {
            as_bool(expr)
        } else {
            expr.to_string()
        };
        match query(&p.addr, &q) {
            Ok(0) => empty.push(format!("{name}: {q}")),
            Ok(_) => {}
            Err(e) => panic!("{name}: {q}: {e}"),
        }
        rule_count += 1;
    }
    assert!(rule_count >= 20, "{rule_count} rules");
    assert!(empty.is_empty(), "no data for:\n{}", empty.join("\n"));

    // The panels rendered from that data (`strata report dashboard`, no
    // Grafana here): every panel drawn, with its lines. Run from another
    // directory and without --dashboard: the shipped dashboard is found
    // wherever the binary runs.
    let svg = std::env::var_os("STRATA_DASHBOARD_SVG")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("dashboard.svg"));
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["report", "dashboard", "--prometheus"])
        .arg(format!("http://{}", p.addr))
        .args(["--last", "40s", "--out"])
        .arg(&svg)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    let mut panels = 0;
    for panel in dash["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap().replace('&', "&amp;");
        assert!(drawn.contains(&title), "{title} not drawn");
        panels += usize::from(panel["type"] != "row");
    }
    assert!(said.starts_with(&format!("{panels} panels, ")), "{said}");
    let lines: usize = said
        .split_whitespace()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(lines >= panels, "{said}");
    assert!(drawn.matches("<polyline").count() >= panels, "lines drawn");

    // Prometheus loaded every rule, healthy.
    let (_, body) = get(&p.addr, "/api/v1/rules");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let loaded: Vec<&serde_json::Value> = v["data"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .collect();
    assert_eq!(loaded.len(), rule_count);
    for r in loaded {
        assert_eq!(r["health"], "ok", "{r}");
    }
}
