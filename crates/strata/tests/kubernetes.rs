//! The Kubernetes manifests in `deploy/kubernetes/` against the
//! Kubernetes API schemas (`kubernetes-validate --strict` from PyPI, which
//! `.ci/run` installs): every resource valid, no unknown field (the TLS
//! variants in `tls/` too, and they are the plain manifests plus only
//! their TLS lines); and what the cluster needs of them: each pod's
//! `--advertise` is its entry in `--cluster` (the headless Service's DNS
//! names), the secret and the tokens file come from Secrets that
//! `make-secrets.sh` makes at install (validated with the rest; none is
//! committed, and a node accepts what it made), readiness is
//! `/v0/status`, a preStop pause, and a disruption budget that keeps a
//! quorum.

use std::path::PathBuf;
use std::process::Command;

const K8S: &str = "1.31.0";

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes")
}

fn manifests() -> Vec<PathBuf> {
    yaml_in(&dir())
}

fn yaml_in(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut m: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    m.sort();
    m
}

fn validate(files: &[PathBuf]) -> Option<(bool, String)> {
    let o = Command::new("kubernetes-validate")
        .args(["--strict", "--no-warn", "-k", K8S])
        .args(files)
        .output()
        .ok()?;
    Some((
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    ))
}

/// `make-secrets.sh DIR`: the secrets made at install.
fn make_secrets(out: &std::path::Path) -> std::process::Output {
    Command::new(dir().join("make-secrets.sh"))
        .arg(out)
        .output()
        .expect("run make-secrets.sh")
}

#[test]
fn every_manifest_is_valid_against_the_kubernetes_schemas() {
    let tmp = tempfile::tempdir().unwrap();
    let secrets = tmp.path().join("s");
    let o = make_secrets(&secrets);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut files = manifests();
    assert!(files.len() >= 4, "{files:?}");
    files.push(secrets.join("secrets.yaml"));
    let Some((ok, out)) = validate(&files) else {
        panic!("kubernetes: kubernetes-validate is missing; .ci/run installs it (pip install kubernetes-validate)");
    };
    assert!(ok, "{out}");
    for kind in [
        "service/strata",
        "service/strata-client",
        "statefulset/strata",
        "poddisruptionbudget/strata",
        "secret/strata-cluster-secret",
        "secret/strata-tokens",
        "secret/strata-lab-tokens",
        "job/strata-lab",
        "job/strata-lab-merge",
        "job/strata-lab-sweep",
        "deployment/strata-lab-worker",
        "service/strata-lab-worker",
        "secret/strata-lab-worker-token",
        "persistentvolumeclaim/strata-lab-out",
    ] {
        assert!(
            out.contains(&format!("passed for resource {kind} against")),
            "{kind} not validated:\n{out}"
        );
    }
    // The TLS variants (deploy/kubernetes/tls/), on their own.
    let tls = yaml_in(&dir().join("tls"));
    assert_eq!(tls.len(), 4, "{tls:?}");
    let (ok, out) = validate(&tls).unwrap();
    assert!(ok, "{out}");
    for kind in [
        "strata.yaml passed for resource service/strata against",
        "strata.yaml passed for resource service/strata-client against",
        "strata.yaml passed for resource statefulset/strata against",
        "lab-job.yaml passed for resource job/strata-lab against",
        "lab-workers.yaml passed for resource deployment/strata-lab-worker against",
        "lab-sweep-job.yaml passed for resource job/strata-lab-sweep against",
    ] {
        assert!(out.contains(kind), "{kind} not validated:\n{out}");
    }
    // The validator does reject a wrong manifest: a misspelt field.
    let bad = tmp.path().join("bad.yaml");
    let text = std::fs::read_to_string(dir().join("pdb.yaml")).unwrap();
    std::fs::write(&bad, text.replace("maxUnavailable", "maxUnavailible")).unwrap();
    let (ok, out) = validate(&[bad]).unwrap();
    assert!(!ok, "a misspelt field passed:\n{out}");
}

