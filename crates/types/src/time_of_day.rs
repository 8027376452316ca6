//! `time` values: nanoseconds since midnight, read from CQL text and printed as Cassandra's
//! `TimeSerializer` does.
//!
//! A literal is either the raw count (`'45296123456789'` or the integer `45296123456789`) or
//! `hh:mm:ss[.fffffffff]` (`'08:12:54'`, `'08:12:54.123'`, `'8:12:54.123456789'`): hours 0–23,
//! minutes and seconds 0–59, each an integer as Java's `Integer.parseInt` reads it (a sign is
//! allowed, so `'+8:00:00'` is 08:00), and up to nine fraction digits. Surrounding whitespace
//! is ignored in the second form only, as in Cassandra.

use std::fmt;

/// Nanoseconds in a day: `time` values are `0..NANOS_PER_DAY`.
pub const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// A CQL literal that is not a `time`, with Cassandra's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseTimeError {
    /// Digits only, but not a count of nanoseconds within a day.
    #[error("Unable to make long (for time) from: '{text}'")]
    OutOfRange {
        /// The literal as given.
        text: String,
    },
    /// Not `hh:mm:ss[.fffffffff]`, or a field out of its range.
    #[error("(TimeType) Unable to coerce '{text}' to a formatted time (long)")]
    Format {
        /// The literal as given.
        text: String,
    },
}

/// Parses a `time` literal as Cassandra's `TimeSerializer.timeStringToLong` does.
pub fn parse_time(text: &str) -> Result<i64, ParseTimeError> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<i64>()
            .ok()
            .filter(|n| (0..NANOS_PER_DAY).contains(n))
            .ok_or_else(|| ParseTimeError::OutOfRange {
                text: text.to_owned(),
            });
    }
    parse_clock(text).ok_or_else(|| ParseTimeError::Format {
        text: text.to_owned(),
    })
}

/// Java's `Integer.parseInt`: an optional sign, then at least one ASCII digit, within `i32`.
fn java_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i32>().ok().map(i64::from)
}

/// `hh:mm:ss[.fffffffff]` (Cassandra's `parseTimeStrictly`).
fn parse_clock(text: &str) -> Option<i64> {
    // Java's String.trim: every char up to U+0020 at either end.
    let s = text.trim_matches(|c: char| c <= ' ');
    let first = s.find(':')?;
    let second = first + 1 + s.get(first + 1..)?.find(':')?;
    if first == 0 || second + 1 >= s.len() {
        return None;
    }
    let in_range = |v: i64, max: i64| (0..max).contains(&v).then_some(v);
    let hour = in_range(java_int(s.get(..first)?)?, 24)?;
    let minute = in_range(java_int(s.get(first + 1..second)?)?, 60)?;
    let rest = s.get(second + 1..)?;
    let (second_text, fraction) = match rest.find('.') {
        Some(dot) => (rest.get(..dot)?, Some(rest.get(dot + 1..)?)),
        None => (rest, None),
    };
    let nanos = match fraction {
        None => 0,
        Some(f) => {
            if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let padded = format!("{f:0<9}");
            padded.parse::<i64>().ok()?
        }
    };
    // A period right after the second colon leaves the seconds empty: refused by
    // `java_int`, as Java's parseInt refuses "".
    let second = in_range(java_int(second_text)?, 60)?;
    Some(((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nanos)
}

/// A `time` as Cassandra prints it: `hh:mm:ss.fffffffff`, always nine fraction digits.
pub fn format_time(nanos: i64) -> String {
    TimeOfDay(nanos).to_string()
}

struct TimeOfDay(i64);

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        let (secs, frac) = (n.div_euclid(1_000_000_000), n.rem_euclid(1_000_000_000));
        write!(
            f,
            "{:02}:{:02}:{:02}.{:09}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            frac
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: i64 = 1_000_000_000;

    #[test]
    fn clock_literals_parse_like_cassandra() {
        let t = (8 * 3600 + 12 * 60 + 54) * NS;
        assert_eq!(parse_time("08:12:54"), Ok(t));
        assert_eq!(parse_time("08:12:54.123"), Ok(t + 123_000_000));
        assert_eq!(parse_time("08:12:54.123456789"), Ok(t + 123_456_789));
        assert_eq!(parse_time(" 8:12:54.1 "), Ok(t + 100_000_000));
        assert_eq!(parse_time("+8:12:54"), Ok(t));
        assert_eq!(parse_time("00:00:00"), Ok(0));
        assert_eq!(parse_time("23:59:59.999999999"), Ok(NANOS_PER_DAY - 1));
        for bad in [
            "24:00:00",
            "12:60:00",
            "12:00:60",
            "-1:00:00",
            "12:00",
            ":12:00",
            "12:00:",
            "12::00",
            "12:00:00.",
            "12:00:00.1234567890",
            "12:00:00.+1",
            "12:00:00.1a",
            "12:00:.5",
            "12:00:00:00",
            "noon",
            "",
        ] {
            assert!(
                matches!(parse_time(bad), Err(ParseTimeError::Format { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_time("25:00:00").unwrap_err().to_string(),
            "(TimeType) Unable to coerce '25:00:00' to a formatted time (long)"
        );
    }

    #[test]
    fn raw_nanosecond_counts_are_checked_against_a_day() {
        assert_eq!(parse_time("0"), Ok(0));
        assert_eq!(parse_time("86399999999999"), Ok(NANOS_PER_DAY - 1));
        for bad in ["86400000000000", "-1", "99999999999999999999"] {
            assert_eq!(
                parse_time(bad),
                Err(ParseTimeError::OutOfRange {
                    text: bad.to_owned()
                })
            );
        }
        assert_eq!(
            parse_time("-1").unwrap_err().to_string(),
            "Unable to make long (for time) from: '-1'"
        );
    }

    #[test]
    fn times_print_with_nine_fraction_digits() {
        assert_eq!(format_time(0), "00:00:00.000000000");
        assert_eq!(format_time(NANOS_PER_DAY - 1), "23:59:59.999999999");
        let t = parse_time("08:12:54.123").unwrap();
        assert_eq!(format_time(t), "08:12:54.123000000");
        assert_eq!(parse_time(&format_time(t)), Ok(t));
    }
}
