//! `strata report heap`: a node's heap profile (`GET /debug/pprof/heap`, a
//! gzipped pprof protobuf from jemalloc's sampling profiler, with function
//! names) turned into a flame graph SVG and a table of the allocation sites
//! holding the most memory. Given a second, earlier profile (`--base`),
//! only what grew between the two: the way a leak shows itself. Reads a
//! file or fetches from a node; must not profile anything itself.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;
use strata_api::routes;

use pprof::protos::{Message, Profile};

#[derive(clap::Args, Debug, Clone)]
pub struct HeapArgs {
    /// The profile: a file saved from /debug/pprof/heap, or a node's URL
    /// (http[s]://HOST:PORT, its profile fetched now).
    pub profile: String,
    /// An earlier profile (file or URL) to subtract: the graph then shows
    /// only what grew since.
    #[arg(long)]
    pub base: Option<String>,
    /// Where to write the flame graph.
    #[arg(long, default_value = "heap.svg")]
    pub out: PathBuf,
    /// Also keep a fetched profile in this file (for a later --base).
    #[arg(long)]
    pub save: Option<PathBuf>,
    /// Allocation sites listed.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
}

/// Stacks (root first, frames joined by ';') and the bytes each holds.
pub type Folded = BTreeMap<String, i64>;

/// Fold a pprof profile's samples into stacks, weighted by its
/// `inuse_space` value (the last value when there is none by that name).
pub fn fold(p: &Profile) -> Result<Folded, String> {
    let string = |i: i64| p.string_table.get(i as usize).map_or("", |s| s.as_str());
    let value = p
        .sample_type
        .iter()
        .position(|t| string(t.ty) == "inuse_space")
        .or_else(|| p.sample_type.len().checked_sub(1))
        .ok_or("the profile has no sample types")?;
    let functions: HashMap<u64, &str> = p.function.iter().map(|f| (f.id, string(f.name))).collect();
    let locations: HashMap<u64, Vec<String>> = p
        .location
        .iter()
        .map(|l| {
            // Inlined frames come first, their caller last: reversed,
            // caller first, as the stack is read from the root.
            let mut names: Vec<String> = l
                .line
                .iter()
                .rev()
                .map(|line| {
                    functions
                        .get(&line.function_id)
                        .map_or_else(|| format!("{:#x}", l.address), |n| frame(n))
                })
                .collect();
            if names.is_empty() {
                names.push(format!("{:#x}", l.address));
            }
            (l.id, names)
        })
        .collect();
    let mut out = Folded::new();
    for s in &p.sample {
        let bytes = s.value.get(value).copied().unwrap_or(0);
        if bytes == 0 {
            continue;
        }
        let mut frames: Vec<&str> = Vec::new();
        for id in s.location_id.iter().rev() {
            match locations.get(id) {
                Some(names) => frames.extend(names.iter().map(|n| n.as_str())),
                None => {
                    return Err(format!(
                        "sample names location {id}, which is not in the profile"
                    ))
                }
            }
        }
        *out.entry(frames.join(";")).or_insert(0) += bytes;
    }
    Ok(out)
}

/// A function name as a flame graph frame: without the hash suffix, and
/// without ';' (the frame separator; it appears in array types).
fn frame(name: &str) -> String {
    let name = match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            head
        }
        _ => name,
    };
    name.replace(';', ",")
}

/// `now` less `base`, stack by stack: what grew (positive) and the bytes
/// that shrank (returned apart, as a flame graph cannot draw them).
pub fn growth(now: &Folded, base: &Folded) -> (Folded, i64) {
    let mut grew = Folded::new();
    let mut shrank = 0;
    for (stack, &b) in now {
        let d = b - base.get(stack).copied().unwrap_or(0);
        if d > 0 {
            grew.insert(stack.clone(), d);
        } else {
            shrank -= d;
        }
    }
    shrank += base
        .iter()
        .filter(|(s, _)| !now.contains_key(*s))
        .map(|(_, b)| b)
        .sum::<i64>();
    (grew, shrank)
}