#[test]
fn the_statefulset_wires_the_cluster_the_way_the_node_expects() {
    let s = std::fs::read_to_string(dir().join("strata.yaml")).unwrap();
    wiring(&s, "http");
    let s = std::fs::read_to_string(dir().join("tls/strata.yaml")).unwrap();
    wiring(&s, "https");
    // The budget keeps a quorum of three replicas: one away at most.
    let pdb = std::fs::read_to_string(dir().join("pdb.yaml")).unwrap();
    assert!(pdb.contains("maxUnavailable: 1"));
    // The lab Job writes one interval log per pod; the merge reads them all.
    let job = std::fs::read_to_string(dir().join("lab-job.yaml")).unwrap();
    let merge = std::fs::read_to_string(dir().join("lab-merge-job.yaml")).unwrap();
    let pods = number(&job, "completions: ");
    assert!(job.contains("--hdr=/out/load-$(JOB_COMPLETION_INDEX).hlog"));
    // Each pod is one share of one run: as many shares as pods, its index
    // the pod's, one start instant for all.
    assert!(job.contains("--segment-index=$(JOB_COMPLETION_INDEX)"));
    assert_eq!(number(&job, "- --segments="), pods, "a share per pod");
    assert!(job.contains("name: STRATA_START_AT"));
    // The sweep's controller reaches every worker pod through the
    // workers' headless Service, with the token the workers want.
    let workers = std::fs::read_to_string(dir().join("lab-workers.yaml")).unwrap();
    let sweep = std::fs::read_to_string(dir().join("lab-sweep-job.yaml")).unwrap();
    assert!(workers.contains("clusterIP: None"));
    assert!(workers.contains("- --listen=0.0.0.0:7700"));
    assert!(sweep.contains("- --workers=dns+http://strata-lab-worker:7700"));
    for m in [&workers, &sweep] {
        assert!(m.contains("name: STRATA_WORKER_TOKEN"));
        assert!(m.contains("name: strata-lab-worker-token"));
    }
    for i in 0..pods {
        assert!(
            merge.contains(&format!("/out/load-{i}.hlog")),
            "pod {i}'s log"
        );
    }
}

/// The number on the manifest's first line that starts with `field`.
fn number(text: &str, field: &str) -> usize {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field}"))
        .parse()
        .unwrap()
}

/// A StatefulSet's pods name each other the way the node expects: each
/// pod's `--advertise` is its entry in `--cluster` (`scheme` URLs), the
/// headless Service, the secret from the Secret, readiness on
/// `/v0/status`, a preStop drain.
fn wiring(s: &str, scheme: &str) {
    let arg = |name: &str| -> String {
        s.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("- --{name}=")))
            .unwrap_or_else(|| panic!("no --{name}"))
            .to_string()
    };
    let replicas = number(s, "replicas: ");
    // --cluster names every pod by its headless-Service DNS name, and
    // each pod advertises its own entry.
    let members: Vec<String> = arg("cluster").split(',').map(str::to_string).collect();
    assert_eq!(members.len(), replicas);
    for (i, m) in members.iter().enumerate() {
        assert!(m.starts_with(&format!("{scheme}://")), "{m}");
        let own = arg("advertise").replace("$(POD_NAME)", &format!("strata-{i}"));
        assert_eq!(m, &own);
    }
    assert!(s.contains("serviceName: strata\n"));
    assert!(s.contains("clusterIP: None"));
    assert!(s.contains("publishNotReadyAddresses: true"));
    // The secret from the Secret, readiness on /v0/status, a drain.
    assert_eq!(arg("cluster-secret-file"), "/etc/strata/secret/secret");
    assert!(s.contains("secretName: strata-cluster-secret"));
    // Data and metrics need tokens: the tokens file from its Secret.
    assert_eq!(arg("auth-tokens"), "/etc/strata/tokens/tokens");
    assert!(s.contains("secretName: strata-tokens"));
    assert!(!s.contains("--client-auth"));
    assert!(s.contains("readinessProbe:\n            httpGet:\n              path: /v0/status"));
    assert!(s.contains("preStop:"));
}

/// The lines of `tls` that are not `plain`'s lines in order (the nodes' URLs
/// made `https://` under the pods' TLS names), comments aside: what the
/// TLS variant adds. Panics if a line of `plain` is missing from `tls`.
fn added_lines(plain: &str, tls: &str) -> Vec<String> {
    let code = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    let plain: Vec<String> = code(plain)
        .iter()
        .map(|l| {
            // The workers speak plain HTTP to their controller.
            l.replace("http://", "https://")
                .replace("dns+https://", "dns+http://")
                .replace(".strata:8080", ".strata.$(POD_NAMESPACE).svc:8080")
        })
        .collect();
    let mut next = 0;
    let mut added = Vec::new();
    for l in code(tls) {
        if plain.get(next) == Some(&l) {
            next += 1;
        } else {
            added.push(l.trim().to_string());
        }
    }
    assert_eq!(
        next,
        plain.len(),
        "the TLS variant lacks the plain manifest's line {:?}",
        plain.get(next)
    );
    added
}

