//! `report.html`: self-contained, the charts present with their labels
//! (availability and per-node latency too, with fault marks, for the
//! faults fixture), and, in headless Chromium, a page that actually shows
//! them.

use std::path::{Path, PathBuf};
use std::process::Command;

use strata_lab::report::{self, html, Report};

fn golden(name: &str) -> Report {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/report")
        .join(name);
    report::read_json(&p).unwrap()
}

const FIGURES: [&str; 4] = [
    "latency-vs-rate",
    "achieved-vs-offered",
    "over-time",
    "spectrum",
];

/// The `<figure id=...>...</figure>` element of `id` in `page`.
fn figure<'a>(page: &'a str, id: &str) -> &'a str {
    let open = format!("<figure id=\"{id}\">");
    let start = page.find(&open).unwrap_or_else(|| panic!("no figure {id}"));
    let len = page[start..].find("</figure>").expect("figure closed");
    &page[start..start + len]
}

#[test]
fn page_is_self_contained_with_four_labelled_charts() {
    for name in ["sweep.json", "load.json"] {
        let r = golden(name);
        let page = html::render(&r).unwrap();
        // Nothing fetched from elsewhere: no scripts, links, imports or
        // URLs other than the report's own target and command text.
        let without_data = page
            .replace(&html::esc(&r.target), "")
            .replace(&html::esc(&r.command), "");
        for bad in ["://", "<script", "<link", "<img", "@import", "url("] {
            assert!(!without_data.contains(bad), "{name}: page contains {bad:?}");
        }
        for id in FIGURES {
            let f = figure(&page, id);
            assert!(f.contains("<svg"), "{name} {id}: no svg");
            assert!(f.contains("<figcaption>"), "{name} {id}: no caption");
            assert!(
                f.matches("<path").count() + f.matches("<polyline").count() >= 3,
                "{name} {id}: no lines"
            );
            assert!(
                f.matches("<text").count() >= 5,
                "{name} {id}: no text labels"
            );
        }
        // The tables say what report.md says.
        for t in &r.trials {
            assert!(
                page.contains(&html::esc(&strata_lab::report::markdown::fmt_ms(
                    t.latency.p99_ms
                )))
            );
        }
    }
}

/// The charts over time, on which faults are marked.
const TIME_FIGURES: [&str; 3] = ["over-time", "availability", "node-latency"];

