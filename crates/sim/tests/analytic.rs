//! The simulator against queueing theory: M/M/1 and M/M/c waiting times
//! (Erlang C), exact mean-value analysis of a closed network, the capacity
//! of a closed system with one bottleneck, Little's law on every run, and
//! determinism for a seed. Runs are fixed-seed, so the tolerances are
//! statistical margins that hold for these seeds, not flaky bounds.

use std::path::Path;

use strata_sim::{simulate, Scenario};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn close(got: f64, want: f64, tol: f64, what: &str) {
    let err = (got - want).abs() / want.abs();
    assert!(
        err <= tol,
        "{what}: got {got}, want {want} (off by {:.2}%, tolerance {:.1}%)",
        err * 100.0,
        tol * 100.0
    );
}

fn open_queue(rate: f64, servers: u32, mean_service: &str, duration: &str) -> Scenario {
    scenario(&format!(
        r#"
name = "mmc"
duration = "{duration}"
warmup = "5s"
seed = 7
[clients]
mode = "open"
rate = {rate}
arrivals = "poisson"
[[stages]]
name = "q"
kind = "workers"
servers = {servers}
service = {{ dist = "exponential", mean = "{mean_service}" }}
"#
    ))
}

/// Erlang C: the probability that an arrival waits in an M/M/c queue with
/// offered load a = λ/μ erlangs.
fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0; // k = 0
    for k in 1..c {
        term *= a / k as f64;
        sum += term;
    }
    let last = term * a / c as f64 * (c as f64 / (c as f64 - a));
    last / (sum + last)
}

fn check_little(run: &strata_sim::Run, a: &strata_sim::Analysis, tol: f64) {
    close(
        a.little.lambda_w,
        a.little.l,
        tol,
        "Little's law, whole system",
    );
    for s in &a.stages {
        if s.mean_in_stage > 0.01 {
            close(
                s.lambda_w,
                s.mean_in_stage,
                tol,
                &format!("Little's law at {}", s.name),
            );
        }
    }
    assert!(run.events > 0);
}

#[test]
fn mm1_waiting_time() {
    // λ = 800/s, μ = 1000/s: ρ = 0.8, W = 1/(μ − λ) = 5 ms, Wq = 4 ms.
    let sc = open_queue(800.0, 1, "1ms", "200s");
    let (run, a) = simulate(&sc, Path::new("."), 7).unwrap();
    let q = &a.stages[0];
    close(q.mean_time_ns / 1e6, 5.0, 0.05, "M/M/1 W (ms)");
    close(q.utilisation.unwrap(), 0.8, 0.01, "M/M/1 utilisation");
    close(q.mean_queue.unwrap(), 0.8 * 0.8 / 0.2, 0.07, "M/M/1 Lq");
    check_little(&run, &a, 0.01);
}

#[test]
fn mmc_waiting_time_erlang_c() {
    // c = 4, μ = 1000/s each, λ = 3200/s: a = 3.2 erlangs, ρ = 0.8.
    let (c, lambda, mu) = (4u32, 3200.0, 1000.0);
    let a_load = lambda / mu;
    let wq = erlang_c(c, a_load) / (c as f64 * mu - lambda);
    let sc = open_queue(lambda, c, "1ms", "100s");
    let (run, a) = simulate(&sc, Path::new("."), 7).unwrap();
    let q = &a.stages[0];
    let w = wq + 1.0 / mu;
    close(q.mean_time_ns / 1e9, w, 0.04, "M/M/4 W (s)");
    close(q.mean_time_ns / 1e9 - 1.0 / mu, wq, 0.08, "M/M/4 Wq (s)");
    close(q.utilisation.unwrap(), 0.8, 0.01, "M/M/4 utilisation");
    close(a.capacity, 4000.0, 0.01, "M/M/4 capacity");
    check_little(&run, &a, 0.01);
}

/// Exact mean-value analysis of N clients (think Z) and one FCFS
/// exponential server (service S): throughput X(N).
fn mva(n: u32, z: f64, s: f64) -> f64 {
    let mut q = 0.0;
    let mut x = 0.0;
    for k in 1..=n {
        let r = s * (1.0 + q);
        x = k as f64 / (z + r);
        q = x * r;
    }
    x
}