/// The allocation sites (the innermost frame of our own code, or the
/// innermost frame when none is ours) holding the most bytes, as a table.
pub fn top(folded: &Folded, n: usize) -> String {
    let total: i64 = folded.values().sum();
    let mut sites: HashMap<&str, i64> = HashMap::new();
    for (stack, &b) in folded {
        *sites.entry(site(stack)).or_insert(0) += b;
    }
    let mut sites: Vec<(&str, i64)> = sites.into_iter().collect();
    sites.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = format!("{:>12}  {:>6}  allocation site\n", "bytes", "share");
    for (name, b) in sites.into_iter().take(n) {
        out += &format!(
            "{:>12}  {:>5.1}%  {name}\n",
            crate::units::bytes(b.max(0) as u64),
            100.0 * b as f64 / total.max(1) as f64
        );
    }
    out
}

/// Where a stack allocated: its innermost `strata` frame, else its
/// innermost frame that is not the allocator's.
fn site(stack: &str) -> &str {
    let frames: Vec<&str> = stack.split(';').collect();
    frames
        .iter()
        .rev()
        .find(|f| f.starts_with("strata_") || f.starts_with("<strata_"))
        .or_else(|| {
            frames.iter().rev().find(|f| {
                !(f.contains("alloc::")
                    || f.contains("jemalloc")
                    || f.contains("_rjem_")
                    || f.starts_with("0x"))
            })
        })
        .or(frames.last())
        .copied()
        .unwrap_or("?")
}

/// Read a profile from a file, or fetch it from a node's URL (saved in
/// `save` when given).
pub fn load(what: &str, save: Option<&Path>) -> Result<Profile, String> {
    let raw = if what.starts_with("http://") || what.starts_with("https://") {
        // Downloaded to a file (a profile has no size bound), then read.
        let to = save.map_or_else(
            || std::env::temp_dir().join(format!("strata-heap-{}.pb.gz", std::process::id())),
            Path::to_path_buf,
        );
        let _ = std::fs::remove_file(&to);
        strata_client::control::download(
            what.trim_end_matches('/'),
            routes::HEAP_PROFILE,
            &to,
            Duration::from_secs(60),
        )?;
        let b = std::fs::read(&to).map_err(|e| format!("{}: {e}", to.display()));
        if save.is_none() {
            let _ = std::fs::remove_file(&to);
        }
        b?
    } else {
        std::fs::read(what).map_err(|e| format!("{what}: {e}"))?
    };
    decode(&raw).map_err(|e| format!("{what}: {e}"))
}

/// A pprof protobuf, gzipped or not.
pub fn decode(raw: &[u8]) -> Result<Profile, String> {
    let mut plain = Vec::new();
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(raw)
            .read_to_end(&mut plain)
            .map_err(|e| format!("not a gzipped profile: {e}"))?;
        &plain[..]
    } else {
        raw
    };
    Profile::decode(bytes).map_err(|e| format!("not a pprof profile: {e}"))
}