#[test]
fn faults_page_has_availability_and_per_node_charts_with_fault_marks() {
    let r = golden("faults.json");
    let page = html::render(&r).unwrap();
    // Self-contained: the only URLs are the nodes' own (in the command,
    // the target, the per-node table, captions and the checker's text).
    let mut without_data = page
        .replace(&html::esc(&r.target), "")
        .replace(&html::esc(&r.command), "");
    for n in &r.trials[0].per_node {
        without_data = without_data.replace(&n.url, "");
    }
    for bad in ["://", "<script", "<link", "<img", "@import", "url("] {
        assert!(!without_data.contains(bad), "page contains {bad:?}");
    }
    for id in FIGURES.iter().chain(&TIME_FIGURES[1..]) {
        let f = figure(&page, id);
        assert!(f.contains("<svg"), "{id}: no svg");
        assert!(f.contains("<figcaption>"), "{id}: no caption");
    }
    for id in TIME_FIGURES {
        let f = figure(&page, id);
        let t = texts(f);
        // Each fault labelled with its spec, and in the legend.
        for fault in &r.faults {
            assert!(
                t.iter().any(|x| x == &fault.spec),
                "{id} lacks {}: {t:?}",
                fault.spec
            );
        }
        assert!(t.iter().any(|x| x == "fault (3)"), "{id}: no legend: {t:?}");
        assert!(f.contains("Faults are marked in magenta"), "{id}: caption");
        assert!(
            t.iter().any(|x| x == "time since the run started (s)"),
            "{id}"
        );
        // A line at each injection and a band for each fault undone: the
        // fault colour, as a stroke and as a fill.
        let lines = f
            .split("<polyline")
            .filter(|e| e.split('>').next().unwrap().contains("stroke=\"#C51B7D\""))
            .count();
        // Plus one for the legend's mark.
        assert_eq!(lines, r.faults.len() + 1, "{id}: fault lines");
        let undone = r.faults.iter().filter(|f| f.until_s.is_some()).count();
        assert_eq!(
            f.matches("opacity=\"0.12\" fill=\"#C51B7D\"").count(),
            undone,
            "{id}: fault bands"
        );
    }
    let avail = texts(figure(&page, "availability"));
    for want in ["0%", "50%", "100%", "answered successfully"] {
        assert!(
            avail.iter().any(|x| x == want),
            "availability lacks {want}: {avail:?}"
        );
    }
    let nodes = figure(&page, "node-latency");
    let t = texts(nodes);
    for want in [
        "node 1 p99",
        "node 2 p99",
        "node 3 p99",
        "p99 latency per second",
    ] {
        assert!(
            t.iter().any(|x| x == want),
            "node-latency lacks {want}: {t:?}"
        );
    }
    assert!(nodes.contains("node 2 is http://127.0.0.1:8082"));
    // One line per node at least (broken where a node answered nothing).
    assert!(nodes.matches("<polyline").count() >= 3, "node lines");
    // The order: the time charts together, the spectrum last.
    let pos = |id: &str| page.find(&format!("<figure id=\"{id}\">")).unwrap();
    assert!(pos("over-time") < pos("availability"));
    assert!(pos("availability") < pos("node-latency"));
    assert!(pos("node-latency") < pos("spectrum"));
}

#[test]
fn without_faults_or_nodes_no_marks_and_no_per_node_chart() {
    for name in ["load.json", "sweep.json"] {
        let page = html::render(&golden(name)).unwrap();
        assert!(page.contains("<figure id=\"availability\">"), "{name}");
        assert!(!page.contains("<figure id=\"node-latency\">"), "{name}");
        assert!(!page.contains("fault ("), "{name}");
        assert!(!page.contains("C51B7D"), "{name}");
        assert!(!page.contains("<h2>Faults</h2>"), "{name}");
        assert!(!page.contains("<h2>Consistency check</h2>"), "{name}");
    }
}

/// The contents of the `<text>` elements of an SVG fragment, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

#[test]
fn charts_carry_axis_labels_and_legends() {
    let r = golden("sweep.json");
    let page = html::render(&r).unwrap();
    let has = |fig: &str, want: &[&str]| {
        let t = texts(figure(&page, fig));
        for w in want {
            assert!(t.iter().any(|x| x == w), "{fig} lacks label {w:?}: {t:?}");
        }
    };
    has(
        "latency-vs-rate",
        &[
            "offered rate (req/s)",
            "p50",
            "p99.9",
            "breaking point 8.0k",
            "16k",
            "1.00 ms",
        ],
    );
    has(
        "spectrum",
        &[
            "percentile",
            "50%",
            "90%",
            "99%",
            "99.9%",
            "99.99%",
            "trial 6: 16,000/s",
        ],
    );
    has(
        "over-time",
        &[
            "time since the run started (s)",
            "trial boundary",
            "throughput (right)",
            "p99",
        ],
    );
    let time = figure(&page, "over-time");
    // Counted markers: the fixture's stalls.
    let stalls: usize = r
        .trials
        .iter()
        .flat_map(|t| &t.server)
        .filter(|s| s.stalls.unwrap_or(0.0) > 0.0)
        .count();
    assert!(
        time.contains(&format!("stall ({stalls})")),
        "stall count {stalls}"
    );
    // A single run: bars per operation, with the operations named.
    let page = html::render(&golden("load.json")).unwrap();
    let bars = figure(&page, "latency-vs-rate");
    let t = texts(bars);
    for op in ["get", "put", "all"] {
        assert!(t.iter().any(|x| x == op), "no label {op}: {t:?}");
    }
    assert!(bars.matches("<rect").count() >= 12, "no bars");
}

