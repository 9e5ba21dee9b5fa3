//! `strata report dashboard`: the panels of a Grafana dashboard (its JSON
//! model, `deploy/grafana/strata.json`) rendered from a real Prometheus's
//! data, without Grafana: each panel's queries are asked of
//! `/api/v1/query_range` and drawn as line charts with plotters, in a grid
//! of one SVG, rows as in the dashboard. Owns fetching the ranges and
//! drawing them; must not compute anything beyond what the queries return.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use plotters::prelude::*;

use super::charts::NODES;
use strata_client::control;

/// The dashboard shipped in `deploy/grafana/`, as built into the binary.
pub const SHIPPED: &str = include_str!("../../../../deploy/grafana/strata.json");

#[derive(clap::Args, Clone, Debug)]
pub struct DashboardArgs {
    /// The Prometheus that scrapes the nodes, e.g. http://127.0.0.1:9090.
    #[arg(long)]
    pub prometheus: String,
    /// A dashboard's JSON model to draw instead of the shipped one
    /// (`deploy/grafana/strata.json`, built into the binary, so it is found
    /// wherever `strata` runs from).
    #[arg(long)]
    pub dashboard: Option<std::path::PathBuf>,
    /// How far back to draw (10m; a bare number is seconds).
    #[arg(long, default_value = "10m", value_parser = crate::units::duration)]
    pub last: Duration,
    /// Where to write the SVG.
    #[arg(long, default_value = "dashboard.svg")]
    pub out: std::path::PathBuf,
}

/// One line of a panel.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    /// (seconds since the start, value)
    pub points: Vec<(f64, f64)>,
}

#[derive(Clone, Debug)]
pub struct Panel {
    pub title: String,
    pub unit: String,
    pub series: Vec<Series>,
}

/// A row of panels under its title.
#[derive(Clone, Debug)]
pub struct Row {
    pub title: String,
    pub panels: Vec<Panel>,
}

/// Fetch every panel's queries over `[end - last, end]`.
pub fn fetch(
    prometheus: &str,
    dashboard: &serde_json::Value,
    last: Duration,
) -> Result<Vec<Row>, String> {
    let end = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs_f64();
    let start = end - last.as_secs_f64();
    // About 120 points a line.
    let step = (last.as_secs_f64() / 120.0).max(1.0);
    let mut rows: Vec<Row> = Vec::new();
    for p in dashboard["panels"]
        .as_array()
        .ok_or("the dashboard has no panels")?
    {
        let title = p["title"].as_str().unwrap_or("").to_string();
        if p["type"] == "row" {
            rows.push(Row {
                title,
                panels: Vec::new(),
            });
            continue;
        }
        let mut series = Vec::new();
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().ok_or("a target without expr")?;
            let legend = t["legendFormat"].as_str().unwrap_or("");
            let mut path = String::from("/api/v1/query_range?query=");
            strata_api::query::encode_into(&mut path, expr);
            path.push_str(&format!("&start={start:.3}&end={end:.3}&step={step}"));
            let v: serde_json::Value =
                control::json("GET", prometheus, &path, 200, Duration::from_secs(30))?;
            for r in v["data"]["result"].as_array().into_iter().flatten() {
                series.push(Series {
                    name: legend_of(legend, &r["metric"]),
                    points: r["values"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|p| {
                            let t = p[0].as_f64()?;
                            let v: f64 = p[1].as_str()?.parse().ok()?;
                            v.is_finite().then_some((t - start, v))
                        })
                        .collect(),
                });
            }
        }
        let panel = Panel {
            title,
            unit: p["fieldConfig"]["defaults"]["unit"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            series,
        };
        match rows.last_mut() {
            Some(r) => r.panels.push(panel),
            None => rows.push(Row {
                title: String::new(),
                panels: vec![panel],
            }),
        }
    }
    Ok(rows)
}

/// A legend format's `{{label}}`s filled from a series' labels.
fn legend_of(format: &str, metric: &serde_json::Value) -> String {
    let mut out = format.to_string();
    if let Some(m) = metric.as_object() {
        for (k, v) in m {
            out = out.replace(&format!("{{{{{k}}}}}"), v.as_str().unwrap_or(""));
        }
    }
    if out.is_empty() {
        "value".into()
    } else {
        out
    }
}

const PANEL_W: u32 = 420;
const PANEL_H: u32 = 230;
const ROW_TITLE: u32 = 28;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("dashboard: {e:?}")
}

/// Scale a panel's values for its unit and their largest magnitude `top`:
/// (factor, axis suffix). Bytes take the largest binary unit that keeps
/// the top at 1 or more (a disk's free space in GiB, a hint queue in KiB);
/// seconds are shown in ms below 10 s.
fn scaled(unit: &str, top: f64) -> (f64, &'static str) {
    const UNITS: [(f64, &str); 4] = [
        ((1u64 << 30) as f64, " GiB"),
        ((1u64 << 20) as f64, " MiB"),
        ((1u64 << 10) as f64, " KiB"),
        (1.0, " B"),
    ];
    match unit {
        "s" if top >= 10.0 => (1.0, " s"),
        "s" => (1000.0, " ms"),
        "bytes" => UNITS
            .iter()
            .find(|(size, _)| top >= *size)
            .map_or((1.0, " B"), |&(size, suffix)| (1.0 / size, suffix)),
        "percentunit" => (100.0, " %"),
        _ => (1.0, ""),
    }
}

