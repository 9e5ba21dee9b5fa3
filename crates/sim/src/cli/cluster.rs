//! `strata sim` for a cluster scenario: its run, report, what-ifs,
//! sweep and JSON output. Owns the command's flow; must not analyse (the
//! parent) or word (`text`) anything itself.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::model::cluster::{simulate, ClusterRun};
use crate::scenario::cluster::ClusterScenario;
use crate::scenario::Clients;

use crate::report::cluster::*;

/// `--json`'s object for one run and its what-ifs.
#[derive(Serialize)]
struct JsonReport<'a> {
    scenario: &'a str,
    seed: u64,
    clients: String,
    window_s: f64,
    warmup_s: f64,
    run: &'a ClusterRun,
    analysis: &'a ClusterAnalysis,
    slo: String,
    what_if: &'a [WhatIf],
}

/// Precision of the what-ifs' breaking-point searches.
pub const WHAT_IF_PRECISION: f64 = 0.02;

/// `strata sim CLUSTER.toml` with its arguments: one run (or a sweep),
/// then the what-ifs.
pub fn run_cli(
    sc: &ClusterScenario,
    base: &Path,
    args: &super::SimArgs,
    out: &mut dyn Write,
) -> Result<(), super::SimError> {
    use super::SimError;
    let io = |e: std::io::Error| SimError::Io {
        path: "<stdout>".into(),
        source: e,
    };
    // `clients=N` in a --set: the count, or the rate of an open loop.
    let sets: Vec<(String, String)> = super::overrides(args, &sc.clients)?
        .into_iter()
        .map(|(k, v)| match (k.as_str(), &sc.clients) {
            ("clients", Clients::Open { .. }) => ("clients.rate".to_string(), v),
            ("clients", Clients::Closed { .. }) => ("clients.count".to_string(), v),
            _ => (k, v),
        })
        .collect();
    let effective = sc.with_overrides(&sets).map_err(SimError::Scenario)?;
    let seed = args.seed.unwrap_or(effective.seed);
    if let Some(p) = &args.save_scenario {
        let text = effective.to_toml().map_err(SimError::Scenario)?;
        std::fs::write(p, text).map_err(|source| SimError::Io {
            path: p.clone(),
            source,
        })?;
    }
    if let Some(sw) = &args.sweep {
        let (param, values) = crate::sweep::parse_sweep(sw).map_err(SimError::Scenario)?;
        let param = if param == "clients" {
            match sc.clients {
                Clients::Open { .. } => "clients.rate".to_string(),
                Clients::Closed { .. } => "clients.count".to_string(),
            }
        } else {
            param
        };
        if !args.json {
            writeln!(
                out,
                "strata sim: {} (seed {seed}), sweep of {param}; {} measured per run",
                effective.name, effective.duration
            )
            .map_err(io)?;
            writeln!(out, "{}", sweep_header(&param)).map_err(io)?;
        }
        let json = args.json;
        let mut werr = None;
        let rows = sweep(sc, base, seed, &sets, &param, &values, &mut |r| {
            if !json {
                if let Err(e) = writeln!(out, "{}", sweep_line(r)) {
                    werr.get_or_insert(e);
                }
                let _ = out.flush();
            }
        })
        .map_err(SimError::Scenario)?;
        if let Some(e) = werr {
            return Err(io(e));
        }
        if json {
            let j = serde_json::json!({
                "scenario": effective.name, "seed": seed, "param": param, "rows": rows,
            });
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&j).expect("serializable")
            )
            .map_err(io)?;
        }
        return Ok(());
    }
    if let Some(q) = args.sizing.query() {
        return size_cli(&effective, base, seed, args, &q, out).map_err(|e| match e {
            SizeErr::Io(e) => io(e),
            SizeErr::Model(e) => SimError::Scenario(e),
        });
    }
    let run = simulate(&effective, base, seed).map_err(SimError::Scenario)?;
    let a = analyse(&run);
    if !args.json {
        write!(out, "{}", text(&run, &a, true)).map_err(io)?;
        let _ = out.flush();
    }
    let mut rows = Vec::new();
    if !args.no_what_if {
        if !args.json {
            writeln!(
                out,
                "\n{}",
                what_if_header(&effective.slo.describe(), &describe_load(&effective))
            )
            .map_err(io)?;
        }
        let json = args.json;
        let mut base_bp = None;
        let mut werr = None;
        let mut first = true;
        let obj = objective(&effective);
        rows = what_ifs(&effective, base, seed, &obj, WHAT_IF_PRECISION, &mut |w| {
            if first {
                base_bp = w.breaking_point;
                first = false;
            }
            if !json {
                if let Err(e) = writeln!(out, "{}", what_if_line(w, base_bp)) {
                    werr.get_or_insert(e);
                }
                let _ = out.flush();
            }
        });
        if let Some(e) = werr {
            return Err(io(e));
        }
    }
    if args.json {
        let j = JsonReport {
            scenario: &effective.name,
            seed,
            clients: describe_clients(&effective),
            window_s: run.window_ns as f64 / 1e9,
            warmup_s: run.warmup_ns as f64 / 1e9,
            run: &run,
            analysis: &a,
            slo: effective.slo.describe(),
            what_if: &rows,
        };
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&j).expect("serializable")
        )
        .map_err(io)?;
    }
    Ok(())
}

enum SizeErr {
    Io(std::io::Error),
    Model(String),
}

/// `--size-for RATE`: the search's rows as they come, then the answer
/// (or the whole `Sizing` as JSON).
fn size_cli(
    sc: &ClusterScenario,
    base: &Path,
    seed: u64,
    args: &super::SimArgs,
    q: &SizeQuery,
    out: &mut dyn Write,
) -> Result<(), SizeErr> {
    let obj = objective(sc);
    let slo = sc.slo.describe();
    let mut werr = None;
    let json = args.json;
    if !json {
        writeln!(
            out,
            "strata sim: {} (seed {seed}): sizing for {} req/s at {slo}",
            sc.name,
            crate::units::rate(q.rate)
        )
        .map_err(SizeErr::Io)?;
    }
    let z = size_for(sc, q, base, seed, &obj, &mut |r| {
        if !json {
            if let Err(e) = writeln!(
                out,
                "  tried {} nodes: {}",
                r.nodes,
                if r.met { "meets it" } else { "misses" }
            ) {
                werr.get_or_insert(e);
            }
            let _ = out.flush();
        }
    })
    .map_err(SizeErr::Model)?;
    if let Some(e) = werr {
        return Err(SizeErr::Io(e));
    }
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&z).expect("serializable")
        )
        .map_err(SizeErr::Io)?;
    } else {
        for l in sizing_lines(&z, &slo) {
            writeln!(out, "{l}").map_err(SizeErr::Io)?;
        }
    }
    Ok(())
}
