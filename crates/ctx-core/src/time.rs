//! Calendar arithmetic of Unix times (UTC) without a clock: callers pass the seconds in.
//!
//! The one copy of the days-to-date arithmetic and its inverse: `fs_read`'s directory
//! listings, `ctx-code`, the MCP recorder, git sources and the run exporter all go through
//! here.

/// `2023-11-14T22:13:20Z` for Unix seconds (RFC 3339, UTC).
pub fn rfc3339(unix: i64) -> String {
    let (y, m, d, secs) = split(unix);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// `2023-11-14 22:13` for Unix seconds (UTC, to the minute).
pub fn utc_minutes(unix: i64) -> String {
    let (y, m, d, secs) = split(unix);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60
    )
}

/// `2023-11-14 22:13:20 UTC` for Unix seconds.
pub fn utc_seconds(unix: i64) -> String {
    let (y, m, d, secs) = split(unix);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// Days since 1970-01-01 of a date (proleptic Gregorian; months 1–12): Howard Hinnant's
/// days-from-civil, the inverse of the formatting above.
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day, seconds into the day).
fn split(unix: i64) -> (i64, i64, i64, i64) {
    let (y, m, d) = civil_from_days(unix.div_euclid(86_400));
    (y, m, d, unix.rem_euclid(86_400))
}

/// (year, month, day) of a count of days since 1970-01-01: Howard Hinnant's days-to-civil
/// algorithm (proleptic Gregorian calendar).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(1_795_328_208), "2026-11-22T06:16:48Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(utc_minutes(0), "1970-01-01 00:00");
        assert_eq!(utc_minutes(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc_minutes(1_700_000_000), "2023-11-14 22:13");
        assert_eq!(utc_seconds(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn days_from_civil_inverts_civil_from_days() {
        for days in [-800_000, -1, 0, 1, 11_016, 19_675, 20_000, 2_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(days_from_civil(2000, 2, 29), 11_016);
    }
}