#[test]
fn spectrum_shows_at_most_eight_trials() {
    let mut r = golden("sweep.json");
    let t = r.trials[0].clone();
    r.trials = (0..13)
        .map(|i| {
            let mut t = t.clone();
            t.offered_rate = Some(1000.0 * (i + 1) as f64);
            t
        })
        .collect();
    let page = html::render(&r).unwrap();
    let spec = figure(&page, "spectrum");
    assert_eq!(
        texts(spec)
            .iter()
            .filter(|t| t.starts_with("trial "))
            .count(),
        8,
        "legend entries"
    );
    assert!(spec.contains("trial 1:") && spec.contains("trial 13:"));
    assert!(spec.contains("8 of the 13 trials"));
}

fn chromium() -> PathBuf {
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        if let Ok(out) = Command::new("which").arg(name).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            }
        }
    }
    panic!(
        "headless Chromium not found (looked for chromium, chromium-browser, google-chrome): \
         install the Debian package `chromium` (.ci/run does)"
    );
}

fn headless(chromium: &Path) -> Command {
    let mut c = Command::new(chromium);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--window-size=1280,2400",
    ]);
    c
}

/// Render the sweep fixture, open it in headless Chromium, and check what
/// the browser built and painted. `REPORT_SCREENSHOT=FILE` keeps the PNG.
#[test]
fn chromium_renders_the_charts() {
    let chromium = chromium();
    let dir = tempfile::tempdir().unwrap();
    report::write_dir(dir.path(), &golden("sweep.json"), &Default::default()).unwrap();
    let page = dir.path().join("report.html");
    let url = format!("file://{}", page.display());

    // The DOM as the browser parsed it: four figures, each an <svg> with paths.
    let out = headless(&chromium)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    for id in FIGURES {
        let f = figure(&dom, id);
        assert!(f.contains("<svg"), "{id}: the browser sees no svg");
        assert!(
            f.matches("<path").count() + f.matches("<polyline").count() >= 3,
            "{id}: no paths in the DOM"
        );
    }

    // The faults fixture: every chart, the new ones too, in the DOM.
    let faults = dir.path().join("faults");
    report::write_dir(&faults, &golden("faults.json"), &Default::default()).unwrap();
    let out = headless(&chromium)
        .arg("--dump-dom")
        .arg(format!("file://{}", faults.join("report.html").display()))
        .output()
        .unwrap();
    assert!(out.status.success());
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    for id in FIGURES.iter().chain(&TIME_FIGURES[1..]) {
        let f = figure(&dom, id);
        assert!(f.contains("<svg"), "faults {id}: the browser sees no svg");
        assert!(
            f.contains("kill:2@10s") || !TIME_FIGURES.contains(id),
            "faults {id}"
        );
    }

    // The painted page: a screenshot with charts in colour, not a blank.
    let png = dir.path().join("report.png");
    let out = headless(&chromium)
        .arg(format!("--screenshot={}", png.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success() && png.exists(),
        "screenshot failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::fs::File::open(&png).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 2400));
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let px = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let (mut coloured, mut dark) = (0usize, 0usize);
    for p in px.chunks(channels) {
        let (r, g, b) = (p[0] as i32, p[1] as i32, p[2] as i32);
        colours.insert((r >> 3, g >> 3, b >> 3));
        if (r - g).abs().max((g - b).abs()).max((r - b).abs()) > 60 {
            coloured += 1;
        }
        if r + g + b < 200 {
            dark += 1;
        }
    }
    let n = px.len() / channels;
    assert!(
        colours.len() > 50,
        "{} distinct colours: a blank page?",
        colours.len()
    );
    assert!(
        coloured > n / 500,
        "{coloured} coloured pixels of {n}: no chart lines?"
    );
    assert!(dark > n / 500, "{dark} dark pixels of {n}: no text?");
    if let Some(keep) = std::env::var_os("REPORT_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}
