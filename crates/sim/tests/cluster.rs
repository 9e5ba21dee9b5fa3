//! The cluster model against what can be computed without it: the fork-join
//! order statistic of the replicas' answers, the CPU bound at saturation
//! (background replica work included), the fast failure of a request that
//! cannot reach `ack` live replicas; ack=1 against ack=from; determinism
//! for a seed; the shipped scenario; the what-ifs and the model built
//! from several nodes' metrics.

use std::path::{Path, PathBuf};

use strata_sim::calibrate::cluster::{
    role_split, scenario_from_cluster_metrics, ClusterCalibrateOptions, NodeScrape, RoleCosts,
};
use strata_sim::cli::cluster::run_cli;
use strata_sim::model::cluster::{simulate, ClusterRun};
use strata_sim::report::cluster::{analyse, breaking_point, objective, what_if_cases};
use strata_sim::scenario::cluster::ClusterScenario;

fn scenario(text: &str, sets: &[(&str, &str)]) -> ClusterScenario {
    let s = ClusterScenario::from_toml(text).unwrap();
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    s.with_overrides(&sets).unwrap()
}

fn run(sc: &ClusterScenario) -> ClusterRun {
    simulate(sc, Path::new("."), sc.seed).unwrap()
}

fn mean_us(r: &ClusterRun) -> f64 {
    r.lifetime.mean() / 1e3
}

/// No contention anywhere (a thousand cores a node, no admission, no WAL,
/// no hops, no coordinator cost): a request's lifetime is the ack-th
/// fastest of `from` independent replica times.
const FORK_JOIN: &str = r#"
name = "fork-join"
duration = "20s"
warmup = "1s"
[clients]
mode = "open"
rate = 1000.0
write_fraction = 0.5
[cluster]
nodes = 3
from = 3
ack = 2
cores = 1000
hop = { dist = "constant", value = "0s" }
[cluster.cpu]
request = { dist = "constant", value = "0s" }
replica = { dist = "exponential", mean = "100us" }
local = { dist = "exponential", mean = "100us" }
"#;

/// E[k-th smallest of n i.i.d. exponentials of mean m] =
/// m × sum_{i=n-k+1}^{n} 1/i.
fn order_statistic_mean(n: u32, k: u32, m: f64) -> f64 {
    ((n - k + 1)..=n).map(|i| m / i as f64).sum()
}

#[test]
fn fork_join_matches_the_order_statistic() {
    for (nodes, from, ack) in [(3, 3, 1), (3, 3, 2), (3, 3, 3), (5, 5, 3), (5, 3, 2)] {
        let sc = scenario(
            FORK_JOIN,
            &[
                ("cluster.nodes", &nodes.to_string()),
                ("cluster.from", &from.to_string()),
                ("cluster.ack", &ack.to_string()),
            ],
        );
        let r = run(&sc);
        assert_eq!(r.errors(), 0);
        let want = order_statistic_mean(from, ack, 100.0);
        let got = mean_us(&r);
        assert!(
            (got - want).abs() / want < 0.03,
            "{nodes} nodes, ack={ack} of from={from}: mean {got:.2} µs, the order statistic {want:.2} µs"
        );
    }
}

/// One host of 2 cores; per request: 20 µs at the coordinator, 5 µs for
/// its own replica operation, and for each of the two remote ones 5 µs to
/// send plus 10 µs at the replica: 55 µs, whatever ack is.
const CPU_BOUND: &str = r#"
name = "cpu-bound"
duration = "2s"
warmup = "500ms"
[clients]
mode = "open"
rate = 20000.0
write_fraction = 0.0
[cluster]
nodes = 3
from = 3
ack = 2
host_cores = 2
hop = { dist = "constant", value = "50us" }
[cluster.cpu]
request = { dist = "constant", value = "20us" }
send = { dist = "constant", value = "5us" }
replica = { dist = "constant", value = "10us" }
local = { dist = "constant", value = "5us" }
[cluster.admission]
permits = 256
max_waiting = 1024
max_wait = "100ms"
"#;

