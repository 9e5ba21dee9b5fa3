//! `report.html`: one self-contained page (inline CSS, inline SVG, no
//! scripts, nothing fetched from elsewhere) with the same facts, tables
//! (per node too), faults, consistency check, notes and result as
//! `report.md`, plus the charts. Owns the page's markup only; must not
//! compute what the tables say (`markdown/` does) nor draw (`charts/`
//! does).

use super::charts::{self, Chart};
use super::markdown::{self, Table};
use super::model::Report;

pub use super::escape::esc;

const STYLE: &str = "
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.3em; }
h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
code { background: #f4f4f4; padding: 0 0.25em; border-radius: 3px; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; }
td.no { background: #fde0dc; }
td.yes { background: #e3f4e1; }
figure { margin: 1.5em 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #555; margin-top: 0.3em; }
.verdict { background: #f7f7ff; border-left: 4px solid #88a; padding: 0.5em 1em; }
p.passed { background: #e3f4e1; border-left: 4px solid #4a4; padding: 0.5em 1em; }
p.failed { background: #fde0dc; border-left: 4px solid #c44; padding: 0.5em 1em; }
p.method { white-space: pre-line; }
pre { background: #f7f7f7; border: 1px solid #e4e4e4; padding: 0.6em 0.8em; overflow-x: auto; font-size: 0.88em; }
";

fn table(t: &Table) -> String {
    let slo_col = t.header.iter().position(|h| h == "SLO met");
    let mut s = String::from("<table>\n<thead><tr>");
    for h in &t.header {
        s += &format!("<th>{}</th>", esc(h));
    }
    s += "</tr></thead>\n<tbody>\n";
    for r in &t.rows {
        s += "<tr>";
        for (i, c) in r.iter().enumerate() {
            let class = match (Some(i) == slo_col, c.as_str()) {
                (true, "yes") => " class=\"yes\"",
                (true, "no") => " class=\"no\"",
                _ => "",
            };
            s += &format!("<td{class}>{}</td>", esc(c));
        }
        s += "</tr>\n";
    }
    s + "</tbody>\n</table>\n"
}

/// Plotters writes a standalone SVG document; inside HTML the namespace
/// attribute is implied, and leaving it out keeps the page free of URLs.
fn inline_svg(svg: &str) -> String {
    svg.replace(" xmlns=\"http://www.w3.org/2000/svg\"", "")
}

fn figure(c: &Chart) -> String {
    format!(
        "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
        c.id,
        inline_svg(&c.svg),
        esc(&c.caption)
    )
}

/// The whole page. Fails only if a chart cannot be drawn.
pub fn render(r: &Report) -> Result<String, String> {
    let mut charts = charts::all(r)?;
    charts.extend(super::evidence::all(r)?);
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(&r.title),
        esc(&r.title)
    );
    s += "<dl class=\"facts\">\n";
    for (k, v) in markdown::facts(r) {
        let v = if k == "Command" || k == "Target" {
            format!("<code>{}</code>", esc(&v))
        } else {
            esc(&v)
        };
        s += &format!("<dt>{}</dt><dd>{v}</dd>\n", esc(k));
    }
    s += "</dl>\n";
    let result = markdown::result(r);
    if !result.is_empty() {
        s += "<h2>Result</h2>\n<div class=\"verdict\">\n";
        for p in result {
            s += &format!("<p>{}</p>\n", esc(&p));
        }
        s += "</div>\n";
    }
    if let Some(t) = markdown::ranking_table(r) {
        s += &format!(
            "<h3>The causes ranked</h3>\n<p>{}</p>\n",
            esc(markdown::RANKING_INTRO)
        );
        s += &table(&t);
    }
    if let Some(t) = markdown::model_table(r) {
        s += &format!(
            "<h3>The model against the sweep</h3>\n<p>{}</p>\n",
            esc(markdown::MODEL_INTRO)
        );
        s += &table(&t);
    }
    s += &format!(
        "<h2>Trials</h2>\n<p>{}</p>\n",
        esc(&markdown::trials_intro(r))
    );
    s += &table(&markdown::trial_table(r));
    if let Some(t) = markdown::op_table(r) {
        s += "<h2>Per operation</h2>\n";
        s += &table(&t);
    }
    if let Some(t) = markdown::node_table(r) {
        s += &format!("<h2>Per node</h2>\n<p>{}</p>\n", esc(markdown::NODE_INTRO));
        s += &table(&t);
    }
    if let Some(t) = markdown::fault_table(r) {
        s += &format!("<h2>Faults</h2>\n<p>{}</p>\n", esc(markdown::FAULT_INTRO));
        s += &table(&t);
        s += "<ul>\n";
        for f in markdown::fault_sentences(r) {
            s += &format!("<li>{}</li>\n", esc(&f));
        }
        s += "</ul>\n";
    }
    if let Some(c) = &r.check {
        let class = if c.passed { "passed" } else { "failed" };
        s += &format!(
            "<h2>Consistency check</h2>\n<p class=\"{class}\">{}</p>\n",
            esc(&markdown::check_headline(c))
        );
        s += &table(&markdown::check_table(c));
        if !c.method.trim().is_empty() {
            s += &format!("<p class=\"method\">Method: {}</p>\n", esc(c.method.trim()));
        }
        if !c.text.trim().is_empty() {
            s += &format!(
                "<p>The checker's report:</p>\n<pre>{}</pre>\n",
                esc(c.text.trim_end())
            );
        }
        if let Some(l) = &c.linear {
            s += &format!(
                "<h3>Linearizability</h3>\n<p class=\"{}\">{}</p>\n<p class=\"method\">Algorithm: {}.</p>\n{}",
                if l.verdict == "linearizable" { "passed" } else { "failed" },
                esc(&super::linear::headline(l)),
                esc(&l.algorithm),
                super::linear::timeline_svg(l)
            );
        }
    }
    let notes = markdown::notes(r);
    if !notes.is_empty() {
        s += "<h2>Notes</h2>\n<ul>\n";
        for n in notes {
            s += &format!("<li>{}</li>\n", esc(&n));
        }
        s += "</ul>\n";
    }
    s += "<h2>Charts</h2>\n";
    for c in &charts {
        s += &figure(c);
    }
    s += "</body>\n</html>\n";
    Ok(s)
}
