//! The Prometheus / OpenMetrics text format as Strata's readers parse it:
//! samples with their labels and the families' `# TYPE`, counters and
//! histograms taken as differences from a baseline scrape, sums over
//! labels, a histogram's buckets. One parser for everyone who reads a
//! node's `/metrics` (the lab's scrapes, the simulator's calibration).
//! Owns the parsing; must not fetch anything nor know what a metric means.

use std::collections::BTreeMap;

/// One sample line: `name{labels} value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// Parsed metrics text.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub samples: Vec<Sample>,
    /// Family name → type ("counter", "gauge", "histogram", ...).
    pub types: BTreeMap<String, String>,
}

/// A line of the text that is not a sample or a comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based.
    pub line: usize,
    pub msg: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "metrics line {}: {}", self.line, self.msg)
    }
}

impl std::error::Error for ParseError {}

type Labels = Vec<(String, String)>;

fn parse_labels(s: &str, line: usize) -> Result<(Labels, &str), ParseError> {
    let bad = |msg: &str| ParseError {
        line,
        msg: msg.to_string(),
    };
    let mut labels = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        }
        let eq = rest.find('=').ok_or_else(|| bad("label without '='"))?;
        let key = rest[..eq].trim().to_string();
        rest = rest[eq + 1..].trim_start();
        let body = rest
            .strip_prefix('"')
            .ok_or_else(|| bad("label value not quoted"))?;
        let mut val = String::new();
        let mut chars = body.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => val.push('\n'),
                    Some((_, c)) => val.push(c),
                    None => return Err(bad("unterminated label value")),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => val.push(c),
                None => return Err(bad("unterminated label value")),
            }
        };
        labels.push((key, val));
        rest = &body[end + 1..];
    }
}

/// Parse the Prometheus / OpenMetrics text format (samples and `# TYPE`).
pub fn parse_metrics(text: &str) -> Result<Metrics, ParseError> {
    let mut m = Metrics::default();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let mut it = c.split_whitespace();
            if it.next() == Some("TYPE") {
                if let (Some(name), Some(ty)) = (it.next(), it.next()) {
                    m.types.insert(name.to_string(), ty.to_string());
                }
            }
            continue;
        }
        let name_end = line.find(['{', ' ', '\t']).ok_or(ParseError {
            line: n + 1,
            msg: "a sample without a value".into(),
        })?;
        let name = line[..name_end].to_string();
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end + 1..], n + 1)?
        } else {
            (Vec::new(), &line[name_end..])
        };
        let tok = rest.split_whitespace().next().ok_or(ParseError {
            line: n + 1,
            msg: "a sample without a value".into(),
        })?;
        let value: f64 = tok.parse().map_err(|_| ParseError {
            line: n + 1,
            msg: format!("bad value {tok:?}"),
        })?;
        m.samples.push(Sample {
            name,
            labels,
            value,
        });
    }
    Ok(m)
}

impl Metrics {
    /// The type of the family `sample` belongs to (`# TYPE`), by its
    /// name with a suffix (`_total`, `_bucket`, ...) or without.
    pub fn family(&self, sample: &str) -> Option<&str> {
        for suffix in ["", "_total", "_bucket", "_sum", "_count", "_created"] {
            if let Some(base) = sample.strip_suffix(suffix) {
                if let Some(t) = self.types.get(base) {
                    return Some(t);
                }
            }
        }
        None
    }

    /// Counters and histograms minus a baseline scrape; gauges as they are.
    pub fn minus(&self, base: &Metrics) -> Metrics {
        let key = |s: &Sample| {
            let mut l = s.labels.clone();
            l.sort();
            (s.name.clone(), l)
        };
        let before: BTreeMap<_, f64> = base.samples.iter().map(|s| (key(s), s.value)).collect();
        let samples = self
            .samples
            .iter()
            .map(|s| {
                let mut s = s.clone();
                if self.family(&s.name) != Some("gauge") {
                    if let Some(b) = before.get(&key(&s)) {
                        s.value -= b;
                    }
                }
                s
            })
            .collect();
        Metrics {
            samples,
            types: self.types.clone(),
        }
    }

    /// The sum of every sample named `name` whose labels pass `keep`.
    pub fn sum(&self, name: &str, keep: impl Fn(&[(String, String)]) -> bool) -> Option<f64> {
        let mut found = false;
        let mut s = 0.0;
        for x in self
            .samples
            .iter()
            .filter(|x| x.name == name && keep(&x.labels))
        {
            found = true;
            s += x.value;
        }
        found.then_some(s)
    }

    pub fn get(&self, name: &str) -> Option<f64> {
        self.sum(name, |_| true)
    }

    /// A histogram family summed over its labels: sorted (le, cumulative
    /// count), sum and count.
    pub fn histogram(&self, base: &str) -> Option<Hist> {
        let bname = format!("{base}_bucket");
        let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for x in self.samples.iter().filter(|x| x.name == bname) {
            let le = x
                .labels
                .iter()
                .find(|(k, _)| k == "le")?
                .1
                .parse::<f64>()
                .ok()?;
            let e = by_le.entry(le.to_bits() ^ (1 << 63)).or_insert((le, 0.0));
            e.1 += x.value;
        }
        if by_le.is_empty() {
            return None;
        }
        let mut buckets: Vec<(f64, f64)> = by_le.into_values().collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(Hist {
            buckets,
            sum: self.get(&format!("{base}_sum")).unwrap_or(0.0),
            count: self.get(&format!("{base}_count")).unwrap_or(0.0),
        })
    }
}

#[derive(Clone, Debug)]
pub struct Hist {
    /// (upper bound, cumulative count), increasing.
    pub buckets: Vec<(f64, f64)>,
    pub sum: f64,
    pub count: f64,
}

impl Hist {
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }
}