#[test]
fn saturation_is_bounded_by_cpu_including_background_replicas() {
    let bound = 2.0 / 55e-6; // 36,364 req/s
    for ack in ["1", "2", "3"] {
        let sc = scenario(CPU_BOUND, &[("cluster.ack", ack)]);
        let a = analyse(&run(&sc));
        assert!(
            (a.capacity - bound).abs() / bound < 0.005,
            "ack={ack}: capacity {} against {bound}",
            a.capacity
        );
        assert_eq!(a.bottleneck.as_deref(), Some("host cpu"));
        // Offered 1.6 times the bound: the cluster answers at most the
        // bound, and nearly all of it.
        let over = scenario(
            CPU_BOUND,
            &[("cluster.ack", ack), ("clients.rate", "60000")],
        );
        let r = run(&over);
        let a = analyse(&r);
        assert!(
            a.goodput <= bound * 1.01 && a.goodput >= bound * 0.95,
            "ack={ack}: {} ok/s against {bound}",
            a.goodput
        );
        assert!(r.refused > 0, "the excess is refused at admission");
    }
    // Each node on its own core: three cores for the same work.
    let mut sc = ClusterScenario::from_toml(CPU_BOUND).unwrap();
    sc.cluster.host_cores = None;
    sc.cluster.cores = Some(1);
    let a = analyse(&run(&sc));
    let per_node = 3.0 / 55e-6;
    assert!(
        (a.capacity - per_node).abs() / per_node < 0.02,
        "per-node cores: {}",
        a.capacity
    );
    assert!(a.bottleneck.unwrap().starts_with("node "));
}

#[test]
fn ack_one_answers_sooner_than_ack_from() {
    let m: Vec<f64> = ["1", "2", "3"]
        .iter()
        .map(|ack| mean_us(&run(&scenario(CPU_BOUND, &[("cluster.ack", ack)]))))
        .collect();
    assert!(m[0] < m[1] && m[1] < m[2], "means by ack 1, 2, 3: {m:?}");
}

#[test]
fn a_node_down_beyond_ack_fails_fast() {
    // ack=3 of 3 with one node down: every request 504s at once, after
    // the coordinator's own work only (20 µs), never waiting for a reply.
    let sc = scenario(CPU_BOUND, &[("cluster.ack", "3"), ("cluster.down", "1")]);
    let r = run(&sc);
    // (Counted in the window: a request started just before it may fail
    // in it.)
    assert!(
        r.not_enough.abs_diff(r.started) <= 2,
        "{} of {}",
        r.not_enough,
        r.started
    );
    assert_eq!(r.ok(), 0);
    assert!(
        r.lifetime.hist.max() < 1_000_000,
        "{}",
        r.lifetime.hist.max()
    );
    assert_eq!(
        r.nodes[2].coordinated, 0,
        "clients do not reach the node down"
    );
    let ops: u64 = r.nodes.iter().map(|n| n.local_ops + n.replica_ops).sum();
    assert_eq!(ops, 0, "nothing is written when ack is out of reach");
    // ack=2 of 3 with one node down: all answered.
    let r = run(&scenario(CPU_BOUND, &[("cluster.down", "1")]));
    assert_eq!(r.errors(), 0);
    // from=2 of 3 nodes, ack=2, one down: a key fails when the node down
    // is one of its two replicas, 2 keys in 3.
    let r = run(&scenario(
        CPU_BOUND,
        &[
            ("cluster.from", "2"),
            ("cluster.down", "1"),
            ("clients.rate", "5000"),
        ],
    ));
    let share = r.not_enough as f64 / r.started as f64;
    assert!((share - 2.0 / 3.0).abs() < 0.02, "{share}");
}

#[test]
fn a_seed_gives_the_same_run() {
    let sc = ClusterScenario::from_toml(CPU_BOUND).unwrap();
    let key = |r: &ClusterRun| {
        (
            r.started,
            r.done,
            r.events,
            r.lifetime.hist.value_at_quantile(0.99),
            r.lifetime.sum,
        )
    };
    let a = run(&sc);
    let b = run(&sc);
    assert_eq!(key(&a), key(&b));
    let c = simulate(&sc, Path::new("."), 2).unwrap();
    assert_ne!(key(&a), key(&c));
}

#[test]
fn writes_go_through_every_replica_wal() {
    let text =
        format!("{CPU_BOUND}[cluster.wal]\nfsync = {{ dist = \"constant\", value = \"300us\" }}\n");
    let sc = scenario(
        &text,
        &[("clients.write_fraction", "1.0"), ("clients.rate", "5000")],
    );
    let r = run(&sc);
    let writes: u64 = r.nodes.iter().map(|n| n.wal_writes).sum();
    // Every write lands on all three replicas, ack or not.
    assert!(
        (writes as f64 / r.admitted as f64 - 3.0).abs() < 0.01,
        "{writes} / {}",
        r.admitted
    );
    // At ack=2 a write waits for the second of three fsync groups: at
    // least one fsync.
    assert!(r.lifetime.mean() > 300_000.0, "{}", r.lifetime.mean());
}

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/strata-cluster.toml")
}

