//! Durations on the command line: every duration flag of the lab takes a
//! unit (`30s`, `1m`, `500ms`, `250us`, `2h`), and a bare number stays
//! seconds, as it always was (`strata_api::duration` reads them); instants
//! (`--start-at`: RFC 3339 in UTC, Unix seconds, or a delay from now) and
//! their RFC 3339 form in reports (both read and written by the `time`
//! crate, not by hand); a run's share (`I/N`); byte counts and large
//! numbers for people (`group`, `fmt_num`). Must not know which flag it
//! serves.

use std::time::{Duration, SystemTime};

use time::format_description::well_known::Rfc3339;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::OffsetDateTime;

/// Seconds, from `1.5`, `30s`, `500ms`, `1m`, ...
pub fn seconds(s: &str) -> Result<f64, String> {
    Ok(strata_api::duration::parse_ns(s)? as f64 / 1e9)
}

/// A duration, from `1.5`, `30s`, `500ms`, `1m`, ...
pub fn duration(s: &str) -> Result<Duration, String> {
    strata_api::duration::parse(s)
}

pub use strata_api::human::bytes;

/// An integer with thousands separated by commas (the checker's own).
pub use strata_check::group;

/// A finite number above zero (NaN is not).
pub fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// A share of a run as written (`--segment`, reports, interval logs):
/// `I/N`, the I-th (from 1) of N; returns (I − 1, N), unchecked beyond
/// 1 ≤ I ≤ N.
pub fn share(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("{s:?}: expected I/N, the I-th of N shares (1 <= I <= N), e.g. 2/4");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: u64 = i.trim().parse().map_err(|_| bad())?;
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    if i == 0 || i > n {
        return Err(bad());
    }
    Ok((i - 1, n))
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC (to the millisecond).
pub fn rfc3339_ms(t: SystemTime) -> String {
    utc(
        t,
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"),
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ` in UTC.
pub fn rfc3339(t: SystemTime) -> String {
    utc(
        t,
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z"),
    )
}

/// `t` in UTC as `format` writes it (`time`): an instant before 1970 as
/// 1970's first, one past the year 9999 as `@UNIX_SECONDS` (what `instant`
/// reads back).
fn utc(t: SystemTime, format: &[BorrowedFormatItem<'_>]) -> String {
    let since = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    time::Duration::try_from(since)
        .ok()
        .and_then(|d| OffsetDateTime::UNIX_EPOCH.checked_add(d))
        .and_then(|d| d.format(format).ok())
        .unwrap_or_else(|| format!("@{}", since.as_secs()))
}

/// An instant on the wall clock, from `2026-11-28T22:00:00Z` (RFC 3339,
/// read by `time`: fractions of a second and a `+HH:MM` offset allowed, a
/// date that does not exist refused), `@1795900000` (Unix seconds) or
/// `+30s` (that long from now).
pub fn instant(s: &str) -> Result<SystemTime, String> {
    let s = s.trim();
    if let Some(d) = s.strip_prefix('+') {
        return Ok(SystemTime::now() + duration(d)?);
    }
    if let Some(u) = s.strip_prefix('@') {
        let secs: f64 = u
            .parse()
            .map_err(|_| format!("{s:?}: expected Unix seconds after @"))?;
        return Duration::try_from_secs_f64(secs)
            .map(|d| SystemTime::UNIX_EPOCH + d)
            .map_err(|e| format!("{s:?}: {e}"));
    }
    OffsetDateTime::parse(s, &Rfc3339)
        .map(SystemTime::from)
        .map_err(|e| {
            format!(
                "{s:?}: not a time ({e}): expected a time as 2026-11-28T22:00:00Z (RFC 3339), @UNIX_SECONDS or +DELAY"
            )
        })
}

/// A number with at most 3 significant decimals and no trailing zeros.
pub fn fmt_num(v: f64) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
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
    fn rfc3339_dates() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_350_896);
        assert_eq!(rfc3339(t), "2026-11-22T12:34:56Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
        let ms = t + Duration::from_millis(7);
        assert_eq!(rfc3339_ms(ms), "2026-11-22T12:34:56.007Z");
    }

    #[test]
    fn instants_read_back_what_reports_write() {
        for secs in [0u64, 951_782_400, 1_795_350_896, 4_102_444_799] {
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
            assert_eq!(instant(&rfc3339(t)), Ok(t), "{}", rfc3339(t));
            let ms = t + Duration::from_millis(250);
            assert_eq!(instant(&rfc3339_ms(ms)), Ok(ms));
        }
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_350_896);
        assert_eq!(instant("2026-11-22T14:34:56+02:00"), Ok(t));
        assert_eq!(instant("@1795350896"), Ok(t));
        let soon = instant("+2s").unwrap();
        let d = soon.duration_since(SystemTime::now()).unwrap();
        assert!(
            d <= Duration::from_secs(2) && d > Duration::from_secs(1),
            "{d:?}"
        );
        for bad in [
            "",
            "tomorrow",
            "2026-11-22",
            "2026-11-22T12:34:56",
            "2026-13-22T12:34:56Z",
            "2026-11-22T25:34:56Z",
            "2026-11-22T12:34:56.Z",
            "2026-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "@x",
            "+forever",
        ] {
            assert!(instant(bad).is_err(), "{bad}");
        }
        assert_eq!(
            instant("2028-02-29T00:00:00Z"),
            Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(1_835_395_200))
        );
    }

    #[test]
    fn a_date_that_does_not_exist_is_refused_saying_so() {
        let e = instant("2026-02-31T00:00:00Z").unwrap_err();
        assert!(
            e.starts_with("\"2026-02-31T00:00:00Z\": not a time (") && e.contains("day"),
            "{e}"
        );
        assert!(e.contains("expected a time as 2026-11-28T22:00:00Z"), "{e}");
    }
}