#[test]
fn the_tls_variants_are_the_plain_manifests_and_only_their_tls_lines() {
    let read = |p: &str| std::fs::read_to_string(dir().join(p)).unwrap();
    assert_eq!(
        added_lines(&read("strata.yaml"), &read("tls/strata.yaml")),
        [
            "prometheus.io/scheme: https",
            "- --tls-cert=/tls/node.pem",
            "- --tls-key=/tls/node.key",
            "- --tls-ca=/tls/ca.pem",
            "- name: POD_NAMESPACE",
            "valueFrom:",
            "fieldRef:",
            "fieldPath: metadata.namespace",
            "scheme: HTTPS",
            "scheme: HTTPS",
            "- name: tls",
            "mountPath: /tls",
            "readOnly: true",
            "- name: tls",
            "secret:",
            "secretName: strata-tls",
            "defaultMode: 0440",
        ]
    );
    // A lab Job's TLS lines: the CA, and the namespace for the nodes'
    // TLS names.
    let job_tls = [
        "- --tls-ca=/tls/ca.pem",
        "- name: POD_NAMESPACE",
        "valueFrom:",
        "fieldRef:",
        "fieldPath: metadata.namespace",
        "- name: tls",
        "mountPath: /tls",
        "readOnly: true",
        "- name: tls",
        "secret:",
        "secretName: strata-tls",
        "items:",
        "- key: ca.pem",
        "path: ca.pem",
    ];
    for job in ["lab-job.yaml", "lab-sweep-job.yaml"] {
        assert_eq!(
            added_lines(&read(job), &read(&format!("tls/{job}"))),
            job_tls,
            "{job}"
        );
    }
    // The lab gets the CA, never the node's key.
    assert!(!read("tls/lab-job.yaml").contains("node.key"));
    let ca_lines = [
        "- --tls-ca=/tls/ca.pem",
        "volumeMounts:",
        "- name: tls",
        "mountPath: /tls",
        "readOnly: true",
        "volumes:",
        "- name: tls",
        "secret:",
        "secretName: strata-tls",
        "items:",
        "- key: ca.pem",
        "path: ca.pem",
    ];
    assert_eq!(
        added_lines(&read("lab-workers.yaml"), &read("tls/lab-workers.yaml")),
        ca_lines
    );
    for f in ["tls/lab-workers.yaml", "tls/lab-sweep-job.yaml"] {
        assert!(!read(f).contains("node.key"), "{f}");
    }
}

#[test]
fn the_secrets_are_made_at_install_and_the_nodes_accept_them() {
    // Nothing secret is committed: no manifest holds a Secret.
    for f in manifests().into_iter().chain(yaml_in(&dir().join("tls"))) {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("kind: Secret"),
            "{} holds a Secret",
            f.display()
        );
        assert!(!text.contains("stringData"), "{}", f.display());
    }
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    assert!(make_secrets(&a).status.success());
    assert!(make_secrets(&b).status.success());
    let read = |d: &std::path::Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    assert_ne!(read(&a, "cluster-secret"), read(&b, "cluster-secret"));
    // A second run never overwrites what a cluster runs with.
    let again = make_secrets(&a);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));
    // Private, and the manifest carries exactly the files' values.
    let mode = std::fs::metadata(&a).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o077, 0);
    let yaml = read(&a, "secrets.yaml");
    assert!(yaml.contains(&format!(
        "secret: \"{}\"",
        read(&a, "cluster-secret").trim()
    )));
    assert!(yaml.contains(&format!("token: \"{}\"", read(&a, "lab.token").trim())));
    assert!(yaml.contains(&format!(
        "metrics-token: \"{}\"",
        read(&a, "monitor.token").trim()
    )));
    for line in read(&a, "tokens").lines() {
        assert!(yaml.contains(&format!("    {line}\n")), "{line}");
    }
    // A node started as the StatefulSet starts it accepts the secret and
    // gives each token its role.
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log-level",
            "warn",
            "--data-dir",
        ])
        .arg(tmp.path().join("data"))
        .arg("--cluster-secret-file")
        .arg(a.join("cluster-secret"))
        .arg("--auth-tokens")
        .arg(a.join("tokens"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    let call = |method: &str, path: &str, token: Option<&str>| -> String {
        let mut c = Command::new("curl");
        c.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method]);
        if method == "PUT" {
            c.args(["--data-binary", "v"]);
        }
        if let Some(t) = token {
            c.args([
                "-H",
                &format!("Authorization: Bearer {}", read(&a, t).trim()),
            ]);
        }
        let o = c.arg(format!("{url}{path}")).output().expect("curl");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(call("PUT", "/v0/entity?id=k", Some("app.token")), "201");
    assert_eq!(call("PUT", "/v0/entity?id=k", Some("lab.token")), "201");
    assert_eq!(call("GET", "/metrics", Some("monitor.token")), "200");
    assert_eq!(call("PUT", "/v0/entity?id=k", Some("monitor.token")), "403");
    assert_eq!(call("GET", "/metrics", Some("app.token")), "403");
    assert_eq!(call("GET", "/v0/entity?id=k", None), "401");
    let _ = child.kill();
    let _ = child.wait();
}
