//! Durations on the command line: every duration flag of the lab takes a
//! unit (`30s`, `1m`, `500ms`, `250us`, `2h`), and a bare number stays
//! seconds, as it always was (`strata_api::duration` reads them); instants
//! (`--start-at`: RFC 3339 in UTC, Unix seconds, or a delay from now) and
//! their RFC 3339 form in reports; a run's share (`I/N`); byte counts and large numbers for
//! people. Must not know which flag it serves.

use std::time::{Duration, SystemTime};

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
    let ms = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_millis())
        .unwrap_or(0);
    let s = rfc3339(t);
    format!("{}.{ms:03}Z", s.trim_end_matches('Z'))
}

/// An instant on the wall clock, from `2026-11-28T22:00:00Z` (RFC 3339,
/// fractions of a second and a `+HH:MM` offset allowed), `@1795900000`
/// (Unix seconds) or `+30s` (that long from now).
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
    parse_rfc3339(s).ok_or_else(|| {
        format!(
            "{s:?}: expected a time as 2026-11-28T22:00:00Z (RFC 3339), @UNIX_SECONDS or +DELAY"
        )
    })
}

fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut nanos = 0u64;
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let frac = &f[..digits.min(9)];
        nanos = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
        rest = &f[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && matches!(&o[..1], "+" | "-") && &o[3..4] == ":" => {
            let hh: i64 = o[1..3].parse().ok()?;
            let mm: i64 = o[4..6].parse().ok()?;
            let v = hh * 3600 + mm * 60;
            if &o[..1] == "-" {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    // Days since 1970-01-01 from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset;
    let secs = u64::try_from(secs).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(nanos))
}

/// `YYYY-MM-DDTHH:MM:SSZ` in UTC.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
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
            "@x",
            "+forever",
        ] {
            assert!(instant(bad).is_err(), "{bad}");
        }
    }
}
