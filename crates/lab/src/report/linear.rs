//! The linearizability section of a report: its headline, the witness as
//! a table (Markdown) and as a timeline (HTML: one lane per client, each
//! operation a bar from its call to its return, the key's witness boxed
//! together), so that a reader sees why the operations cannot be ordered.
//! Owns that section's words and picture; must not decide anything.

use std::fmt::Write as _;

use super::escape::esc;
use super::model::LinearSummary;

/// One sentence: the verdict and what was checked.
pub fn headline(l: &LinearSummary) -> String {
    match l.verdict.as_str() {
        "linearizable" => format!(
            "Linearizable: every one of the {} shared keys ({} operations) has an order that respects real time and a register's rules.",
            l.keys, l.operations
        ),
        "unknown" => format!(
            "Undecided: {} of {} shared keys could not be decided in the time allowed (no violation found on the others); that is not a pass.",
            l.undecided, l.keys
        ),
        _ => format!(
            "Not linearizable: {} of {} shared keys have no order that respects real time and a register's rules; the smallest witness of each follows.",
            l.violated, l.keys
        ),
    }
}

/// The section in Markdown.
pub fn markdown(l: &LinearSummary) -> String {
    let mut s = format!(
        "\n### Linearizability\n\n{}\n\nAlgorithm: {}.\n",
        headline(l),
        l.algorithm
    );
    if !l.witness.is_empty() {
        s += "\n| key | client | operation | called (ms) | returned (ms) |\n|---|---:|---|---:|---:|\n";
        for w in &l.witness {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.3} | {:.3} |",
                w.key.replace('|', "\\|"),
                w.client,
                w.what.replace('|', "\\|"),
                w.start_ms,
                w.end_ms
            );
        }
    }
    s
}

/// The witnesses as an inline SVG timeline, one block per key.
pub fn timeline_svg(l: &LinearSummary) -> String {
    let mut keys: Vec<&str> = l.witness.iter().map(|w| w.key.as_str()).collect();
    keys.dedup();
    let mut out = String::new();
    for key in keys {
        let ops: Vec<_> = l.witness.iter().filter(|w| w.key == key).collect();
        let t0 = ops.iter().map(|w| w.start_ms).fold(f64::INFINITY, f64::min);
        let t1 = ops
            .iter()
            .map(|w| w.end_ms)
            .fold(f64::NEG_INFINITY, f64::max);
        let span = (t1 - t0).max(1e-3);
        let (w, lane, left, right) = (900.0, 34.0, 150.0, 20.0);
        let h = 40.0 + lane * ops.len() as f64;
        let x = |t: f64| left + (t - t0) / span * (w - left - right);
        let _ = write!(
            out,
            "<p>Key <code>{}</code>: {} operations that cannot be ordered (time runs right; each bar from call to return).</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n",
            esc(key),
            ops.len()
        );
        for (i, o) in ops.iter().enumerate() {
            let y = 20.0 + lane * i as f64;
            let (a, b) = (x(o.start_ms), x(o.end_ms).max(x(o.start_ms) + 2.0));
            let fill = if o.what.starts_with("GET") {
                "#9cc3e6"
            } else {
                "#f3b27a"
            };
            let _ = writeln!(
                out,
                "<text x=\"4\" y=\"{:.1}\">client {}</text><rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"18\" fill=\"{fill}\" stroke=\"#555\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                y + 13.0,
                o.client,
                y,
                b - a,
                a + 3.0,
                y + 13.0,
                esc(&o.what)
            );
        }
        let _ = write!(
            out,
            "<text x=\"{left}\" y=\"{:.1}\">{:.3} ms</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.3} ms</text>\n</svg>\n",
            h - 4.0,
            t0,
            w - right,
            h - 4.0,
            t1
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::model::WitnessOp;

    #[test]
    fn a_witness_is_drawn_and_tabled() {
        let op = |client, what: &str, a, b| WitnessOp {
            key: "\"lin/x\"".into(),
            client,
            what: what.into(),
            start_ms: a,
            end_ms: b,
        };
        let l = LinearSummary {
            verdict: "not linearizable".into(),
            keys: 8,
            operations: 100,
            violated: 1,
            undecided: 0,
            algorithm: "a".into(),
            witness: vec![
                op(0, "PUT \"a\"", 0.0, 10.0),
                op(1, "PUT \"b\"", 20.0, 30.0),
                op(2, "GET -> \"a\"", 40.0, 50.0),
            ],
            text: String::new(),
        };
        let svg = timeline_svg(&l);
        assert_eq!(svg.matches("<rect").count(), 3);
        assert!(svg.contains("GET -&gt; &quot;a&quot;"), "{svg}");
        let md = markdown(&l);
        assert!(md.contains("Not linearizable: 1 of 8"), "{md}");
        assert_eq!(md.matches("| PUT").count() + md.matches("| GET").count(), 3);
    }
}
