//! Durations on the command line: every duration flag of the lab takes a
//! unit (`30s`, `1m`, `500ms`, `250us`, `2h`), and a bare number stays
//! seconds, as it always was (`strata_api::duration` reads them), and byte counts and large numbers for people; must not know which flag
//! it serves.

use std::time::Duration;

/// Seconds, from `1.5`, `30s`, `500ms`, `1m`, ...
pub fn seconds(s: &str) -> Result<f64, String> {
    Ok(strata_api::duration::parse_ns(s)? as f64 / 1e9)
}

/// A duration, from `1.5`, `30s`, `500ms`, `1m`, ...
pub fn duration(s: &str) -> Result<Duration, String> {
    strata_api::duration::parse(s)
}

pub use strata_ctl::units::bytes;

/// An integer with thousands separated by commas.
pub fn group(n: u64) -> String {
    let digits = n.to_string().into_bytes();
    let groups: Vec<&str> = digits
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).expect("ASCII digits"))
        .collect();
    groups.join(",")
}

/// A finite number above zero (NaN is not).
pub fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(seconds("30s").unwrap(), 30.0);
        assert_eq!(seconds("1m").unwrap(), 60.0);
        assert_eq!(seconds("500ms").unwrap(), 0.5);
        assert_eq!(seconds("2").unwrap(), 2.0);
        assert_eq!(seconds("0.25").unwrap(), 0.25);
        assert_eq!(duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(duration("2h").unwrap(), Duration::from_secs(7200));
        assert!(seconds("10 parsecs").unwrap_err().contains("unknown unit"));
        assert!(seconds("-1s").is_err());
        assert!(seconds("").is_err());
    }
}
