//! Distributions of times: what a scenario writes (`DistSpec`, serde) and
//! the compiled sampler the event loop draws from (`Sampler`). Constant,
//! uniform, normal clipped at zero, lognormal, exponential, gamma, and two
//! empirical forms: an HdrHistogram interval log (what `strata load --hdr`
//! writes) and bucket counts (a Prometheus histogram). Every form takes a
//! `shift` added after clipping, so "0.5 ms + Normal(1 ms, 0.1 ms), negative
//! draws taken as 0" is one distribution. Owns sampling and means; must not
//! know about stages, events or reports.

use std::path::Path;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use rand_distr::{Distribution, Exp1, Gamma, LogNormal, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::rng::SimRng;
use crate::units::Dur;

fn is_zero(d: &Dur) -> bool {
    d.0 == 0
}

/// A distribution of durations as a scenario writes it, e.g.
/// `{ dist = "normal", mean = "10ms", sd = "5ms", shift = "50ms" }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum DistSpec {
    Constant {
        value: Dur,
    },
    Uniform {
        min: Dur,
        max: Dur,
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: Dur,
    },
    /// Normal, negative draws taken as 0 (then shifted).
    Normal {
        mean: Dur,
        sd: Dur,
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: Dur,
    },
    /// Lognormal with this mean and standard deviation.
    Lognormal {
        mean: Dur,
        sd: Dur,
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: Dur,
    },
    Exponential {
        mean: Dur,
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: Dur,
    },
    /// Gamma with this mean and standard deviation (shape = (mean/sd)²).
    Gamma {
        mean: Dur,
        sd: Dur,
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: Dur,
    },
    /// An HdrHistogram interval log (`strata load --hdr`): all intervals,
    /// or those tagged `tag`, summed; values in `unit` (default "us", the
    /// lab's unit). A path is relative to the scenario file.
    Empirical {
        file: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unit: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tag: Option<String>,
        /// Multiply every draw (say 0.5 for a disk twice as fast).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scale: Option<f64>,
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: Dur,
    },
    /// Bucket counts, as a Prometheus histogram has them: `counts[i]`
    /// draws fell in (le_seconds[i-1], le_seconds[i]] (the first bucket
    /// starts at 0). A bucket is drawn by its count, then a value uniformly
    /// within it; draws in an infinite last bucket take its lower bound.
    Histogram {
        le_seconds: Vec<f64>,
        counts: Vec<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scale: Option<f64>,
        #[serde(default, skip_serializing_if = "is_zero")]
        shift: Dur,
    },
}

impl DistSpec {
    pub fn constant(d: Dur) -> DistSpec {
        DistSpec::Constant { value: d }
    }

    /// The same shape with every draw multiplied by `k` (a disk `k` times
    /// as slow): durations and shifts scaled, a file's or a histogram's
    /// draws through its `scale`.
    pub fn scaled(&self, k: f64) -> DistSpec {
        let d = |x: &Dur| Dur((x.0 as f64 * k).round().max(0.0) as u64);
        let sc = |s: &Option<f64>| Some(s.unwrap_or(1.0) * k);
        match self {
            DistSpec::Constant { value } => DistSpec::Constant { value: d(value) },
            DistSpec::Uniform { min, max, shift } => DistSpec::Uniform {
                min: d(min),
                max: d(max),
                shift: d(shift),
            },
            DistSpec::Normal { mean, sd, shift } => DistSpec::Normal {
                mean: d(mean),
                sd: d(sd),
                shift: d(shift),
            },
            DistSpec::Lognormal { mean, sd, shift } => DistSpec::Lognormal {
                mean: d(mean),
                sd: d(sd),
                shift: d(shift),
            },
            DistSpec::Exponential { mean, shift } => DistSpec::Exponential {
                mean: d(mean),
                shift: d(shift),
            },
            DistSpec::Gamma { mean, sd, shift } => DistSpec::Gamma {
                mean: d(mean),
                sd: d(sd),
                shift: d(shift),
            },
            DistSpec::Empirical {
                file,
                unit,
                tag,
                scale,
                shift,
            } => DistSpec::Empirical {
                file: file.clone(),
                unit: unit.clone(),
                tag: tag.clone(),
                scale: sc(scale),
                shift: d(shift),
            },
            DistSpec::Histogram {
                le_seconds,
                counts,
                scale,
                shift,
            } => DistSpec::Histogram {
                le_seconds: le_seconds.clone(),
                counts: counts.clone(),
                scale: sc(scale),
                shift: d(shift),
            },
        }
    }

