//! Simulated time: a fixed epoch plus seeded jitter, never the wall clock.
//!
//! Anything observable that looks like a timestamp is computed here from simulated ticks, so two
//! runs of the same seed print the same timestamps on any machine, on any day.

/// Seconds since 1970-01-01T00:00:00Z of the default epoch, 2026-01-01T00:00:00Z.
pub const DEFAULT_EPOCH_UNIX: i64 = 1_767_225_600;

/// Formats Unix seconds plus milliseconds as RFC 3339 UTC: `2026-01-01T00:00:00.000Z`.
pub fn format_rfc3339_millis(unix_seconds: i64, millis: u32) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let secs_of_day = unix_seconds.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs_of_day / 3600,
        (secs_of_day / 60) % 60,
        secs_of_day % 60,
        millis % 1000
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
/// Public for renderers that write the same timestamps without [`format_rfc3339_millis`]'s
/// `String` (the range's SIEM lines).
#[inline]
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_rfc3339_millis(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_rfc3339_millis(DEFAULT_EPOCH_UNIX, 0),
            "2026-01-01T00:00:00.000Z"
        );
        assert_eq!(
            format_rfc3339_millis(DEFAULT_EPOCH_UNIX - 1, 5),
            "2025-12-31T23:59:59.005Z"
        );
        assert_eq!(
            format_rfc3339_millis(951_782_400, 0),
            "2000-02-29T00:00:00.000Z"
        );
    }
}
