//! The soak's trend arithmetic and criteria on made-up samples.

use super::*;

#[test]
fn fit_finds_a_line_and_its_start() {
    let pts: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 3.0 + 2.0 * i as f64)).collect();
    let (slope, at) = fit(&pts).unwrap();
    assert!((slope - 2.0).abs() < 1e-9 && (at - 3.0).abs() < 1e-9);
    assert!(fit(&[(1.0, 1.0)]).is_none());
    assert!(fit(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
}

fn sample(t: f64, rss_mib: f64, fds: f64) -> ServerSample {
    ServerSample {
        t_s: t,
        rss_bytes: Some(rss_mib * 1024.0 * 1024.0),
        open_fds: Some(fds),
        flushes: Some(if (t as u64).is_multiple_of(10) {
            1.0
        } else {
            0.0
        }),
        compactions: Some(0.0),
        ..ServerSample::default()
    }
}

#[test]
fn a_leak_in_the_second_half_fails_and_a_sawtooth_does_not() {
    // A memtable's sawtooth (8 MiB up, then flushed) around a flat mean.
    let flat: Vec<ServerSample> = (0..600)
        .map(|i| sample(i as f64, 200.0 + (i % 60) as f64 * 8.0 / 60.0, 40.0))
        .collect();
    // Flat, then 1 MiB and one descriptor more every 5 s.
    let leak: Vec<ServerSample> = (0..600)
        .map(|i| {
            let over = (i as f64 - 300.0).max(0.0) / 5.0;
            sample(i as f64, 200.0 + over, 40.0 + over)
        })
        .collect();
    let f = node_trend("a", &flat, 300.0);
    let l = node_trend("b", &leak, 300.0);
    assert!(f.rss_rise_mib.abs() < 2.0, "{f:?}");
    assert!(l.rss_rise_mib > 50.0 && l.fds_rise > 50.0, "{l:?}");
    assert_eq!(f.flushes, 60.0);
    let soak = |nodes| Soak {
        rate: 100.0,
        breaking_point: None,
        duration_s: 600.0,
        requests: 60_000,
        errors: 0,
        error_pct: 0.0,
        windows: vec![],
        p99_first_ms: 2.0,
        p99_last_ms: 2.5,
        compared_s: 600.0,
        p99_slope_ms_per_hour: 0.0,
        nodes,
        check: None,
        criteria: vec![],
        passed: false,
    };
    let failed = |s: &Soak| -> Vec<String> {
        judge(s, 0.1)
            .into_iter()
            .filter(|c| !c.passed)
            .map(|c| c.name)
            .collect()
    };
    // No checker and no compaction fail on their own; the flat node's
    // resources pass, the leaking node's fail.
    assert_eq!(
        failed(&soak(vec![f])),
        ["nothing lost", "flushes and compactions ran on a"]
    );
    let bad = failed(&soak(vec![l]));
    assert!(bad.contains(&"RSS flat on b".to_string()), "{bad:?}");
    assert!(bad.contains(&"open files flat on b".to_string()), "{bad:?}");
    let mut drift = soak(vec![]);
    drift.p99_last_ms = 4.1;
    assert!(failed(&drift).contains(&"p99 without drift".to_string()));
}

#[test]
fn the_rss_levels_off_when_it_stays_near_its_end() {
    // Warming for 100 s (the cache filling), then flat with a sawtooth.
    let s: Vec<ServerSample> = (0..400)
        .map(|i| {
            let rss = if i < 100 {
                100.0 + 3.0 * i as f64
            } else {
                400.0 + (i % 30) as f64
            };
            sample(i as f64, rss, 40.0)
        })
        .collect();
    let t = node_trend("a", &s, 200.0);
    let at = t.level_by_s.expect("it levels off");
    assert!((90.0..=100.0).contains(&at), "{t:?}");
}

#[test]
fn the_rest_levels_off_under_a_memtables_sawtooth() {
    const MIB: f64 = 1024.0 * 1024.0;
    // Memtables fill to 64 MiB and flush every 100 s; the rest of the RSS
    // grows for 150 s (warming up) and is flat after. The whole RSS ends
    // at a peak of the sawtooth, so it never stays near its last value.
    let s: Vec<ServerSample> = (0..600)
        .map(|i| {
            let mem = 64.0 * ((i % 100) as f64 + 1.0) / 100.0;
            let other = 40.0 + 0.5 * (i.min(150) as f64);
            let mut s = sample(i as f64, other + 20.0 + mem, 40.0);
            s.block_cache_bytes = Some(20.0 * MIB);
            s.memtable_bytes = Some(mem * MIB);
            s
        })
        .collect();
    let t = node_trend("a", &s, 300.0);
    let rest = t.other_level_by_s.expect("the rest levels off");
    assert!((0.0..=150.0).contains(&rest), "{t:?}");
    assert!(t.level_by_s.unwrap() > 500.0, "{t:?}");
    assert_eq!(t.memtables_max_mib.map(f64::round), Some(64.0));
    assert_eq!(t.cache_max_mib, Some(20.0));
}

#[test]
fn a_flush_seen_by_one_gauge_before_the_rss_does_not_unlevel_it() {
    const MIB: f64 = 1024.0 * 1024.0;
    // The rest is flat at 45 MiB from the start; near the end one sample
    // has the memtable's 64 MiB gone from the gauge but not from the RSS
    // (read a moment apart): 109 MiB for one second.
    let s: Vec<ServerSample> = (0..600)
        .map(|i| {
            let mem = if i == 580 { 0.0 } else { 64.0 };
            let mut s = sample(i as f64, 45.0 + 20.0 + 64.0, 40.0);
            s.block_cache_bytes = Some(20.0 * MIB);
            s.memtable_bytes = Some(mem * MIB);
            s
        })
        .collect();
    let t = node_trend("a", &s, 300.0);
    assert_eq!(t.other_level_by_s, Some(0.0), "{t:?}");
    // A step that holds is still seen: the rest at 45 MiB, then 100.
    let stepped: Vec<ServerSample> = (0..600)
        .map(|i| {
            let rest = if i >= 500 { 100.0 } else { 45.0 };
            let mut s = sample(i as f64, rest + 20.0 + 64.0, 40.0);
            s.block_cache_bytes = Some(20.0 * MIB);
            s.memtable_bytes = Some(64.0 * MIB);
            s
        })
        .collect();
    let t = node_trend("a", &stepped, 300.0);
    let by = t.other_level_by_s.expect("level after the step");
    assert!((495.0..=505.0).contains(&by), "{t:?}");
}

#[test]
fn a_stall_over_100_ms_fails_the_soak() {
    let mut calm: Vec<ServerSample> = (0..100).map(|i| sample(i as f64, 200.0, 40.0)).collect();
    for s in &mut calm {
        s.stall_share = Some(0.02);
    }
    let mut stalled = calm.clone();
    stalled[50].stall_share = Some(0.4);
    let judged = |samples: &[ServerSample], worst_p99: f64| {
        let s = Soak {
            rate: 100.0,
            breaking_point: None,
            duration_s: 100.0,
            requests: 10_000,
            errors: 0,
            error_pct: 0.0,
            windows: vec![Window {
                t_s: 0.0,
                requests: 10_000,
                p50_ms: 1.0,
                p99_ms: worst_p99,
                max_ms: worst_p99,
            }],
            p99_first_ms: 2.0,
            p99_last_ms: 2.0,
            compared_s: 60.0,
            p99_slope_ms_per_hour: 0.0,
            nodes: vec![node_trend("a", samples, 50.0)],
            check: None,
            criteria: vec![],
            passed: false,
        };
        judge(&s, 0.1)
            .into_iter()
            .find(|c| c.name == "no stall over 100 ms")
            .unwrap()
    };
    assert!(judged(&calm, 5.0).passed);
    let c = judged(&stalled, 5.0);
    assert!(!c.passed && c.detail.contains("400 ms"), "{}", c.detail);
    assert!(!judged(&calm, 1466.0).passed);
}

#[test]
fn a_cache_still_filling_is_not_a_leak_but_the_rest_growing_is() {
    const MIB: f64 = 1024.0 * 1024.0;
    // The block cache fills by 150 MiB over the second half; the rest of
    // the RSS is flat (the cache node) or grows as much (the leak).
    let node = |leak: bool| -> Vec<ServerSample> {
        (0..600)
            .map(|i| {
                let cache = 50.0 + 150.0 * (i as f64 / 600.0);
                let other = 120.0
                    + if leak {
                        150.0 * (i as f64 / 600.0)
                    } else {
                        0.0
                    };
                let mut s = sample(i as f64, cache + 10.0 + other, 40.0);
                s.block_cache_bytes = Some(cache * MIB);
                s.memtable_bytes = Some(10.0 * MIB);
                s
            })
            .collect()
    };
    let cache = node_trend("cache", &node(false), 300.0);
    let leak = node_trend("leak", &node(true), 300.0);
    assert!(cache.rss_rise_mib > 60.0, "{cache:?}");
    assert!(cache.other_rise_mib.unwrap().abs() < 1.0, "{cache:?}");
    assert!(leak.other_rise_mib.unwrap() > 60.0, "{leak:?}");
    let judged = |n: NodeTrend| {
        let url = n.url.clone();
        let s = Soak {
            rate: 100.0,
            breaking_point: None,
            duration_s: 600.0,
            requests: 60_000,
            errors: 0,
            error_pct: 0.0,
            windows: vec![],
            p99_first_ms: 2.0,
            p99_last_ms: 2.0,
            compared_s: 150.0,
            p99_slope_ms_per_hour: 0.0,
            nodes: vec![n],
            check: None,
            criteria: vec![],
            passed: false,
        };
        judge(&s, 0.1)
            .into_iter()
            .find(|c| c.name == format!("RSS flat on {url}"))
            .unwrap()
    };
    let c = judged(cache);
    assert!(
        c.passed && c.detail.contains("less block cache"),
        "{}",
        c.detail
    );
    assert!(!judged(leak).passed);
}