/// Draw `folded` as a flame graph SVG.
pub fn flamegraph(folded: &Folded, title: &str) -> Result<Vec<u8>, String> {
    let lines: Vec<String> = folded
        .iter()
        .filter(|(_, &b)| b > 0)
        .map(|(s, b)| format!("{s} {b}"))
        .collect();
    if lines.is_empty() {
        return Err("nothing to draw: no sampled bytes (in use, or grown since --base)".into());
    }
    let mut opts = pprof::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "bytes".to_string();
    let mut out = Vec::new();
    pprof::flamegraph::from_lines(&mut opts, lines.iter().map(|s| s.as_str()), &mut out)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

pub fn run(a: &HeapArgs) -> Result<(), String> {
    let now = fold(&load(&a.profile, a.save.as_deref())?)?;
    let total: i64 = now.values().sum();
    let (graph, title) = match &a.base {
        None => {
            println!(
                "In use: {} (jemalloc's sampled estimate)",
                crate::units::bytes(total as u64)
            );
            (now, "Heap in use".to_string())
        }
        Some(b) => {
            let base = fold(&load(b, None)?)?;
            let (grew, shrank) = growth(&now, &base);
            let was: i64 = base.values().sum();
            println!(
                "In use: {} now, {} in the base; grew {} in some stacks, shrank {} in others",
                crate::units::bytes(total as u64),
                crate::units::bytes(was.max(0) as u64),
                crate::units::bytes(grew.values().sum::<i64>() as u64),
                crate::units::bytes(shrank as u64)
            );
            (grew, "Heap growth since the base".to_string())
        }
    };
    if graph.values().all(|&b| b <= 0) {
        // An answer, not a failure: nothing to draw.
        println!("Nothing grew: no flame graph written");
        return Ok(());
    }
    print!("{}", top(&graph, a.top));
    let svg = flamegraph(&graph, &title)?;
    std::fs::write(&a.out, svg).map_err(|e| format!("{}: {e}", a.out.display()))?;
    println!("Flame graph: {}", a.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pprof::protos::{Function, Line, Location, Sample, ValueType};

    /// A profile of three stacks, as jemalloc_pprof writes them: leaf
    /// first, one location inlining another.
    fn profile(bytes: [i64; 3]) -> Profile {
        let strings: Vec<String> = [
            "",
            "inuse_space",
            "bytes",
            "main",
            "strata_engine::memtable::MemTable::put::h0123456789abcdef",
            "alloc::alloc::alloc",
            "strata_cluster::hints::Hints::keep",
            "<[u8; 4] as Clone>::clone",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let f = |id, name| Function {
            id,
            name,
            ..Default::default()
        };
        let loc = |id, fns: &[u64]| Location {
            id,
            address: 0x1000 + id,
            line: fns
                .iter()
                .map(|&function_id| Line {
                    function_id,
                    line: 0,
                })
                .collect(),
            ..Default::default()
        };
        Profile {
            sample_type: vec![ValueType { ty: 1, unit: 2 }],
            sample: vec![
                // alloc <- put <- main
                Sample {
                    location_id: vec![3, 2, 1],
                    value: vec![bytes[0]],
                    label: vec![],
                },
                // alloc <- keep (inlined into put's location) <- main
                Sample {
                    location_id: vec![3, 4, 1],
                    value: vec![bytes[1]],
                    label: vec![],
                },
                // clone <- an address with no name <- main
                Sample {
                    location_id: vec![5, 6, 1],
                    value: vec![bytes[2]],
                    label: vec![],
                },
            ],
            location: vec![
                loc(1, &[1]),
                loc(2, &[2]),
                loc(3, &[3]),
                loc(4, &[4, 2]),
                loc(5, &[5]),
                loc(6, &[]),
            ],
            function: vec![f(1, 3), f(2, 4), f(3, 5), f(4, 6), f(5, 7)],
            string_table: strings,
            ..Default::default()
        }
    }

    #[test]
    fn stacks_are_folded_root_first_with_inlined_frames() {
        let folded = fold(&profile([1000, 3000, 500])).unwrap();
        let lines: Vec<String> = folded.iter().map(|(s, b)| format!("{s} {b}")).collect();
        assert_eq!(
            lines,
            [
                "main;0x1006;<[u8, 4] as Clone>::clone 500",
                "main;strata_engine::memtable::MemTable::put;alloc::alloc::alloc 1000",
                "main;strata_engine::memtable::MemTable::put;strata_cluster::hints::Hints::keep;alloc::alloc::alloc 3000",
            ]
        );
        // Gzipped and decoded back, the same.
        let mut raw = Vec::new();
        profile([1000, 3000, 500]).encode(&mut raw).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &raw).unwrap();
        let again = fold(&decode(&gz.finish().unwrap()).unwrap()).unwrap();
        assert_eq!(again, folded);
    }

    #[test]
    fn the_top_sites_are_our_innermost_frames() {
        let folded = fold(&profile([1000, 3000, 500])).unwrap();
        assert_eq!(
            top(&folded, 10),
            [
                "       bytes   share  allocation site",
                "     2.9 KiB   66.7%  strata_cluster::hints::Hints::keep",
                "      1000 B   22.2%  strata_engine::memtable::MemTable::put",
                "       500 B   11.1%  <[u8, 4] as Clone>::clone",
                "",
            ]
            .join("\n")
        );
    }

    #[test]
    fn growth_keeps_what_grew_and_counts_what_shrank() {
        let base = fold(&profile([1000, 3000, 500])).unwrap();
        let now = fold(&profile([1000, 7000, 100])).unwrap();
        let (grew, shrank) = growth(&now, &base);
        assert_eq!(grew.len(), 1);
        assert_eq!(grew.values().sum::<i64>(), 4000);
        assert!(grew.keys().next().unwrap().contains("Hints::keep"));
        assert_eq!(shrank, 400);
        let svg = String::from_utf8(flamegraph(&grew, "growth").unwrap()).unwrap();
        assert!(svg.contains("Hints::keep"), "{svg}");
        assert!(!svg.contains("clone"));
        assert!(flamegraph(&Folded::new(), "x").is_err());
    }
}