    /// A short human form: "0.5ms + normal(1ms, 0.1ms)".
    pub fn describe(&self) -> String {
        let with_shift = |s: &Dur, body: String| {
            if s.0 == 0 {
                body
            } else {
                format!("{s} + {body}")
            }
        };
        match self {
            DistSpec::Constant { value } => value.to_string(),
            DistSpec::Uniform { min, max, shift } => {
                with_shift(shift, format!("uniform({min}, {max})"))
            }
            DistSpec::Normal { mean, sd, shift } => {
                with_shift(shift, format!("normal({mean}, {sd})"))
            }
            DistSpec::Lognormal { mean, sd, shift } => {
                with_shift(shift, format!("lognormal(mean {mean}, sd {sd})"))
            }
            DistSpec::Exponential { mean, shift } => {
                with_shift(shift, format!("exponential({mean})"))
            }
            DistSpec::Gamma { mean, sd, shift } => {
                with_shift(shift, format!("gamma(mean {mean}, sd {sd})"))
            }
            DistSpec::Empirical { file, tag, .. } => match tag {
                Some(t) => format!("empirical({file}, tag {t})"),
                None => format!("empirical({file})"),
            },
            DistSpec::Histogram { counts, .. } => {
                format!(
                    "histogram({} buckets, {} draws)",
                    counts.len(),
                    counts.iter().sum::<u64>()
                )
            }
        }
    }
}

/// A table of buckets: draw a bucket by cumulative count, then uniformly
/// within [lo, hi].
#[derive(Clone, Debug)]
pub struct Table {
    cum: Vec<u64>,
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl Table {
    fn total(&self) -> u64 {
        *self.cum.last().unwrap_or(&0)
    }

    fn mean(&self) -> f64 {
        let mut prev = 0;
        let mut s = 0.0;
        for i in 0..self.cum.len() {
            let c = self.cum[i] - prev;
            prev = self.cum[i];
            s += c as f64 * (self.lo[i] + self.hi[i]) / 2.0;
        }
        s / self.total() as f64
    }

    fn from_buckets(b: &[(f64, f64, u64)]) -> Result<Table, String> {
        let mut t = Table {
            cum: Vec::new(),
            lo: Vec::new(),
            hi: Vec::new(),
        };
        let mut acc = 0u64;
        for &(lo, hi, c) in b {
            if c == 0 {
                continue;
            }
            acc += c;
            t.cum.push(acc);
            t.lo.push(lo);
            t.hi.push(hi.max(lo));
        }
        if acc == 0 {
            return Err("empirical distribution with no draws".into());
        }
        Ok(t)
    }
}

#[derive(Clone, Debug)]
enum Kind {
    Const(f64),
    Uniform { lo: f64, width: f64 },
    Normal { mean: f64, sd: f64 },
    LogNormal(LogNormal<f64>, f64),
    Exp { mean: f64 },
    Gamma(Gamma<f64>, f64),
    Table(Table),
}

/// A compiled distribution of nanoseconds.
#[derive(Clone, Debug)]
pub struct Sampler {
    kind: Kind,
    scale: f64,
    shift: f64,
}

fn ns(d: Dur) -> f64 {
    d.0 as f64
}

impl Sampler {
    pub fn constant(v_ns: f64) -> Sampler {
        Sampler {
            kind: Kind::Const(v_ns),
            scale: 1.0,
            shift: 0.0,
        }
    }

    /// The same draws with `ns` added to each (negative: taken off, a
    /// draw never below 0).
    pub fn shifted(&self, ns: f64) -> Sampler {
        Sampler {
            kind: self.kind.clone(),
            scale: self.scale,
            shift: self.shift + ns,
        }
    }

