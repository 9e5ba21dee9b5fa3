//! The OCI image (`deploy/image/build.sh`, buildah from Debian's packages,
//! no base image pulled). Containers cannot be started on this machine
//! (the sandbox refuses the runtime's setrlimit calls), so the test runs
//! what the image holds the next closest way: it builds the image from the
//! binary under test, mounts it, and starts the node from the image's own
//! root file system (`chroot`, as the image's unprivileged user), with the
//! image's libraries and its /data. Then a write and a read, a drain on
//! SIGTERM, and the image's configuration (entrypoint, user, port).

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run(cmd: &mut Command) -> Result<String, String> {
    let o = cmd.output().map_err(|e| e.to_string())?;
    let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if o.status.success() {
        Ok(out)
    } else {
        Err(format!("{out}{}", String::from_utf8_lossy(&o.stderr)))
    }
}

fn buildah(args: &[&str]) -> Result<String, String> {
    run(Command::new("buildah")
        .args(["--storage-driver", "vfs"])
        .args(args))
}

fn runnable() -> Result<(), String> {
    run(Command::new("buildah").arg("--version"))
        .map_err(|_| "buildah not installed (apt-get install buildah)")?;
    run(Command::new("busybox").arg("true"))
        .map_err(|_| "busybox not installed (apt-get install busybox-static)")?;
    let uid = run(Command::new("id").arg("-u"))?;
    if uid != "0" {
        return Err("chroot needs root".into());
    }
    Ok(())
}

#[test]
fn the_image_holds_a_node_that_serves_from_its_own_root_file_system() {
    if let Err(why) = runnable() {
        panic!("image: cannot run: {why}; .ci/run installs what it needs");
    }
    let tag = format!("localhost/strata-test:{}", std::process::id());
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    run(Command::new(repo.join("deploy/image/build.sh"))
        .arg(&tag)
        .env("STRATA_BIN", env!("CARGO_BIN_EXE_strata")))
    .unwrap();
    let ctr = buildah(&["from", &tag]).unwrap();
    let cleanup = || {
        let _ = buildah(&["umount", &ctr]);
        let _ = buildah(&["rm", &ctr]);
        let _ = buildah(&["rmi", &tag]);
    };
    let config = buildah(&[
        "inspect",
        "--format",
        "{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.User}} {{.OCIv1.Config.ExposedPorts}} {{.OCIv1.Config.Cmd}}",
        &ctr,
    ])
    .unwrap();
    let root = buildah(&["mount", &ctr]).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut node = Command::new("chroot")
        .args([
            "--userspec=10001:10001",
            &root,
            "/usr/local/bin/strata",
            "serve",
        ])
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
            "/data",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut s = loop {
        match std::net::TcpStream::connect(&addr) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                let _ = node.kill();
                cleanup();
                panic!("the node from the image never listened: {e}");
            }
        }
    };
    support::send(&mut s, "PUT", "/v0/entity?id=k", b"from the image");
    let put = support::read_response(&mut s);
    support::send(&mut s, "GET", "/v0/entity?id=k", b"");
    let got = support::read_response(&mut s);
    drop(s);
    // SIGTERM: the node drains and exits 0.
    let _ = Command::new("kill").arg(node.id().to_string()).status();
    let st = node.wait().unwrap();
    // What the node wrote is in the image's /data, owned by its user.
    let data_owner = run(Command::new("stat").args(["-c", "%u", &format!("{root}/data")]));
    cleanup();
    assert_eq!(put.status, 201);
    assert_eq!(got.status, 200);
    assert_eq!(got.body, b"from the image");
    assert!(st.success(), "{st}");
    assert_eq!(data_owner.unwrap(), "10001");
    assert!(
        config.starts_with("[/usr/local/bin/strata] 10001:10001 map[8080:{}]"),
        "{config}"
    );
    assert!(
        config.contains(
            "serve --listen 0.0.0.0:8080 --data-dir /data --auth-tokens /data/tokens --create-tokens"
        ),
        "{config}"
    );
}

#[test]
fn the_images_default_command_serves_with_tokens_it_makes_at_first_start() {
    if let Err(why) = runnable() {
        panic!("image: cannot run: {why}; .ci/run installs what it needs");
    }
    let tag = format!("localhost/strata-test-cmd:{}", std::process::id());
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    run(Command::new(repo.join("deploy/image/build.sh"))
        .arg(&tag)
        .env("STRATA_BIN", env!("CARGO_BIN_EXE_strata")))
    .unwrap();
    let ctr = buildah(&["from", &tag]).unwrap();
    let cleanup = || {
        let _ = buildah(&["umount", &ctr]);
        let _ = buildah(&["rm", &ctr]);
        let _ = buildah(&["rmi", &tag]);
    };
    let cmd = buildah(&["inspect", "--format", "{{json .OCIv1.Config.Cmd}}", &ctr]).unwrap();
    let mut args: Vec<String> = serde_json::from_str(&cmd).unwrap();
    let root = buildah(&["mount", &ctr]).unwrap();
    // The image's own command, on a free port of loopback instead of 8080.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let at = args.iter().position(|a| a == "--listen").unwrap();
    args[at + 1] = format!("127.0.0.1:{port}");
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    let mut node = Command::new("chroot")
        .args(["--userspec=10001:10001", &root, "/usr/local/bin/strata"])
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(addr).is_err() {
        if Instant::now() > deadline {
            let _ = node.kill();
            cleanup();
            panic!("never listened: {}", std::fs::read_to_string(&log).unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let token = |name: &str| -> Option<String> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
            .map(str::to_string)
    };
    let (app, admin) = (token("readwrite app"), token("operator admin"));
    let bearer = app.as_ref().map(|t| format!("Bearer {t}")).unwrap_or_default();
    let anonymous = support::request_to(addr, "PUT", "/v0/entity?id=k", &[], b"x").status;
    let with = support::request_to(
        addr,
        "PUT",
        "/v0/entity?id=k",
        &[("Authorization", &bearer)],
        b"x",
    )
    .status;
    let _ = Command::new("kill").arg(node.id().to_string()).status();
    let _ = node.wait();
    let tokens = std::fs::read_to_string(format!("{root}/data/tokens"));
    let mode = run(Command::new("stat").args(["-c", "%a", &format!("{root}/data/tokens")]));
    cleanup();
    assert!(app.is_some() && admin.is_some(), "{text}");
    assert_eq!((anonymous, with), (401, 201), "{text}");
    let tokens = tokens.unwrap();
    assert!(!tokens.contains(app.as_deref().unwrap()), "{tokens}");
    assert_eq!(mode.unwrap(), "600");
}
