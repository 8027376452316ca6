//! [`SpeculativeRetry`]: Cassandra's `speculative_retry` (and `additional_write_policy`)
//! table option — when a coordinator asks one replica more than the consistency level
//! needs, because the ones it asked are slow or gone.
//!
//! The values Cassandra 4.x accepts, case-insensitively: `NONE` (or `NEVER`), `ALWAYS`,
//! `<p>p` / `<p>PERCENTILE` (after the table's p-th percentile read latency at this
//! coordinator, `0 <= p <= 100`), `<n>ms` (after n milliseconds) and `MIN(a, b)` /
//! `MAX(a, b)` of one percentile and one fixed delay. Printed as Cassandra prints them in
//! `system_schema.tables`: `99p`, `50ms`, `ALWAYS`, `NEVER`, `MIN(99p,50ms)`.

use std::fmt;

/// See the module doc.
#[derive(Clone, Debug, PartialEq)]
pub enum SpeculativeRetry {
    /// Never ask another replica.
    Never,
    /// Ask one more replica at once.
    Always,
    /// After this many milliseconds.
    Fixed(f64),
    /// After the table's read latency at this percentile (0–100).
    Percentile(f64),
    /// The smaller (`min`) or larger delay of a percentile and a fixed delay.
    Hybrid {
        /// Whether the smaller delay is taken (`MIN`), else the larger (`MAX`).
        min: bool,
        /// The percentile (0–100).
        percentile: f64,
        /// The fixed delay, in milliseconds.
        fixed_ms: f64,
    },
}

impl Default for SpeculativeRetry {
    /// Cassandra's default, `99p`.
    fn default() -> Self {
        SpeculativeRetry::Percentile(99.0)
    }
}

impl SpeculativeRetry {
    /// Parses an option value; the error is the message Cassandra gives.
    pub fn parse(text: &str) -> Result<SpeculativeRetry, String> {
        let invalid = || format!("Invalid value {text} for option 'speculative_retry'");
        let lower = text.trim().to_ascii_lowercase();
        if let Some(args) = lower
            .strip_prefix("min(")
            .map(|a| (true, a))
            .or_else(|| lower.strip_prefix("max(").map(|a| (false, a)))
        {
            let (min, args) = args;
            let inner = args.strip_suffix(')').ok_or_else(invalid)?;
            let (a, b) = inner.split_once(',').ok_or_else(invalid)?;
            let (a, b) = (Self::simple(a.trim()), Self::simple(b.trim()));
            return match (a, b) {
                (Some(SpeculativeRetry::Percentile(p)), Some(SpeculativeRetry::Fixed(ms)))
                | (Some(SpeculativeRetry::Fixed(ms)), Some(SpeculativeRetry::Percentile(p))) => {
                    Ok(SpeculativeRetry::Hybrid {
                        min,
                        percentile: p,
                        fixed_ms: ms,
                    })
                }
                _ => Err(invalid()),
            };
        }
        Self::simple(&lower).ok_or_else(invalid)
    }

    /// A value other than `MIN`/`MAX` (lower case, trimmed).
    fn simple(lower: &str) -> Option<SpeculativeRetry> {
        match lower {
            "none" | "never" => return Some(SpeculativeRetry::Never),
            "always" => return Some(SpeculativeRetry::Always),
            _ => {}
        }
        let number = |n: &str| n.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        if let Some(ms) = lower.strip_suffix("ms") {
            return number(ms)
                .filter(|ms| *ms >= 0.0)
                .map(SpeculativeRetry::Fixed);
        }
        let p = lower
            .strip_suffix("percentile")
            .or_else(|| lower.strip_suffix('p'))?;
        number(p)
            .filter(|p| (0.0..=100.0).contains(p))
            .map(SpeculativeRetry::Percentile)
    }

    /// How many milliseconds after asking the replicas it needs a read asks one more, given
    /// the table's read latency at a quantile (`latency_ms(0.99)`, `None` while too few
    /// reads were measured): `None` never (a percentile policy without measurements waits
    /// as if never), `Some(0.0)` at once.
    pub fn delay_ms(&self, latency_ms: impl Fn(f64) -> Option<f64>) -> Option<f64> {
        match self {
            SpeculativeRetry::Never => None,
            SpeculativeRetry::Always => Some(0.0),
            SpeculativeRetry::Fixed(ms) => Some(*ms),
            SpeculativeRetry::Percentile(p) => latency_ms(p / 100.0),
            SpeculativeRetry::Hybrid {
                min,
                percentile,
                fixed_ms,
            } => match latency_ms(percentile / 100.0) {
                Some(l) if *min => Some(l.min(*fixed_ms)),
                Some(l) => Some(l.max(*fixed_ms)),
                None => Some(*fixed_ms),
            },
        }
    }
}

/// A number as Cassandra prints it: at most four decimals, no trailing zeros.
fn short(n: f64) -> String {
    let text = format!("{n:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

impl fmt::Display for SpeculativeRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpeculativeRetry::Never => f.write_str("NEVER"),
            SpeculativeRetry::Always => f.write_str("ALWAYS"),
            SpeculativeRetry::Fixed(ms) => write!(f, "{}ms", short(*ms)),
            SpeculativeRetry::Percentile(p) => write!(f, "{}p", short(*p)),
            SpeculativeRetry::Hybrid {
                min,
                percentile,
                fixed_ms,
            } => write!(
                f,
                "{}({}p,{}ms)",
                if *min { "MIN" } else { "MAX" },
                short(*percentile),
                short(*fixed_ms)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cassandras_values_parse_and_print_as_cassandra_prints_them() {
        for (text, printed) in [
            ("99p", "99p"),
            ("99PERCENTILE", "99p"),
            ("95.5p", "95.5p"),
            ("50ms", "50ms"),
            ("50MS", "50ms"),
            ("12.25ms", "12.25ms"),
            ("ALWAYS", "ALWAYS"),
            ("none", "NEVER"),
            ("NEVER", "NEVER"),
            ("MIN(99p,50ms)", "MIN(99p,50ms)"),
            ("max(50ms, 95percentile)", "MAX(95p,50ms)"),
        ] {
            let parsed = SpeculativeRetry::parse(text).unwrap();
            assert_eq!(parsed.to_string(), printed, "{text}");
            assert_eq!(
                SpeculativeRetry::parse(printed).unwrap(),
                parsed,
                "{printed}"
            );
        }
        for bad in [
            "",
            "fast",
            "101p",
            "-1p",
            "-5ms",
            "MIN(99p)",
            "MIN(99p,95p)",
            "nanp",
            "99",
        ] {
            let e = SpeculativeRetry::parse(bad).unwrap_err();
            assert!(e.contains("speculative_retry"), "{bad}: {e}");
        }
    }

    #[test]
    fn delays_follow_the_policy_and_the_measured_latency() {
        let measured = |q: f64| Some(q * 10.0);
        let none = |_: f64| None;
        let parse = |t| SpeculativeRetry::parse(t).unwrap();
        assert_eq!(parse("NONE").delay_ms(measured), None);
        assert_eq!(parse("ALWAYS").delay_ms(none), Some(0.0));
        assert_eq!(parse("20ms").delay_ms(none), Some(20.0));
        assert_eq!(parse("50p").delay_ms(measured), Some(5.0));
        assert_eq!(parse("50p").delay_ms(none), None);
        assert_eq!(parse("MIN(99p,3ms)").delay_ms(measured), Some(3.0));
        assert_eq!(parse("MAX(99p,3ms)").delay_ms(measured), Some(9.9));
        assert_eq!(parse("MAX(99p,3ms)").delay_ms(none), Some(3.0));
    }
}
