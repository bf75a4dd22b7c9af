//! Times as people and the admin API write them: RFC 3339 in UTC, from and to milliseconds
//! since the Unix epoch. Formats and parses with `humantime` from `UNIX_EPOCH` plus a duration,
//! never with the system clock, which `wasm32-unknown-unknown` does not have.

use std::time::{Duration, UNIX_EPOCH};

/// The first second of the year 10000, which humantime cannot write.
const YEAR_10000_SECONDS: u64 = 253_402_300_800;

/// `ms` (milliseconds since the Unix epoch) as `2026-12-02T10:15:30.123Z`; `None` past the year 9999.
pub fn format(ms: u64) -> Option<String> {
    let time = UNIX_EPOCH.checked_add(Duration::from_millis(ms))?;
    (ms / 1_000 < YEAR_10000_SECONDS).then(|| humantime::format_rfc3339_millis(time).to_string())
}

/// Reads an RFC 3339 time (`2026-12-02T10:15:30Z`, fractions of a second allowed, `Z` or a
/// `±hh:mm` offset) as milliseconds since the Unix epoch. `None` for anything else, or a time
/// before 1970.
pub fn parse(text: &str) -> Option<u64> {
    let (local, offset_seconds) = split_offset(text)?;
    let time = humantime::parse_rfc3339(&format!("{local}Z")).ok()?;
    let utc = time.duration_since(UNIX_EPOCH).ok()?.as_millis();
    let shifted = i128::try_from(utc).ok()? - i128::from(offset_seconds) * 1_000;
    u64::try_from(shifted).ok()
}

/// The local part of `text` and its offset from UTC in seconds (`Z` is 0).
fn split_offset(text: &str) -> Option<(&str, i64)> {
    if let Some(local) = text.strip_suffix('Z').or_else(|| text.strip_suffix('z')) {
        return Some((local, 0));
    }
    let split = text.len().checked_sub(6)?;
    let (local, offset) = (text.get(..split)?, text.get(split..)?);
    let sign = match offset.as_bytes() {
        [b'+', _, _, b':', _, _] => 1,
        [b'-', _, _, b':', _, _] => -1,
        _ => return None,
    };
    let hours: i64 = offset.get(1..3)?.parse().ok()?;
    let minutes: i64 = offset.get(4..6)?.parse().ok()?;
    (hours < 24 && minutes < 60).then_some((local, sign * (hours * 3_600 + minutes * 60)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_back_as_written_with_any_offset() {
        let ms = 1_796_207_730_123;
        let written = format(ms).unwrap();
        assert_eq!(written, "2026-12-02T10:35:30.123Z");
        assert_eq!(parse(&written), Some(ms));
        assert_eq!(parse("2026-12-02T10:35:30Z"), Some(1_796_207_730_000));
        assert_eq!(parse("2026-12-02T12:35:30+02:00"), Some(1_796_207_730_000));
        assert_eq!(parse("2026-12-02T05:05:30-05:30"), Some(1_796_207_730_000));
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some(0));
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "yesterday",
            "2026-12-02",
            "2026-12-02T10:35:30",
            "2026-13-02T10:35:30Z",
            "2026-12-02T10:35:30+25:00",
            "2026-12-02T10:35:30+0200",
            "1969-12-31T23:59:59Z",
            "1970-01-01T00:30:00+01:00",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert_eq!(format(YEAR_10000_SECONDS * 1_000), None);
    }
}