#[test]
fn the_shipped_scenario_parses_and_round_trips() {
    let (sc, _) = ClusterScenario::load(&shipped()).unwrap();
    assert_eq!(sc.name, "strata-cluster");
    let c = &sc.cluster;
    assert_eq!((c.nodes, c.from, c.ack, c.down), (3, 3, 2, 0));
    assert_eq!(c.host_cores, Some(2));
    assert!(c.wal.is_some() && c.admission.is_some() && c.cpu.client.is_some());
    let back = ClusterScenario::from_toml(&sc.to_toml().unwrap()).unwrap();
    assert_eq!(back, sc);
    let labels: Vec<String> = what_if_cases(&sc).into_iter().map(|(l, _)| l).collect();
    assert_eq!(
        labels[1..],
        [
            "with 5 nodes (the same 2-core host)",
            "with 5 nodes, each on its own 2-core host",
            "on one node (the same 2-core host), without replicas",
            "at ack=1",
            "without the fsync on the write's path (durability interval or none)",
            "with one node down"
        ],
        "{labels:?}"
    );
    // The machines' question: every node its own cores, the generator
    // elsewhere.
    let (_, sets) = &what_if_cases(&sc)[2];
    let own = sc.with_overrides(sets).unwrap();
    assert_eq!((own.cluster.host_cores, own.cluster.cores), (None, Some(2)));
    assert!(own.cluster.cpu.client.is_none());
}

#[test]
fn the_breaking_point_is_below_the_cpu_bound_and_the_report_has_the_what_ifs() {
    // Ten times the costs (a tenth of the events): the bound is 3,636 req/s.
    let sc = scenario(
        CPU_BOUND,
        &[
            ("duration", "1s"),
            ("warmup", "200ms"),
            ("clients.rate", "2000"),
            ("cluster.cpu.request.value", "200us"),
            ("cluster.cpu.send.value", "50us"),
            ("cluster.cpu.replica.value", "100us"),
            ("cluster.cpu.local.value", "50us"),
        ],
    );
    let p = breaking_point(&sc, Path::new("."), 1, &objective(&sc), 0.05).unwrap();
    let b = p.breaking_point.unwrap();
    assert!(b <= 3_636.4 * 1.03 && b > 2_500.0, "{b}");
    let args = strata_sim::SimArgs::default();
    let mut out = Vec::new();
    run_cli(&sc, Path::new("."), &args, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    for want in [
        "Bottleneck: host cpu",
        "What if",
        "as given: 3 nodes, ack=2 of from=3",
        "with 5 nodes (the same 2-core host)",
        "with 5 nodes, each on its own 2-core host",
        "at ack=1",
        "with one node down",
    ] {
        assert!(text.contains(want), "{want:?} missing in:\n{text}");
    }
}

/// A node's metrics text with the families the calibration reads.
fn metrics(requests: f64, cpu: f64, busy: f64, sent: &[(&str, f64)]) -> String {
    let mut s = format!(
        "# TYPE strata_http_requests counter\nstrata_http_requests_total{{method=\"GET\",status=\"200\"}} {requests}\n\
         # TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total {cpu}\n\
         # TYPE strata_runtime_worker_busy_seconds counter\nstrata_runtime_worker_busy_seconds_total {busy}\n\
         # TYPE strata_process_cpus gauge\nstrata_process_cpus 2\n\
         # TYPE strata_cluster_members gauge\nstrata_cluster_members 3\n\
         # TYPE strata_admission_max_in_service gauge\nstrata_admission_max_in_service 256\n\
         # TYPE strata_replica_duration_seconds histogram\n"
    );
    for (peer, n) in sent {
        s.push_str(&format!(
            "strata_replica_duration_seconds_count{{peer=\"{peer}\",op=\"read\"}} {n}\n\
             strata_replica_duration_seconds_sum{{peer=\"{peer}\",op=\"read\"}} {}\n",
            n * 300e-6
        ));
    }
    s
}

fn zero() -> String {
    metrics(0.0, 0.0, 0.0, &[])
}

#[test]
fn the_model_of_several_nodes_from_their_metrics() {
    let u = [
        "http://127.0.0.1:7001",
        "http://127.0.0.1:7002",
        "http://127.0.0.1:7003",
    ];
    // The role step: 1,000 requests through node 1, which sent 1,000
    // reads to each peer; the peers spent 0.02 s each (20 µs an
    // operation, 5 of them outside the runtime).
    let role = vec![
        NodeScrape {
            url: u[0].into(),
            before: zero(),
            after: metrics(
                1000.0,
                0.075,
                0.07,
                &[
                    ("http://127.0.0.1:7002", 1000.0),
                    ("http://127.0.0.1:7003", 1000.0),
                ],
            ),
        },
        NodeScrape {
            url: u[1].into(),
            before: zero(),
            after: metrics(0.0, 0.02, 0.015, &[]),
        },
        NodeScrape {
            url: u[2].into(),
            before: zero(),
            after: metrics(0.0, 0.02, 0.015, &[]),
        },
    ];
    let (costs, notes) = role_split(&role, 0, 3, None).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(costs.replica, 20e-6), "{costs:?}");
    assert!(close(costs.local, 5e-6), "{costs:?}");
    assert!(close(costs.send, 15e-6), "{costs:?}");
    // 75 µs at the entry = request + one local (5) + two sends (30).
    assert!(close(costs.request, 40e-6), "{costs:?} {notes:?}");
    // A symmetric load: 3,000 requests, 0.3 s of CPU on the nodes: 100 µs
    // a request; the roles above add to 40 + 5 + 2 × 35 = 115 µs, so they
    // are scaled by 100 / 115.
    let sym: Vec<NodeScrape> = (0..3)
        .map(|i| NodeScrape {
            url: u[i].into(),
            before: zero(),
            after: metrics(
                1000.0,
                0.1,
                0.09,
                &[(u[(i + 1) % 3], 1000.0), (u[(i + 2) % 3], 1000.0)],
            ),
        })
        .collect();
    let opts = ClusterCalibrateOptions {
        from: 3,
        ack: 2,
        one_host: true,
        cores: None,
        generator_cpu_s: Some(0.03),
        roles: Some(costs),
        hop: None,
        at_limit: None,
        slo: Default::default(),
        rate: None,
        name: None,
    };
    let sc = scenario_from_cluster_metrics(&sym, &opts).unwrap();
    assert_eq!(sc.cluster.host_cores, Some(2));
    assert_eq!(
        (sc.cluster.nodes, sc.cluster.from, sc.cluster.ack),
        (3, 3, 2)
    );
    let a = analyse(&run(&sc));
    // 2 cores / (100 µs of the nodes + 10 µs of the generator).
    let want = 2.0 / 110e-6;
    assert!(
        (a.capacity - want).abs() / want < 0.03,
        "{} vs {want}",
        a.capacity
    );
    let scaled: RoleCosts = costs.scaled(100.0 / 115.0);
    assert!((scaled.per_request(3, 3) - 100e-6).abs() < 1e-9);
}

