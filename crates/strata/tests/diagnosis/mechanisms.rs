//! The diagnosis suite's mechanisms: each way a cause is put into real
//! processes (strace's delayed fdatasync, pinning and busy loops, stops,
//! network namespaces, cgroups, neighbours on the disk and the core), and
//! a node started through a wrapper. Owns the mechanisms; the scenarios
//! and what each must name are the suite's (`diagnosis.rs`).

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::support::NodeProc;

pub fn need(tool: &str) {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{tool} is needed by this scenario (.ci/run installs it)"
    );
}

/// strace's arguments that delay each fdatasync by `ms` (a seccomp
/// filter: the other syscalls run untraced, at full speed); the program
/// follows them.
pub fn strace_args(ms: u32) -> Vec<String> {
    need("strace");
    [
        "-f",
        "-qq",
        "--seccomp-bpf",
        "-e",
        "trace=fdatasync",
        "-e",
        &format!("inject=fdatasync:delay_exit={}", ms * 1000),
        "-o",
        "/dev/null",
    ]
    .map(str::to_string)
    .to_vec()
}

/// `strata`, its fdatasync calls each delayed by `ms`.
pub fn slow_fsync(ms: u32) -> Command {
    let mut c = Command::new("strace");
    c.args(strace_args(ms)).arg(env!("CARGO_BIN_EXE_strata"));
    c
}

/// `strata` pinned to `cpu`.
pub fn pinned(cpu: &str) -> Command {
    need("taskset");
    let mut c = Command::new("taskset");
    c.args(["-c", cpu, env!("CARGO_BIN_EXE_strata")]);
    c
}

/// Busy loops pinned to `cpu`, killed when dropped.
pub struct Hogs(pub Vec<Child>);

