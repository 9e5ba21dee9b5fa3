//! The OCI image (`deploy/image/build.sh`, buildah from Debian's packages,
//! no base image pulled). Containers cannot be started on this machine
//! (the sandbox refuses the runtime's setrlimit calls), so the test runs
//! what the image holds the next closest way: it builds the image from the
//! binary under test, mounts it, and starts the node from the image's own
//! root file system (`chroot`, as the image's unprivileged user), with the
//! image's libraries and its /data. Then a write and a read, a drain on
//! SIGTERM, and the image's configuration (entrypoint, user, port); and
//! its default command, which serves with tokens it makes at first start.
//! `chroot` needs root: without it the test says "not checked" (a failure
//! under `STRATA_REQUIRE_TOOLS=1`); without buildah or a static busybox
//! (`scripts/test` installs them) it fails.

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
    Ok(())
}

/// The image built from the binary under test, a working container of it
/// and its root file system mounted; all removed on drop.
struct Image {
    tag: String,
    ctr: String,
    root: String,
}

impl Image {
    fn build() -> Image {
        if let Err(why) = runnable() {
            panic!("image: cannot run: {why}; scripts/test installs what it needs");
        }
        let tag = format!("localhost/strata-test:{}", std::process::id());
        let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        run(Command::new(repo.join("deploy/image/build.sh"))
            .arg(&tag)
            .env("STRATA_BIN", env!("CARGO_BIN_EXE_strata")))
        .unwrap();
        let ctr = buildah(&["from", &tag]).unwrap();
        let root = buildah(&["mount", &ctr]).unwrap();
        Image { tag, ctr, root }
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = buildah(&["umount", &self.ctr]);
        let _ = buildah(&["rm", &self.ctr]);
        let _ = buildah(&["rmi", &self.tag]);
    }
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start the image's `strata` with `args` from its own root, as its user.
fn start(img: &Image, args: &[String], stderr: Stdio) -> std::process::Child {
    Command::new("chroot")
        .args(["--userspec=10001:10001", &img.root, "/usr/local/bin/strata"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Wait until `addr` accepts connections (10 s at most).
fn listening(addr: std::net::SocketAddr) -> Option<std::net::TcpStream> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match std::net::TcpStream::connect(addr) {
            Ok(s) => return Some(s),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => return None,
        }
    }
}

/// One image, built once (a build copies the binary into a new file
/// system: slow), for both checks.
#[test]
fn the_image_serves_from_its_own_root_and_its_default_command_with_tokens() {
    if !support::require("root, to chroot into the image", support::is_root()) {
        return;
    }
    let img = Image::build();
    serves_from_its_own_root_file_system(&img);
    default_command_serves_with_tokens_it_makes_at_first_start(&img);
}

fn serves_from_its_own_root_file_system(img: &Image) {
    let ctr = &img.ctr;
    let root = &img.root;
    let config = buildah(&[
        "inspect",
        "--format",
        "{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.User}} {{.OCIv1.Config.ExposedPorts}} {{.OCIv1.Config.Cmd}}",
        ctr,
    ])
    .unwrap();
    let port = free_port();
    let args = [
        "serve",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--data-dir",
        "/data",
    ];
    let mut node = start(img, &args.map(String::from), Stdio::null());
    let Some(mut s) = listening(([127, 0, 0, 1], port).into()) else {
        let _ = node.kill();
        panic!("the node from the image never listened");
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

/// The image's own command (on a free loopback port instead of 8080):
/// its first start creates /data/tokens and prints the tokens once; data
/// needs one.
fn default_command_serves_with_tokens_it_makes_at_first_start(img: &Image) {
    let root = &img.root;
    let cmd = buildah(&["inspect", "--format", "{{.OCIv1.Config.Cmd}}", &img.ctr]).unwrap();
    // `[serve --listen 0.0.0.0:8080 ...]`
    let mut args: Vec<String> = cmd
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split_whitespace()
        .map(String::from)
        .collect();
    let port = free_port();
    let at = args.iter().position(|a| a == "--listen").unwrap();
    args[at + 1] = format!("127.0.0.1:{port}");
    // The first check's tokens file is not there: it ran without one.
    let _ = std::fs::remove_file(format!("{root}/data/tokens"));
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    let mut node = start(
        img,
        &args,
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    if listening(addr).is_none() {
        let _ = node.kill();
        panic!("never listened: {}", std::fs::read_to_string(&log).unwrap());
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let token = |name: &str| -> Option<String> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
            .map(str::to_string)
    };
    let (app, admin) = (token("readwrite app"), token("operator admin"));
    let bearer = app
        .as_ref()
        .map(|t| format!("Bearer {t}"))
        .unwrap_or_default();
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
    assert!(app.is_some() && admin.is_some(), "{text}");
    assert_eq!((anonymous, with), (401, 201), "{text}");
    let tokens = tokens.unwrap();
    assert!(!tokens.contains(app.as_deref().unwrap()), "{tokens}");
    assert_eq!(mode.unwrap(), "600");
}