#[test]
fn size_for_answers_with_the_fewest_nodes_of_the_named_size() {
    // 55 µs of CPU per read over the cluster (20 + 2 × 5 + 2 × 10 + 5):
    // at 50,000 req/s, 2.75 cores' worth. On 1-core nodes at least 3
    // (4 leaves headroom for the p99); on 4-core nodes the 3 a key needs.
    let sc = scenario(CPU_BOUND, &[("duration", "1s"), ("warmup", "200ms")]);
    let sized = |cores: u32| {
        let args = strata_sim::SimArgs {
            sizing: strata_sim::report::cluster::SizingArgs {
                size_for: Some(50_000.0),
                node_cores: Some(cores),
                max_nodes: 16,
                ..Default::default()
            },
            json: true,
            ..Default::default()
        };
        let mut out = Vec::new();
        run_cli(&sc, Path::new("."), &args, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        (v["nodes"].as_u64().unwrap_or(0), v)
    };
    let (small, v) = sized(1);
    assert!((3..=5).contains(&small), "{v}");
    assert!(v["machine"].as_str().unwrap().starts_with("1 core,"), "{v}");
    let (big, v) = sized(4);
    assert_eq!(big, 3, "{v}");
    // A node scenario has no node count to size.
    let args = strata_sim::SimArgs {
        sizing: strata_sim::report::cluster::SizingArgs {
            size_for: Some(1000.0),
            ..Default::default()
        },
        scenario: Some(shipped().with_file_name("strata-node.toml")),
        ..Default::default()
    };
    let e = strata_sim::run(&args, None).unwrap_err().to_string();
    assert!(e.contains("needs a cluster scenario"), "{e}");
}
