//! Durations as every Strata command line takes them: a number and a
//! unit (`30s`, `1m`, `500ms`, `250us`, `2h`, `1.5`), a bare number being
//! seconds. The simulator's scenario files, the lab's flags and the
//! operator commands all read them here. Owns the grammar; must not know
//! which flag it serves.

/// Nanoseconds, from `1.5`, `30s`, `500ms`, `250us`, `1m`, `2h`, ...
pub fn parse_ns(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    // "1e" would swallow the unit of "1e3ms"; units never start with 'e'.
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {s:?}: expected a number and a unit like 1.5ms"))?;
    let scale = match unit.trim() {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        u => {
            return Err(format!(
                "bad duration {s:?}: unknown unit {u:?} (ns, us, ms, s, m, h)"
            ))
        }
    };
    if !v.is_finite() || v < 0.0 {
        return Err(format!("bad duration {s:?}: must be a finite number >= 0"));
    }
    Ok((v * scale).round() as u64)
}

/// A duration, from `1.5`, `30s`, `500ms`, `1m`, ...
pub fn parse(s: &str) -> Result<std::time::Duration, String> {
    parse_ns(s).map(std::time::Duration::from_nanos)
}

#[cfg(test)]
mod tests {
    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(super::parse_ns("1.5").unwrap(), 1_500_000_000);
        assert_eq!(super::parse_ns("250us").unwrap(), 250_000);
        assert_eq!(super::parse_ns("2h").unwrap(), 7_200_000_000_000);
        assert!(super::parse_ns("3 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(super::parse_ns("-1s").is_err());
    }
}
