//! The simulator's calibration against the real node on a small run (issue
//! 5): `strata calibrate` predicts a GET breaking point from short steps
//! below the node's limit; `strata sweep` then measures the node. The node
//! runs on CPU 1 and the lab on CPU 0 when `taskset` can pin them, as in
//! the script, so that the generator does not take the node's core.
//!
//! How close the prediction comes to the sweep's breaking point is a
//! figure, measured by scripts/calibrate-vs-sweep.sh and reported in
//! docs/benchmarks.md, not asserted here: on this shared machine the same
//! node's sweep moved 2–6× between runs minutes apart (242 to 1,438 req/s;
//! one rate met the objective at p99 8 ms and failed it at p99 2.3 s four
//! trials later), because a sweep's breaking point is set by the host's
//! worst minute, and the test asserts behaviour, not timing. What the host
//! cannot move is asserted: a hiccup can fail a trial, nothing can make
//! one pass that the node cannot carry, so the model must not predict
//! less than two thirds of the highest rate a sweep's trial carried within
//! the objective (the test sweeps once more, and then calibrates a fresh
//! node once more, before it calls a prediction that low wrong); and the
//! calibration's own steps bound what it says (below).
//!
//! Both sides use a loose objective (p99 <= 50 ms). The hypervisor's steal
//! is the host's, not the node's, and it moves over minutes (one run:
//! 0–3% of the node's core during the calibration, 20–35% in the sweep's
//! last trials). The node counts it on its cores and the model stretches
//! each request by the steal it saw in its step; the comparison scales
//! the prediction to the share of its cores the node had in the sweep's
//! deciding trials, measured, not fitted.
//!
//! A cluster's calibration under writes prices a write's value size with
//! two steps at one rate, and the what-if it answers with the price is in
//! the calibration and in the scenario `strata sim` runs again.

mod support;

use std::process::Command;

use support::{ClusterProcs, NodeProc};