    /// Compile a spec; files are read relative to `base` (the scenario's
    /// directory).
    pub fn compile(spec: &DistSpec, base: &Path) -> Result<Sampler, String> {
        let (kind, scale, shift) = match spec {
            DistSpec::Constant { value } => (Kind::Const(ns(*value)), 1.0, Dur::ZERO),
            DistSpec::Uniform { min, max, shift } => {
                if max < min {
                    return Err(format!("uniform: max {max} below min {min}"));
                }
                (
                    Kind::Uniform {
                        lo: ns(*min),
                        width: ns(*max) - ns(*min),
                    },
                    1.0,
                    *shift,
                )
            }
            DistSpec::Normal { mean, sd, shift } => (
                Kind::Normal {
                    mean: ns(*mean),
                    sd: ns(*sd),
                },
                1.0,
                *shift,
            ),
            DistSpec::Lognormal { mean, sd, shift } => {
                if mean.0 == 0 {
                    return Err("lognormal: mean must be > 0".into());
                }
                let m = ns(*mean);
                let d = LogNormal::from_mean_cv(m, ns(*sd) / m)
                    .map_err(|e| format!("lognormal: {e}"))?;
                (Kind::LogNormal(d, m), 1.0, *shift)
            }
            DistSpec::Exponential { mean, shift } => (Kind::Exp { mean: ns(*mean) }, 1.0, *shift),
            DistSpec::Gamma { mean, sd, shift } => {
                if mean.0 == 0 || sd.0 == 0 {
                    return Err("gamma: mean and sd must be > 0".into());
                }
                let (m, s) = (ns(*mean), ns(*sd));
                let shape = (m / s) * (m / s);
                let d = Gamma::new(shape, s * s / m).map_err(|e| format!("gamma: {e}"))?;
                (Kind::Gamma(d, m), 1.0, *shift)
            }
            DistSpec::Empirical {
                file,
                unit,
                tag,
                scale,
                shift,
            } => {
                let path = base.join(file);
                let unit_ns = match unit.as_deref().unwrap_or("us") {
                    "ns" => 1.0,
                    "us" | "µs" => 1e3,
                    "ms" => 1e6,
                    "s" => 1e9,
                    u => {
                        return Err(format!(
                            "empirical {file}: unknown unit {u:?} (ns, us, ms, s)"
                        ))
                    }
                };
                let h = read_hdr_log(&path, tag.as_deref())?;
                let t =
                    table_from_hdr(&h, unit_ns).map_err(|e| format!("{}: {e}", path.display()))?;
                (Kind::Table(t), scale.unwrap_or(1.0), *shift)
            }
            DistSpec::Histogram {
                le_seconds,
                counts,
                scale,
                shift,
            } => (
                Kind::Table(table_from_prom(le_seconds, counts)?),
                scale.unwrap_or(1.0),
                *shift,
            ),
        };
        if !(scale.is_finite() && scale >= 0.0) {
            return Err(format!("scale {scale} must be a finite number >= 0"));
        }
        Ok(Sampler {
            kind,
            scale,
            shift: ns(shift),
        })
    }

    /// One draw, in nanoseconds (rounded, never negative).
    #[inline]
    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        let x = match &self.kind {
            Kind::Const(v) => *v,
            Kind::Uniform { lo, width } => lo + width * rng.unit(),
            Kind::Normal { mean, sd } => {
                let z: f64 = StandardNormal.sample(rng);
                (mean + sd * z).max(0.0)
            }
            Kind::LogNormal(d, _) => d.sample(rng),
            Kind::Exp { mean } => {
                let e: f64 = Exp1.sample(rng);
                e * mean
            }
            Kind::Gamma(d, _) => d.sample(rng),
            Kind::Table(t) => {
                let r = rng.bits() % t.total();
                let i = t.cum.partition_point(|&c| c <= r);
                t.lo[i] + (t.hi[i] - t.lo[i]) * rng.unit()
            }
        };
        let v = x * self.scale + self.shift;
        // Round half up without a libm call (v >= 0 here).
        if v > 0.0 {
            (v + 0.5) as u64
        } else {
            0
        }
    }

    /// The mean in nanoseconds (exact for every form; the clipped normal
    /// counts its clipping).
    pub fn mean(&self) -> f64 {
        let m = match &self.kind {
            Kind::Const(v) => *v,
            Kind::Uniform { lo, width } => lo + width / 2.0,
            Kind::Normal { mean, sd } => clipped_normal_mean(*mean, *sd),
            // Both are built from the spec's mean.
            Kind::LogNormal(_, m) | Kind::Gamma(_, m) => *m,
            Kind::Exp { mean } => *mean,
            Kind::Table(t) => t.mean(),
        };
        m * self.scale + self.shift
    }
}

