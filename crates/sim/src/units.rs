//! Durations as scenarios write them ("1ms", "0.5ms", "60s", "250us"; a bare
//! number means seconds) and the number formats the reports share. Owns
//! parsing and formatting only; must not know about stages or runs.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration in integer nanoseconds, the simulator's unit of time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub u64);

impl Dur {
    pub const ZERO: Dur = Dur(0);

    pub fn from_secs_f64(s: f64) -> Dur {
        Dur((s * 1e9).round().max(0.0) as u64)
    }

    pub fn ns(self) -> u64 {
        self.0
    }

    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Parse "1.5ms", "60s", "2m", "100us", "250ns", "1h" or a bare number
    /// of seconds.
    pub fn parse(s: &str) -> Result<Dur, String> {
        strata_api::duration::parse_ns(s).map(Dur)
    }
}

impl fmt::Display for Dur {
    /// The shortest exact form: "1.5ms", "60s", "100us", "250ns".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            return f.write_str("0s");
        }
        for (unit, scale) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
            if ns >= scale {
                // Exact with at most 3 decimals, else fall through to a finer unit.
                if ns.is_multiple_of(scale / 1000) {
                    let v = ns as f64 / scale as f64;
                    return write!(f, "{}{unit}", trim_float(v));
                }
            }
        }
        write!(f, "{ns}ns")
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration like \"1.5ms\" or a number of seconds")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
                Dur::parse(v).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                if v.is_finite() && v >= 0.0 {
                    Ok(Dur::from_secs_f64(v))
                } else {
                    Err(E::custom(format!("bad duration {v}")))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
                self.visit_f64(v as f64)
            }
        }
        d.deserialize_any(V)
    }
}

/// A time in nanoseconds for people: "61.7 ms", "3.02 s", "850 µs".
pub fn human_ns(ns: f64) -> String {
    let a = ns.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e9 {
        format!("{} s", sig(ns / 1e9))
    } else if a >= 1e6 {
        format!("{} ms", sig(ns / 1e6))
    } else if a >= 1e3 {
        format!("{} µs", sig(ns / 1e3))
    } else {
        format!("{} ns", sig(ns))
    }
}

/// Three or four significant figures, no exponent.
pub fn sig(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        grouped(v.round() as i64)
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A rate in requests per second: "129.7", "59,002", "∞".
pub fn rate(v: f64) -> String {
    if !v.is_finite() {
        "∞".into()
    } else if v >= 10_000.0 {
        grouped(v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

/// An integer with thousands separators: 1,234,567.
pub fn grouped(v: i64) -> String {
    let s = v.unsigned_abs().to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3 + 1);
    if v < 0 {
        out.push('-');
    }
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format() {
        assert_eq!(Dur::parse("1.5ms").unwrap(), Dur(1_500_000));
        assert_eq!(Dur::parse("60s").unwrap(), Dur(60_000_000_000));
        assert_eq!(Dur::parse("0.1ms").unwrap(), Dur(100_000));
        assert_eq!(Dur::parse("250ns").unwrap(), Dur(250));
        assert_eq!(Dur::parse("2").unwrap(), Dur(2_000_000_000));
        assert_eq!(Dur::parse("1h").unwrap(), Dur(3_600_000_000_000));
        assert!(Dur::parse("5 parsecs").is_err());
        assert!(Dur::parse("-1s").is_err());
        for s in [
            "1.5ms", "60s", "100us", "250ns", "0.5ms", "1.234s", "0s", "12.5us",
        ] {
            let d = Dur::parse(s).unwrap();
            assert_eq!(Dur::parse(&d.to_string()).unwrap(), d, "{s} -> {d}");
        }
        assert_eq!(Dur(500_000).to_string(), "500us");
        assert_eq!(Dur(1_500_000).to_string(), "1.5ms");
        assert_eq!(Dur(1_000_000_001).to_string(), "1000000.001us");
        assert_eq!(Dur(999).to_string(), "999ns");
    }

    #[test]
    fn numbers() {
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(-12), "-12");
        assert_eq!(human_ns(61_700_000.0), "61.70 ms");
        assert_eq!(rate(129.66), "129.7");
    }
}