fn taskset_works() -> bool {
    Command::new("taskset")
        .args(["-c", "1", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

fn pinned(cpu: &str, pin: bool) -> Command {
    if pin {
        let mut c = Command::new("taskset");
        c.args(["-c", cpu, env!("CARGO_BIN_EXE_strata")]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_strata"))
    }
}

/// The machine's CPU time so far: (stolen by the hypervisor, all), in
/// ticks (`/proc/stat`'s first line), said when the comparison fails: a
/// virtual machine's steal slows the node by what the model, reading the
/// node's own CPU time, does not see.
fn steal_ticks() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = text
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    (f.get(7).copied().unwrap_or(0), f.iter().sum())
}

/// One calibration at a time: each measures what the machine carries,
/// which a second running beside it would change.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Calibrate a fresh node, sweep it, and compare: out of the band is an
/// `Err` with the figures; anything else wrong panics.
fn compare_once() -> Result<(), String> {
    let steal_at_start = steal_ticks();
    let pin = taskset_works();
    let data = tempfile::tempdir().unwrap();
    let node = NodeProc::start_with(pinned("1", pin), data.path(), &["--worker-threads", "1"]);
    let url = format!("http://{}", node.addr);
    let out = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = pinned("0", pin).args(args).output().expect("run strata");
        let (so, se) = (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        );
        assert!(o.status.success(), "strata {args:?}: {so}{se}");
        serde_json::from_str::<serde_json::Value>(&so).unwrap_or_else(|e| panic!("{e}: {so}"))
    };
    let cal_dir = out.path().join("cal");
    // Range reads of 50 records: the node's own work per request is what
    // limits it. (With single-key GETs the debug build's generator, on
    // its one core, gave out near the node's limit: a sweep then measured
    // the generator as much as the node, its verdict naming it, and the
    // comparison said nothing about the model.)
    let workload = out.path().join("range50.toml");
    std::fs::write(
        &workload,
        "name = \"range 50\"\nkeys = 20_000\npreload = true\n[mix]\nrange = 1.0\n\
         [value]\nsize = \"fixed\"\nbytes = 100\n[range]\nmin = 50\nmax = 50\n",
    )
    .unwrap();
    let common = [
        "--workload",
        workload.to_str().unwrap(),
        "--slo",
        "p99<=50ms",
        "--quiet",
        "--json",
    ];
    let mut args = vec![
        "calibrate",
        &url,
        "--preload",
        "--duration",
        "2",
        "--steps",
        "6",
    ];
    args.extend(common);
    args.extend(["--out", cal_dir.to_str().unwrap()]);
    let cal = run(&args);
    let sweep_into = |dir: &std::path::Path| {
        let mut args = vec!["sweep", &url, "--start-rate", "1000", "--duration", "2"];
        args.extend(["--precision", "0.05", "--pause", "0.5"]);
        args.extend(common);
        args.extend(["--out", dir.to_str().unwrap()]);
        run(&args)
    };
    // A host that moved too much between the steps leaves no answer, and
    // the calibration says why instead (issue 62): behaviour, checked;
    // there is then nothing to compare with a sweep.
    let Some(predicted) = cal["prediction"]["breaking_point"].as_f64() else {
        let why = cal["host_moved"]
            .as_str()
            .unwrap_or_else(|| panic!("no predicted breaking point, and no reason: {cal}"));
        assert!(why.contains("host moved"), "{why}");
        node.stop();
        eprintln!("not compared: {why}");
        return Ok(());
    };
    // An answer never lies below a rate a step met (below any it failed).
    let e = &cal["evidence"];
    if let Some(met) = e["bracket"]["met"].as_f64() {
        assert!(
            predicted >= met,
            "answer {predicted} below a met step {met}: {e}"
        );
    }
    let breaking_point = |sweep: &serde_json::Value| {
        sweep["breaking_point"]
            .as_f64()
            .unwrap_or_else(|| panic!("no measured breaking point: {sweep}"))
    };
    // The model prices the node's CPU on the cores it had during the
    // step it was built from; the hypervisor's steal on them is the
    // host's, measured by the node, and it moves over minutes. Each side
    // is compared on the cores it had: the prediction scaled by the share
    // of its cores the node had in the sweep's deciding trials over the
    // share it had in the calibration's step.
    let had_in_step = 1.0 - model_step_stolen(&cal);
    let predicted_for = |sweep: &serde_json::Value| {
        predicted * (1.0 - deciding_stolen(sweep)) / had_in_step.max(0.1)
    };
    // The highest rate a sweep's trial carried within the objective:
    // what the node demonstrably served in some minute. A host's stall
    // can fail a trial; nothing can make one pass that the node cannot
    // carry.
    let best_met = |sweep: &serde_json::Value| {
        sweep["trials"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["meets_slo"] == true)
            .filter_map(|t| t["offered_rate"].as_f64())
            .fold(0.0, f64::max)
    };
    let under = |sweep: &serde_json::Value| predicted_for(sweep) * 1.5 < best_met(sweep);
    let sweep_dir = out.path().join("sweep");
    let first = sweep_into(&sweep_dir);
    let mut sweep = first.clone();
    if under(&sweep) || best_met(&sweep) == 0.0 {
        eprintln!(
            "first sweep carried {:.0} req/s against {:.0} predicted for the cores it had ({predicted:.0} on the calibration's); sweeping again",
            best_met(&sweep),
            predicted_for(&sweep)
        );
        let again = sweep_into(&out.path().join("sweep2"));
        if best_met(&again) > best_met(&sweep) {
            sweep = again;
        }
    }
    let measured = breaking_point(&sweep);
    node.stop();

    // The calibration's bookkeeping: steps that rise toward the limit, and
    // a model strata sim can run again. A step the node could not carry
    // (this machine slowed it twice running) must say so, and the
    // prediction must rest on steps it could.
    let steps = cal["steps"].as_array().unwrap();
    let mut carried = 0;
    for s in steps {
        let (offered, achieved) = (
            s["offered"].as_f64().unwrap(),
            s["achieved"].as_f64().unwrap(),
        );
        let overloaded = s["overloaded"].as_bool().unwrap_or(false);
        assert_eq!(
            overloaded,
            achieved < 0.9 * offered,
            "a step overloaded the node without saying so, or said so wrongly: {s}"
        );
        carried += usize::from(!overloaded);
        assert_eq!(s["bottleneck"], "cpu", "{s}");
    }
    assert!(carried > 0, "no step below the node's limit: {cal}");
    // The steps' own judgement against the SLO, and what it did: the
    // model's figure stands unless steps failed the SLO below it (then
    // the answer lies between what they measured) or met it above it
    // (then the answer is the rate they met).
    let model = e["model_breaking_point"].as_f64();
    match e["verdict"].as_str().unwrap() {
        "agrees" | "inconclusive" => assert_eq!(Some(predicted), model, "{e}"),
        "model_below" => {
            assert_eq!(Some(predicted), e["bracket"]["met"].as_f64(), "{e}");
            assert!(model.unwrap_or(0.0) < predicted, "{e}");
        }
        "model_above" => {
            let failed = e["bracket"]["failed"].as_f64().unwrap();
            let met = e["bracket"]["met"].as_f64().unwrap_or(0.0);
            assert!(predicted < failed && predicted >= met, "{e}");
            assert!(model.unwrap() >= failed, "{e}");
        }
        v => panic!("verdict {v}: {e}"),
    }
    for s in steps {
        assert!(
            s["met_slo"].is_boolean() || s["generator_behind"] == true,
            "{s}"
        );
    }
    let scenario = cal["scenario_file"].as_str().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["sim", scenario, "--duration", "1s"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // The sweep's report keeps the node's /metrics before and after, which
    // is all `strata sim --from-report` needs.
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["sim", "--from-report"])
        .arg(&sweep_dir)
        .args(["--duration", "1s"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("Bottleneck: cpu"), "{text}");

    // A sweep the generator limited measured the generator, not the node:
    // there is nothing to compare the prediction with (the host's speed
    // decides that, not the model; issue 61: no assertion on the
    // machine's speed). Said, and the comparison left out.
    if sweep["cause"] == "generator" {
        eprintln!(
            "not compared: the generator limited the sweep ({})",
            sweep["verdict"]
        );
        return Ok(());
    }
    let sweep = &sweep;
    let ratio = predicted_for(sweep) / measured;
    let steal_said = format!(
        "the hypervisor took {:.0}% of the node's cores in the calibration's step and {:.0}% in the sweep's deciding trials",
        (1.0 - had_in_step) * 100.0,
        deciding_stolen(sweep) * 100.0
    );
    eprintln!(
        "predicted {predicted:.0} req/s ({:.0} for the cores the sweep had), breaking point {measured:.0} req/s (ratio {ratio:.2}), carried {:.0} req/s at best; {steal_said}",
        predicted_for(sweep),
        best_met(sweep)
    );
    // On failure, the figures in a few short lines (CI shows the end of
    // the output): each step and each trial as rate, p99, met.
    let steps_line: Vec<String> = steps
        .iter()
        .map(|s| {
            format!(
                "{:.0}->{:.0} p99 {} met {}",
                s["offered"].as_f64().unwrap_or(0.0),
                s["achieved"].as_f64().unwrap_or(0.0),
                s["p99_ms"],
                s["met_slo"]
            )
        })
        .collect();
    let trials_line: Vec<String> = first["trials"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    format!(
                        "{} p99 {} met {}",
                        t["offered_rate"], t["latency"]["p99_ms"], t["meets_slo"]
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let steal_now = steal_ticks();
    let stolen =
        (steal_now.0 - steal_at_start.0) as f64 / (steal_now.1 - steal_at_start.1).max(1) as f64;
    assert!(
        best_met(sweep) > 0.0,
        "no trial met the objective: {}",
        sweep["verdict"]
    );
    if !under(sweep) {
        return Ok(());
    }
    Err(format!(
        "predicted {predicted:.0} req/s ({:.0} for the cores the sweep had), more than 1.5x below the {:.0} req/s a trial carried (breaking point {measured:.0}, ratio {ratio:.2}); \
         {steal_said}; the hypervisor stole {:.0}% of the machine's CPU time over the whole comparison\n\
         evidence: {}\nsteps: {}\nfirst sweep's trials: {}\nthe sweep's verdict: {}",
        predicted_for(sweep),
        best_met(sweep),
        stolen * 100.0,
        cal["evidence"],
        steps_line.join("; "),
        trials_line.join("; "),
        sweep["verdict"]
    ))
}

/// The share of the node's cores the hypervisor took during the
/// calibration's step the model was built from: the last step that was
/// evidence about the node (neither overloaded nor run by a generator
/// that fell behind); 0 when the node did not say.
fn model_step_stolen(cal: &serde_json::Value) -> f64 {
    let steps = cal["steps"].as_array().cloned().unwrap_or_default();
    let evidence =
        |s: &&serde_json::Value| s["overloaded"] != true && s["generator_behind"] != true;
    steps
        .iter()
        .rev()
        .find(evidence)
        .or(steps.last())
        .and_then(|s| s["stolen_share"].as_f64())
        .unwrap_or(0.0)
}

/// The share of the node's cores the hypervisor took during the sweep's
/// deciding trials (those at the rate its verdict judged; every trial
/// when none failed), from the node's samples in the report.
fn deciding_stolen(sweep: &serde_json::Value) -> f64 {
    let trials = sweep["trials"].as_array().cloned().unwrap_or_default();
    let rate = sweep["verdict_trial_rate"].as_f64();
    let shares: Vec<f64> = trials
        .iter()
        .filter(|t| rate.is_none() || t["offered_rate"].as_f64() == rate)
        .flat_map(|t| t["server"].as_array().cloned().unwrap_or_default())
        .filter_map(|x| x["allowed_cpus_stolen"].as_f64())
        .collect();
    if shares.is_empty() {
        0.0
    } else {
        (shares.iter().sum::<f64>() / shares.len() as f64).clamp(0.0, 0.9)
    }
}

/// The comparison, and once more on a fresh node when the prediction is
/// below what a trial carried: a calibration is as exposed to a stall of
/// this host as a sweep is. A model that is wrong misses twice.
#[test]
fn calibrate_predicts_what_sweep_measures() {
    let _one = one_at_a_time();
    if let Err(first) = compare_once() {
        eprintln!("out of the band once; calibrating a fresh node again:\n{first}");
        if let Err(second) = compare_once() {
            panic!("out of the band twice:\nfirst: {first}\nsecond: {second}");
        }
    }
}

#[test]
fn a_cluster_calibration_prices_larger_values() {
    let _one = one_at_a_time();
    let c = ClusterProcs::start(2, &[]);
    let out = tempfile::tempdir().unwrap();
    let urls = c.urls.join(",");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["calibrate", &urls, "--workload", "put", "--keys", "2000"])
        .args(["--duration", "1", "--steps", "4", "--slo", "p99<=50ms"])
        .args(["--quiet", "--json", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let cal: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let v = &cal["cluster"]["value_step"];
    assert_eq!(v["small"], 100, "{v}");
    assert_eq!(v["big"], 4096, "{v}");
    assert_eq!(v["spec"]["measured_at"], 100, "{v}");
    // Both steps wrote, at the one rate, and each step's CPU per write was
    // read from the nodes' own counters.
    for i in 0..2 {
        assert!(v["achieved"][i].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["cpu_per_write_s"][i].as_f64().unwrap() > 0.0, "{v}");
    }
    assert!(v["notes"][0].as_str().unwrap().contains("per KiB"), "{v}");
    // The what-if with the step's values, priced by it: never above the
    // base (a KiB costs nothing or more).
    let w = cal["cluster"]["what_if"].as_array().unwrap();
    let base = w[0]["capacity"].as_f64().unwrap();
    let big = w
        .iter()
        .find(|x| x["label"].as_str().unwrap().contains("4096-byte values"))
        .unwrap_or_else(|| panic!("no value what-if: {w:?}"));
    assert!(
        big["capacity"].as_f64().unwrap() <= base * 1.001,
        "{big} against {base}"
    );
    // The scenario keeps the price: strata sim answers another size.
    let scenario = cal["scenario_file"].as_str().unwrap();
    let toml = std::fs::read_to_string(scenario).unwrap();
    assert!(toml.contains("[cluster.value]"), "{toml}");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["sim", scenario, "--duration", "1s", "--no-what-if"])
        .args(["--set", "cluster.value.bytes=16384"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