/// E[max(0, X)] for X ~ Normal(m, s).
pub fn clipped_normal_mean(m: f64, s: f64) -> f64 {
    if s <= 0.0 {
        return m.max(0.0);
    }
    let a = m / s;
    m * phi_cdf(a) + s * phi_pdf(a)
}

fn phi_pdf(x: f64) -> f64 {
    (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The standard normal CDF (Abramowitz & Stegun 7.1.26 on erf, |error| < 1e-7).
pub fn phi_cdf(x: f64) -> f64 {
    let z = x / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-z * z).exp();
    let erf = if z >= 0.0 { y } else { -y };
    0.5 * (1.0 + erf)
}

fn table_from_prom(le: &[f64], counts: &[u64]) -> Result<Table, String> {
    if le.len() != counts.len() {
        return Err(format!(
            "histogram: {} bounds (le_seconds) but {} counts",
            le.len(),
            counts.len()
        ));
    }
    let mut b = Vec::with_capacity(le.len());
    let mut prev = 0.0f64;
    for (&hi, &c) in le.iter().zip(counts) {
        if hi < prev || hi.is_nan() {
            return Err("histogram: le_seconds must increase".into());
        }
        let top = if hi.is_finite() { hi } else { prev };
        b.push((prev * 1e9, top * 1e9, c));
        prev = top;
    }
    Table::from_buckets(&b)
}

fn table_from_hdr(h: &Histogram<u64>, unit_ns: f64) -> Result<Table, String> {
    let mut b = Vec::new();
    for v in h.iter_recorded() {
        let x = v.value_iterated_to();
        let lo = h.lowest_equivalent(x) as f64 * unit_ns;
        let hi = h.highest_equivalent(x) as f64 * unit_ns;
        b.push((lo, hi, v.count_at_value()));
    }
    Table::from_buckets(&b)
}

/// Sum the histograms of an HdrHistogram interval log (those tagged `tag`,
/// or all).
pub fn read_hdr_log(path: &Path, tag: Option<&str>) -> Result<Histogram<u64>, String> {
    let p = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("{p}: {e}"))?;
    let mut total: Option<Histogram<u64>> = None;
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let entry = entry.map_err(|_| format!("{p}: not an HdrHistogram interval log"))?;
        let LogEntry::Interval(iv) = entry else {
            continue;
        };
        if let Some(want) = tag {
            if iv.tag().map(|t| t.as_str()) != Some(want) {
                continue;
            }
        }
        let raw = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(iv.encoded_histogram().trim())
                .map_err(|e| format!("{p}: bad base64: {e}"))?
        };
        let h: Histogram<u64> = de
            .deserialize(&mut &raw[..])
            .map_err(|e| format!("{p}: bad histogram: {e:?}"))?;
        match &mut total {
            Some(t) => t.add(&h).map_err(|e| format!("{p}: {e:?}"))?,
            None => {
                let mut t = Histogram::new_from(&h);
                t.add(&h).map_err(|e| format!("{p}: {e:?}"))?;
                t.auto(true);
                total = Some(t);
            }
        }
    }
    let what = tag.map(|t| format!(" tagged {t:?}")).unwrap_or_default();
    total
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("{p}: no recorded values{what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_and_clipped_mean() {
        assert!((phi_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((phi_cdf(1.96) - 0.975).abs() < 1e-4);
        // The seed's store: E[max(0, N(10, 5))] = 10.0425 ms.
        assert!((clipped_normal_mean(10.0, 5.0) - 10.0425).abs() < 1e-3);
    }

    #[test]
    fn spec_roundtrip() {
        let s: DistSpec =
            toml::from_str("dist = \"normal\"\nmean = \"1ms\"\nsd = \"0.1ms\"\nshift = \"0.5ms\"")
                .unwrap();
        assert_eq!(s.describe(), "500us + normal(1ms, 100us)");
        let back: DistSpec = toml::from_str(&toml::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        let bad = toml::from_str::<DistSpec>("dist = \"normal\"\nmean = \"1ms\"\nstddev = \"1ms\"");
        assert!(bad.is_err());
    }
}