#[test]
fn closed_network_matches_mva() {
    for n in [1u32, 5, 10] {
        let sc = scenario(&format!(
            r#"
name = "closed"
duration = "100s"
warmup = "2s"
[clients]
mode = "closed"
count = {n}
start = "spread"
think = {{ dist = "exponential", mean = "10ms" }}
[[stages]]
name = "server"
kind = "workers"
servers = 1
service = {{ dist = "exponential", mean = "2ms" }}
"#
        ));
        let (run, a) = simulate(&sc, Path::new("."), 3).unwrap();
        close(
            a.throughput,
            mva(n, 0.010, 0.002),
            0.02,
            &format!("X({n}) against MVA"),
        );
        check_little(&run, &a, 0.01);
    }
}

/// The seed system as its definition says (every wait exact: no timer)
/// with 1000 clients: throughput is the semaphore's capacity, 8 permits /
/// E[50 ms + max(0, N(10 ms, 5 ms))] = 8 / 60.04 ms, whatever the number
/// of clients; saturation starts near 134 clients.
#[test]
fn closed_system_single_bottleneck_capacity() {
    let (sc, base) = Scenario::load(Path::new("../../scenarios/system-simulator.toml")).unwrap();
    let hold = 0.050 + strata_sim::dist::clipped_normal_mean(0.010, 0.005);
    let want = 8.0 / hold;
    let sc = sc
        .with_overrides(&[
            ("timer".into(), "off".into()),
            ("clients".into(), "1000".into()),
            ("duration".into(), "30s".into()),
            ("warmup".into(), "10s".into()),
        ])
        .unwrap();
    let (run, a) = simulate(&sc, &base, 11).unwrap();
    assert_eq!(a.bottleneck.as_deref(), Some("semaphore"));
    close(a.capacity, want, 0.01, "predicted capacity (req/s)");
    close(a.throughput, want, 0.01, "simulated throughput (req/s)");
    close(a.saturation_clients.unwrap(), want * 1.003, 0.01, "N*");
    // Nearly every request blocks; the wait is N / X − Z − R0.
    let p = run.probes;
    assert!(p.request_block as f64 > 0.99 * p.request_start as f64);
    close(
        a.little.w_ns / 1e9,
        1000.0 / a.throughput - 1.0,
        0.02,
        "lifetime by Little",
    );
    check_little(&run, &a, 0.02);
    // Below saturation nothing waits long and throughput follows the clients.
    let light = sc
        .with_overrides(&[("clients".into(), "50".into())])
        .unwrap();
    let (_, a) = simulate(&light, &base, 11).unwrap();
    close(a.throughput, 50.0 / 1.003, 0.01, "throughput at 50 clients");
}

#[test]
fn little_holds_for_every_shipped_scenario() {
    for f in [
        "system-simulator",
        "system-simulator-fix",
        "system-simulator-split",
        "strata-node",
    ] {
        let (sc, base) = Scenario::load(Path::new(&format!("../../scenarios/{f}.toml"))).unwrap();
        let mut sets = vec![
            ("duration".to_string(), "5s".to_string()),
            ("warmup".to_string(), "2s".to_string()),
        ];
        if sc.client_count().is_some() {
            sets.push(("clients".into(), "100".into()));
        } else {
            sets.push(("clients.rate".into(), "20000".into()));
        }
        let sc = sc.with_overrides(&sets).unwrap();
        let (run, a) = simulate(&sc, &base, 5).unwrap();
        // Boundary effects of a 5 s window: a few percent at most.
        check_little(&run, &a, 0.05);
    }
}

#[test]
fn deterministic_for_a_seed() {
    let (sc, base) = Scenario::load(Path::new("../../scenarios/system-simulator.toml")).unwrap();
    let sc = sc
        .with_overrides(&[("duration".into(), "10s".into())])
        .unwrap();
    let text = |seed| {
        let (run, a) = simulate(&sc, &base, seed).unwrap();
        strata_sim::report::node::text::text(&run, &a, false)
    };
    assert_eq!(text(1), text(1));
    assert_ne!(text(1), text(2));
}

