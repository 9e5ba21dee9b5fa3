//! What `/proc` says about this process: CPU seconds, resident memory (the
//! heap's and the mapped files'), open file descriptors. Owns reading
//! them; must not encode metrics.

/// What /proc says about this process.
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub rss_bytes: u64,
    /// Of the RSS: anonymous memory (the heap: where a leak shows) and
    /// file pages mapped in (the tables' mmaps: page cache the kernel may
    /// take back).
    pub rss_anon_bytes: u64,
    pub rss_file_bytes: u64,
    pub open_fds: usize,
}

pub fn process() -> ProcessStats {
    // /proc/self/stat: fields 14 and 15 are utime and stime in clock ticks
    // (100 per second on Linux); the command name may hold spaces, so split
    // after its closing parenthesis.
    let cpu_seconds = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
            Some(ticks as f64 / 100.0)
        })
        .unwrap_or(0.0);
    let rss_bytes = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096);
    let open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |k| k * 1024)
    };
    let (rss_anon_bytes, rss_file_bytes) = (kib("RssAnon:"), kib("RssFile:"));
    ProcessStats {
        rss_anon_bytes,
        rss_file_bytes,
        cpu_seconds,
        rss_bytes,
        open_fds,
    }
}
