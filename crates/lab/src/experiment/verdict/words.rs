//! Each cause in words: what it is, and what would raise the limit.
//! Owns the sentences; must not choose a cause.

use crate::report::model::resource as res;

/// The cause as the report names it (the machine's CPU is `cpu`).
pub fn cause_name(resource: &str) -> &str {
    if resource == res::MACHINE {
        res::CPU
    } else {
        resource
    }
}

/// What a cause is, and what would raise the limit.
pub fn words(resource: &str, node: Option<&str>, quote: &str) -> (String, String) {
    let n = node.unwrap_or("the node");
    match resource {
        res::FSYNC => (
            format!("the WAL fsync of {n}: {quote}"),
            format!("the disk's fsync tail sets the pace of writes on {n}: a disk with faster fsync (the p99 fsync above), `--durability interval(10)` to take the fsync off the request's path, or more writers per commit group (group commit amortizes one fsync over them); more nodes spread the writes"),
        ),
        res::STALLS => (
            format!("write stalls on {n}, flush and compaction falling behind: {quote}"),
            format!("give {n}'s memtable more room (`--memtable-bytes`), fewer or smaller writes per second, or a faster disk for flush and compaction"),
        ),
        res::PAUSE => (
            format!("{n} stopping: {quote}"),
            format!("find what stops {n} (a stopped or throttled process, a VM's steal, swapping); clients that fail over to another replica or hedge reads ride through it; until then the limit is set by the pauses, not by load"),
        ),
        res::CPU => (
            format!("the CPU of {n}: {quote}"),
            format!("more cores for {n}, or other processes off its cores; profile it with /debug/pprof/profile; more nodes on machines of their own"),
        ),
        res::THREAD if node.is_none() => (
            format!("one of the generator's threads: {quote}"),
            "run the generator with more --threads (each sends on its own thread); the figure is a floor, not the target's limit".into(),
        ),
        res::THREAD => (
            format!("one thread of {n}: {quote}"),
            format!("that thread's work does not spread over cores: more cores will not help; profile {n} (/debug/pprof/profile) and find what that thread does per request (for the runtime, `--worker-threads`)"),
        ),
        res::MACHINE => (
            format!("the machine's CPU: {quote}"),
            "more cores, or the nodes and the generator on machines of their own; profile with /debug/pprof/profile".into(),
        ),
        res::IO => (
            format!("the disk under {n}: {quote}"),
            format!("a faster disk for {n}, or less else on it; reads that miss the cache (`--block-cache-bytes`) and compactions share it with the WAL"),
        ),
        res::MEMORY => (
            format!("memory on {n}'s machine: {quote}"),
            format!("more memory for {n}'s machine or cgroup, a smaller block cache and memtables, or fewer processes beside it"),
        ),
        res::ADMISSION => (
            format!("admission on {n}: {quote}, while its CPU and disk had room"),
            format!("raise `--max-in-service` on {n}, or try `--admission adaptive`"),
        ),
        res::GENERATOR => (
            format!("the load generator, not the target: {quote}"),
            "run the generator with more --threads, on a quieter machine, or on another one; the figure is a floor, not the target's limit".into(),
        ),
        res::NETWORK => (
            format!("the network path to {n}: {quote}"),
            format!("{n} itself had room; shorten the path (the same rack or zone), look for loss on it (retransmissions), or offer the load over more connections (each one holds its request for the whole round trip)"),
        ),
        _ => (quote.to_string(), String::new()),
    }
}

/// What would raise the limit when the machine's CPU is the cause and
/// other processes held a quarter of its cores or more: not more cores
/// (they would get them too) but those processes off it. `None` when the
/// nodes and the generator held most of it, or the split is unknown.
pub fn machine_next(t: &crate::report::model::Trial, cores: Option<f64>) -> Option<String> {
    let (busy, cores) = (t.machine_cpu_cores?, cores?);
    let ours = t.server_cpu_cores? + t.generator_cpu_cores?;
    let others = (busy - ours).max(0.0);
    (others >= 0.25 * cores).then(|| {
        format!(
            "other processes used {others:.2} of the machine's {} cores (the nodes and the generator {ours:.2}): move them off it, since more cores would go to them too, or run the nodes and the generator on machines of their own",
            crate::experiment::slo::fmt_num(cores)
        )
    })
}