#[test]
fn admission_refuses_and_times_out() {
    // One permit held 10 ms, arrivals every 1 ms: the queue of 3 fills,
    // waits beyond 5 ms are refused.
    let sc = scenario(
        r#"
name = "refuse"
duration = "2s"
[clients]
mode = "open"
rate = 1000.0
arrivals = "constant"
[[stages]]
name = "gate"
kind = "admission"
permits = 1
max_waiting = 3
max_wait = "5ms"
[[stages]]
name = "work"
kind = "workers"
servers = 1
service = { dist = "constant", value = "10ms" }
"#,
    );
    let (run, a) = simulate(&sc, Path::new("."), 1).unwrap();
    let p = run.probes;
    close(a.throughput, 1000.0, 0.01, "answers per second");
    close(a.stages[1].throughput, 100.0, 0.02, "served per second");
    assert!(p.request_timeout > 0 && p.request_refused > 0, "{p:?}");
    assert_eq!(p.request_failed, p.request_timeout + p.request_refused);
    assert_eq!(
        p.request_nonblock + p.request_block + p.request_refused,
        p.request_start
    );
    // LIFO serves the newest waiter: with no timeouts, some old waiter waits long.
    let lifo = sc
        .with_overrides(&[
            ("gate.policy".into(), "lifo".into()),
            ("gate.max_wait".into(), "10s".into()),
        ])
        .unwrap();
    let (run, _) = simulate(&lifo, Path::new("."), 1).unwrap();
    assert_eq!(run.probes.request_timeout, 0);
}

#[test]
fn overload_is_flagged_unstable() {
    // ρ = 1.2: the queue grows by about 200 requests a second.
    let sc = open_queue(1200.0, 1, "1ms", "20s");
    let (_, a) = simulate(&sc, Path::new("."), 7).unwrap();
    assert!(
        a.warnings.iter().any(|w| w.contains("q is unstable")),
        "{:#?}",
        a.warnings
    );
    close(a.throughput, 1000.0, 0.03, "throughput at capacity");
}

#[test]
fn a_server_that_stalls_holds_its_requests_through_the_stalls() {
    // One server, 100 µs per request, 100 req/s; the server stalls 50
    // times a second for 4 ms each (away 20 % of the time). A request that
    // finds it idle waits out part of a stall 20 % of the time (half a
    // stall on average: 0.4 ms), one stall in 200 falls within a service
    // (0.02 ms): about 0.52 ms in the stage, against 0.1 ms without, plus
    // a little queueing behind the stalled ones.
    let text = |stalls: &str| {
        format!(
            r#"
name = "stalls"
duration = "200s"
warmup = "5s"
seed = 7
[clients]
mode = "open"
rate = 100
arrivals = "poisson"
[[stages]]
name = "cpu"
kind = "workers"
servers = 1
service = {{ dist = "constant", value = "100us" }}
{stalls}
"#
        )
    };
    let (_, plain) = simulate(&scenario(&text("")), Path::new("."), 7).unwrap();
    let stalled = scenario(&text(
        "stalls = { per_second = 50, length = { dist = \"constant\", value = \"4ms\" } }",
    ));
    let (run, a) = simulate(&stalled, Path::new("."), 7).unwrap();
    close(
        plain.stages[0].mean_time_ns / 1e6,
        0.1,
        0.02,
        "no stalls (ms)",
    );
    let ms = a.stages[0].mean_time_ns / 1e6;
    assert!(
        (0.5..0.75).contains(&ms),
        "with stalls: {ms} ms in the stage"
    );
    check_little(&run, &a, 0.02);
    // Stalls a scenario cannot have are refused.
    let bad =
        text("stalls = { per_second = -1, length = { dist = \"constant\", value = \"4ms\" } }");
    assert!(Scenario::from_toml(&bad).is_err());
}