impl Hogs {
    pub fn on(cpu: &str, n: usize) -> Hogs {
        need("taskset");
        Hogs(
            (0..n)
                .map(|_| {
                    Command::new("taskset")
                        .args(["-c", cpu, "yes"])
                        .stdout(Stdio::null())
                        .spawn()
                        .expect("start a busy loop")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The children of `pid` (a wrapper's node), killed with it.
pub fn kill_children(pid: u32) {
    let Ok(d) = std::fs::read_dir("/proc") else {
        return;
    };
    for e in d.flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(pid) {
            if let Ok(child) = e.file_name().to_string_lossy().parse::<i32>() {
                // SAFETY: kill(2) on a process we started (through strace).
                unsafe { libc::kill(child, 9) };
            }
        }
    }
}

/// A node started through a wrapper; the wrapper's child (the node) is
/// killed with it.
pub struct Wrapped(pub NodeProc);

impl Drop for Wrapped {
    fn drop(&mut self) {
        kill_children(self.0.child.id());
    }
}

pub fn url(n: &NodeProc) -> String {
    format!("http://{}", n.addr)
}

/// Stop and continue `pid` every second, `stopped` of it, until told.
pub fn pauser(pid: u32, stopped: Duration) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let h = std::thread::spawn(move || {
        while !d.load(Ordering::Relaxed) {
            // SAFETY: kill(2) on a node this test started.
            unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
            std::thread::sleep(stopped);
            unsafe { libc::kill(pid as i32, libc::SIGCONT) };
            std::thread::sleep(Duration::from_secs(1) - stopped);
        }
        unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    });
    (done, h)
}

/// A network namespace joined to this one by a veth pair: the node and a
/// delaying relay (`strata cluster delay`) run inside it, the generator
/// outside; deleted when dropped.
pub struct Namespace {
    name: String,
    /// The pair's end outside.
    host: String,
    pub inside: Vec<Child>,
}

impl Namespace {
    /// `n` picks the addresses 10.77.n.1 (outside) and 10.77.n.2 (inside).
    pub fn new(n: u8) -> Namespace {
        need("ip");
        assert!(
            super::support::is_root(),
            "a network namespace needs root (the full suite is a benchmark: run it as root)"
        );
        let name = format!("strata-diag-{n}-{}", std::process::id());
        let host = format!("sd{n}h{}", std::process::id() % 10000);
        let peer = format!("sd{n}n{}", std::process::id() % 10000);
        let ip = |args: &[&str]| {
            let o = Command::new("ip").args(args).output().expect("run ip");
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        // A pair left by a namespace still held by an exiting process.
        let _ = Command::new("ip").args(["link", "delete", &host]).output();
        ip(&["netns", "add", &name]);
        let ns = Namespace {
            name: name.clone(),
            host: host.clone(),
            inside: Vec::new(),
        };
        ip(&["link", "add", &host, "type", "veth", "peer", "name", &peer]);
        ip(&["link", "set", &peer, "netns", &name]);
        ip(&["addr", "add", &format!("10.77.{n}.1/24"), "dev", &host]);
        ip(&["link", "set", &host, "up"]);
        let inside = |args: &[&str]| {
            let mut a = vec!["netns", "exec", &name, "ip"];
            a.extend(args);
            ip(&a);
        };
        inside(&["addr", "add", &format!("10.77.{n}.2/24"), "dev", &peer]);
        inside(&["link", "set", &peer, "up"]);
        inside(&["link", "set", "lo", "up"]);
        ns
    }

    /// A command run inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        for c in &mut self.inside {
            let _ = c.kill();
            let _ = c.wait();
        }
        // The pair at once (the namespace, and its end of the pair, last
        // until every process inside has exited).
        let _ = Command::new("ip")
            .args(["link", "delete", &self.host])
            .status();
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .status();
    }
}

/// A cgroup (v1 or v2) of `controller` that `pid` is moved into, removed
/// when dropped (its processes back to the root first).
pub struct Cgroup {
    dir: std::path::PathBuf,
    root: std::path::PathBuf,
}

impl Cgroup {
    /// `files`: (name, value) written before the process moves in.
    pub fn new(controller: &str, pid: u32, files: &[(&str, String)]) -> Cgroup {
        let root = std::path::PathBuf::from(format!("/sys/fs/cgroup/{controller}"));
        assert!(
            super::support::is_root(),
            "moving a process into a cgroup needs root"
        );
        assert!(
            super::support::cgroup_v1(controller),
            "the {controller} cgroup controller is needed by this scenario (cgroup v1 at {})",
            root.display()
        );
        let dir = root.join(format!("strata-diag-{}-{pid}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("make a cgroup");
        for (f, v) in files {
            std::fs::write(dir.join(f), v).unwrap_or_else(|e| panic!("{f} = {v}: {e}"));
        }
        std::fs::write(dir.join("cgroup.procs"), pid.to_string()).expect("move into the cgroup");
        Cgroup { dir, root }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for p in procs.lines() {
            let _ = std::fs::write(self.root.join("cgroup.procs"), p);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The block device (major:minor) that holds `path`.
pub fn device_of(path: &std::path::Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).unwrap().dev();
    let (ma, mi) = (libc::major(dev), libc::minor(dev));
    // A partition's whole disk is what the throttle names; this machine's
    // root is a whole disk (vda).
    format!("{ma}:{mi}")
}

/// A neighbour on the same disk: a process that writes 4 KiB and
/// fdatasyncs in a loop, killed when dropped.
pub fn fsyncing_neighbour(dir: &std::path::Path) -> Hogs {
    need("python3");
    let script = format!(
        "import os\nf=os.open('{}/neighbour',os.O_WRONLY|os.O_CREAT)\nwhile True:\n    os.pwrite(f,b'x'*4096,0)\n    os.fdatasync(f)\n",
        dir.display()
    );
    Hogs(vec![Command::new("python3")
        .args(["-c", &script])
        .spawn()
        .expect("start the neighbour")])
}

/// A neighbour that keeps `cpu` busy half the time (5 ms on, 5 ms off),
/// killed when dropped.
pub fn half_busy(cpu: &str) -> Hogs {
    need("python3");
    need("taskset");
    let script = "import time\nwhile True:\n    t=time.monotonic()\n    while time.monotonic()-t<0.005: pass\n    time.sleep(0.005)\n";
    Hogs(vec![Command::new("taskset")
        .args(["-c", cpu, "python3", "-c", script])
        .spawn()
        .expect("start the neighbour")])
}

/// A neighbour on `cpu` that collects garbage: twice a second it fills
/// 256 MiB, touching every page, and frees it (a runtime's heap growing
/// and being collected), killed when dropped.
pub fn collecting_neighbour(cpu: &str) -> Hogs {
    need("python3");
    need("taskset");
    let script = "import time\nwhile True:\n    b=bytearray(256<<20)\n    for i in range(0,len(b),4096): b[i]=1\n    del b\n    time.sleep(0.5)\n";
    Hogs(vec![Command::new("taskset")
        .args(["-c", cpu, "python3", "-c", script])
        .spawn()
        .expect("start the neighbour")])
}