/// The rows as one SVG: three panels a line, each a line chart.
pub fn render(title: &str, rows: &[Row]) -> Result<String, String> {
    const COLS: u32 = 3;
    let lines: u32 = rows
        .iter()
        .map(|r| r.panels.len().div_ceil(COLS as usize) as u32)
        .sum();
    let w = PANEL_W * COLS;
    let h = 40 + rows.len() as u32 * ROW_TITLE + lines * PANEL_H;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        root.draw(&Text::new(title, (10, 10), ("sans-serif", 22).into_font()))
            .map_err(err)?;
        let mut y = 40u32;
        for row in rows {
            root.draw(&Text::new(
                row.title.as_str(),
                (10, y as i32 + 6),
                ("sans-serif", 17).into_font().style(FontStyle::Bold),
            ))
            .map_err(err)?;
            y += ROW_TITLE;
            for (i, p) in row.panels.iter().enumerate() {
                let (col, line) = (i as u32 % COLS, i as u32 / COLS);
                let area = root
                    .clone()
                    .shrink((col * PANEL_W, y + line * PANEL_H), (PANEL_W, PANEL_H));
                panel(&area, p)?;
            }
            y += row.panels.len().div_ceil(COLS as usize) as u32 * PANEL_H;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

fn panel(area: &DrawingArea<SVGBackend, plotters::coord::Shift>, p: &Panel) -> Result<(), String> {
    let top = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.1.abs()))
        .fold(0.0f64, f64::max);
    let (k, suffix) = scaled(&p.unit, top);
    let xs = p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0));
    let x_hi = xs.fold(1.0f64, f64::max);
    let ys = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.1 * k));
    let (y_lo, y_hi) = ys.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let y_hi = if y_hi <= y_lo { y_lo + 1.0 } else { y_hi * 1.1 };
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(22)
        .y_label_area_size(52)
        .build_cartesian_2d(0.0..x_hi, y_lo..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .x_labels(5)
        .y_labels(5)
        .x_label_formatter(&|v| format!("{v:.0}s"))
        .y_label_formatter(&|v| format!("{}{suffix}", short(*v)))
        .label_style(("sans-serif", 11))
        .draw()
        .map_err(err)?;
    for (n, s) in p.series.iter().enumerate() {
        let c = NODES[n % NODES.len()];
        chart
            .draw_series(LineSeries::new(
                s.points.iter().map(|&(t, v)| (t, v * k)),
                c.stroke_width(2),
            ))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(2)));
    }
    if !p.series.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 10))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Run `strata report dashboard`.
pub fn run(a: &DashboardArgs) -> Result<(), String> {
    let (text, name) = match &a.dashboard {
        Some(p) => (
            std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
            p.display().to_string(),
        ),
        None => (SHIPPED.to_string(), "the shipped dashboard".to_string()),
    };
    let d: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{name}: {e}"))?;
    let rows = fetch(&a.prometheus, &d, a.last)?;
    let title = d["title"].as_str().unwrap_or("dashboard");
    let svg = render(&format!("{title}: the last {:?}", a.last), &rows)?;
    std::fs::write(&a.out, svg).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let lines: usize = rows
        .iter()
        .flat_map(|r| &r.panels)
        .map(|p| p.series.len())
        .sum();
    println!(
        "{} panels, {lines} lines: {}",
        rows.iter().map(|r| r.panels.len()).sum::<usize>(),
        a.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legends_take_the_series_labels_and_every_panel_is_drawn() {
        let m = serde_json::json!({"instance": "n1", "peer": "http://n2"});
        assert_eq!(legend_of("{{instance}} → {{peer}}", &m), "n1 → http://n2");
        assert_eq!(legend_of("", &m), "value");
        let rows = vec![Row {
            title: "Overview".into(),
            panels: (0..4)
                .map(|i| Panel {
                    title: format!("panel {i}"),
                    unit: "s".into(),
                    series: vec![Series {
                        name: "p99".into(),
                        points: (0..10).map(|t| (t as f64, 0.001 * t as f64)).collect(),
                    }],
                })
                .collect(),
        }];
        let svg = render("test", &rows).unwrap();
        for i in 0..4 {
            assert!(svg.contains(&format!("panel {i}")), "panel {i}");
        }
        assert!(svg.contains("Overview"));
        assert!(svg.contains(" ms"));
    }

    #[test]
    fn bytes_and_seconds_take_the_unit_their_largest_value_reads_best_in() {
        let gib = (1u64 << 30) as f64;
        assert_eq!(scaled("bytes", 20.0 * gib), (1.0 / gib, " GiB"));
        assert_eq!(scaled("bytes", 0.5 * gib).1, " MiB");
        assert_eq!(scaled("bytes", 3000.0).1, " KiB");
        assert_eq!(scaled("bytes", 0.0), (1.0, " B"));
        assert_eq!(scaled("s", 0.25), (1000.0, " ms"));
        assert_eq!(scaled("s", 30.0), (1.0, " s"));
        assert_eq!(scaled("percentunit", 0.5), (100.0, " %"));
    }
}
