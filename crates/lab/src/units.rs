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

    #[test]
    fn every_duration_flag_takes_units() {
        use clap::Parser;
        #[derive(Parser)]
        struct Sweep {
            #[command(flatten)]
            a: crate::sweep::SweepArgs,
        }
        #[derive(Parser)]
        struct Load {
            #[command(flatten)]
            a: crate::load::LoadArgs,
        }
        let s = Sweep::try_parse_from([
            "x",
            "http://a:1",
            "--duration",
            "30s",
            "--warmup",
            "1m",
            "--pause",
            "500ms",
        ])
        .unwrap();
        assert_eq!(
            (s.a.duration, s.a.target.warmup, s.a.pause),
            (30.0, 60.0, 0.5)
        );
        let s = Sweep::try_parse_from(["x", "http://a:1", "--duration", "7"]).unwrap();
        assert_eq!((s.a.duration, s.a.target.warmup), (7.0, 0.0));
        let l = Load::try_parse_from([
            "x",
            "http://a:1",
            "--clients",
            "4",
            "--think",
            "250ms",
            "--duration",
            "2m",
            "--drop-after",
            "250ms",
        ])
        .unwrap();
        assert_eq!((l.a.think, l.a.duration), (0.25, 120.0));
        assert_eq!(l.a.target.drop_after, 0.25);
        let l = Load::try_parse_from(["x", "http://a:1", "--fault", "pause:1@1m+500ms"]).unwrap();
        assert_eq!(l.a.during.faults[0].at, Duration::from_secs(60));
        assert_eq!(l.a.during.faults[0].hold, Some(Duration::from_millis(500)));
        assert!(Load::try_parse_from(["x", "http://a:1", "--duration", "3 fortnights"]).is_err());
    }
}
