//! What a test may need that a developer's machine may not give it: root
//! (a tmpfs mounted, network namespaces, bpftrace attached, a chroot, an
//! address added), cgroup v1's controllers, a whole disk under the test's
//! files. Where it is missing the test says `not checked` and why on
//! stderr and passes having checked nothing, unless `STRATA_REQUIRE_TOOLS=1`
//! (as `.ci/run` sets it) makes that a failure. A missing tool is not one
//! of these: `scripts/test` installs the tools, and a test without its
//! tool fails saying which. Std only: the engine's tests include this file
//! too (`#[path]`).
#![allow(dead_code)]

use std::path::Path;

/// Whether a test that cannot run here must fail: `STRATA_REQUIRE_TOOLS=1`.
pub fn tools_required() -> bool {
    std::env::var("STRATA_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

/// `true` when `available`. Otherwise the test cannot run here for want of
/// `what` (e.g. "root, to mount a tmpfs"): it says `<test>: not checked:
/// needs <what>` on stderr and gets `false` (return at once), or, under
/// `STRATA_REQUIRE_TOOLS=1`, fails.
#[track_caller]
pub fn require(what: &str, available: bool) -> bool {
    if !available {
        not_checked(what);
    }
    available
}

/// As [`require`], the reason `r`'s error (on one line): its value when
/// it is `Ok`.
#[track_caller]
pub fn require_ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            let e = e.to_string();
            let why: Vec<&str> = e.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            not_checked(&format!("{what} ({})", why.join(" ")));
            None
        }
    }
}

#[track_caller]
fn not_checked(what: &str) {
    let thread = std::thread::current();
    let test = thread
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("this test");
    if tools_required() {
        panic!("{test}: cannot run here: needs {what}, and STRATA_REQUIRE_TOOLS=1 makes that a failure");
    }
    eprintln!("{test}: not checked: needs {what}");
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// Whether cgroup v1's `controller` (e.g. `blkio`) is mounted where the
/// tests look for it, `/sys/fs/cgroup/<controller>`.
pub fn cgroup_v1(controller: &str) -> bool {
    Path::new("/sys/fs/cgroup")
        .join(controller)
        .join("cgroup.procs")
        .exists()
}

/// The device (`major:minor`) of the file system holding `path` when it
/// is a whole disk: not a partition, nor a file system with no block
/// device of its own (tmpfs, overlay).
pub fn whole_disk(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    // Linux's encoding of a dev_t (glibc's major() and minor()).
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    let sys = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    (sys.exists() && !sys.join("partition").exists()).then(|| format!("{major}:{minor}"))
}
