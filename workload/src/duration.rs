//! Parsing of durations, the one parser of the workspace (the workload's
//! `--duration` and the driver's `--duration`/`--phase` and experiment-file
//! keys): `10s`, `500ms`, `2.5s`, `250us` (or `250µs`), `100ns`, `2min` (or
//! `2m`), `1.5h`, or a bare number of seconds (`10`, `0.5`).
//!
//! Decimal values are converted exactly (integer arithmetic on the digits, no
//! floating point), so `2.5s` is exactly 2 500 000 000 ns. A value with more
//! precision than 1 ns, a negative value, or one above ~584 years is an error.
use std::time::Duration;

/// Why a duration string was rejected. Messages name the value and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing (or only a unit) was given.
    #[error("empty duration '{0}': give a number with a unit, e.g. 10s, 500ms, 2.5s")]
    Empty(String),
    /// The number part is not a plain decimal.
    #[error(
        "'{0}' is not a duration: use a number with an optional unit ns, us, ms, s, min or h, e.g. 10s, 500ms, 2.5s"
    )]
    Syntax(String),
    /// The unit is not one we know.
    #[error(
        "unknown unit '{unit}' in duration '{value}': use ns, us, µs, ms, s, min (or m) or h (a bare number means seconds)"
    )]
    Unit {
        /// the whole value
        value: String,
        /// the unit part
        unit: String,
    },
    /// More decimals than nanoseconds can hold.
    #[error("duration '{0}' is more precise than 1 ns: use fewer decimals")]
    TooPrecise(String),
    /// Does not fit in u64 nanoseconds.
    #[error("duration '{0}' is too large: the maximum is about 584 years")]
    TooLarge(String),
}

/// Parses a duration; see the module docs for the accepted forms. Zero is
/// accepted here (callers that need a positive duration check it).
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(DurationError::Empty(input.to_string()));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let unit = unit.trim_start();
    if number.is_empty() {
        // Only a unit ("s") is an empty value; anything else is not a number.
        return Err(
            if matches!(unit, "s" | "ms" | "us" | "µs" | "ns" | "m" | "min" | "h") {
                DurationError::Empty(input.to_string())
            } else {
                DurationError::Syntax(input.to_string())
            },
        );
    }
    let ns_per_unit: u128 = match unit {
        "" | "s" | "sec" | "secs" => 1_000_000_000,
        "ms" => 1_000_000,
        "us" | "µs" => 1_000,
        "ns" => 1,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ if unit.chars().all(|c| c.is_ascii_alphabetic() || c == 'µ') => {
            return Err(DurationError::Unit {
                value: input.to_string(),
                unit: unit.to_string(),
            });
        }
        _ => return Err(DurationError::Syntax(input.to_string())),
    };

    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
        return Err(DurationError::Syntax(input.to_string()));
    }
    let too_large = || DurationError::TooLarge(input.to_string());

    // Only digits are left, so parsing fails only past u64 (empty: 0).
    let whole: u64 = match int_part {
        "" => 0,
        digits => digits.parse().map_err(|_| too_large())?,
    };
    let mut ns = u128::from(whole) * ns_per_unit;

    // Fractional digits: value = digits / 10^len, times ns_per_unit, exact.
    let frac = frac_part.trim_end_matches('0');
    if !frac.is_empty() {
        if frac.len() > 30 {
            return Err(DurationError::TooPrecise(input.to_string()));
        }
        // At most 30 digits: below u128::MAX.
        let digits: u128 = frac.parse().map_err(|_| too_large())?;
        let scale = 10u128.pow(frac.len() as u32);
        let scaled = digits
            .checked_mul(ns_per_unit)
            .ok_or_else(|| DurationError::TooPrecise(input.to_string()))?;
        if scaled % scale != 0 {
            return Err(DurationError::TooPrecise(input.to_string()));
        }
        ns = ns.checked_add(scaled / scale).ok_or_else(too_large)?;
    }
    let ns = u64::try_from(ns).map_err(|_| too_large())?;
    Ok(Duration::from_nanos(ns))
}

/// A duration for a message about a plan's length: "8 s", "13.3 min",
/// "85000000 h".
pub fn format_long_ns(ns: u128) -> String {
    const S: f64 = 1e9;
    let x = ns as f64;
    if x < 60.0 * S {
        format!("{} s", round3(x / S))
    } else if x < 3600.0 * S {
        format!("{} min", round3(x / (60.0 * S)))
    } else {
        format!("{} h", round3(x / (3600.0 * S)))
    }
}

/// `x` with at most one decimal below 100, as an integer above.
fn round3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        let r = format!("{x:.1}");
        r.strip_suffix(".0").map_or(r.clone(), str::to_owned)
    }
}

/// Formats a duration the way it is accepted back (`1.5s`, `500ms`, `1ns`).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    let (unit, per) = if ns >= 1_000_000_000 {
        ("s", 1_000_000_000u128)
    } else if ns >= 1_000_000 {
        ("ms", 1_000_000)
    } else if ns >= 1_000 {
        ("us", 1_000)
    } else {
        return format!("{ns}ns");
    };
    let whole = ns / per;
    let frac = ns % per;
    if frac == 0 {
        format!("{whole}{unit}")
    } else {
        let width = per.ilog10() as usize;
        let digits = format!("{frac:0width$}");
        format!("{whole}.{}{unit}", digits.trim_end_matches('0'))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {

    #[test]
    fn long_durations_read_in_their_unit() {
        assert_eq!(format_long_ns(8_000_000_000), "8 s");
        assert_eq!(format_long_ns(800_000_000_000), "13.3 min");
        assert_eq!(format_long_ns(86_400_000_000_000), "24 h");
        assert_eq!(format_long_ns(u128::from(u64::MAX) * 10), "51240956 h");
    }
    use super::*;
    use proptest::prelude::*;

    fn ns(s: &str) -> u128 {
        parse_duration(s).unwrap().as_nanos()
    }

    #[test]
    fn accepted_forms() {
        assert_eq!(ns("10s"), 10_000_000_000);
        assert_eq!(ns("500ms"), 500_000_000);
        assert_eq!(ns("2.5s"), 2_500_000_000);
        assert_eq!(ns("10"), 10_000_000_000);
        assert_eq!(ns("0.5"), 500_000_000);
        assert_eq!(ns(".25s"), 250_000_000);
        assert_eq!(ns("3."), 3_000_000_000);
        assert_eq!(ns("250us"), 250_000);
        assert_eq!(ns("250µs"), 250_000);
        assert_eq!(ns("7ns"), 7);
        assert_eq!(ns("1.5ms"), 1_500_000);
        assert_eq!(ns("2m"), 120_000_000_000);
        assert_eq!(ns("2min"), 120_000_000_000);
        assert_eq!(ns("1.5min"), 90_000_000_000);
        assert_eq!(ns("1h"), 3_600_000_000_000);
        assert_eq!(ns("0.25h"), 900_000_000_000);
        assert_eq!(ns("1.5s"), 1_500_000_000);
        // Decimals that floats cannot hold exactly stay exact.
        assert_eq!(ns("0.3s"), 300_000_000);
        assert_eq!(ns("4.35s"), 4_350_000_000);
        assert_eq!(ns("1.000000001s"), 1_000_000_001);
        assert_eq!(ns(" 3s "), 3_000_000_000);
        assert_eq!(ns("3 s"), 3_000_000_000);
        assert_eq!(ns("0"), 0);
        assert_eq!(ns("0.000000001"), 1);
        assert_eq!(ns("1.10000000000000000000000000000000000s"), 1_100_000_000);
    }

    #[test]
    fn rejected_forms() {
        assert!(matches!(parse_duration(""), Err(DurationError::Empty(_))));
        assert!(matches!(parse_duration("s"), Err(DurationError::Empty(_))));
        assert!(matches!(parse_duration("h"), Err(DurationError::Empty(_))));
        assert!(matches!(
            parse_duration("abc"),
            Err(DurationError::Syntax(_))
        ));
        assert!(matches!(
            parse_duration("-1s"),
            Err(DurationError::Syntax(_))
        ));
        assert!(matches!(
            parse_duration("1.2.3s"),
            Err(DurationError::Syntax(_))
        ));
        assert!(matches!(parse_duration("."), Err(DurationError::Syntax(_))));
        assert!(matches!(
            parse_duration("1e3"),
            Err(DurationError::Syntax(_))
        ));
        assert!(matches!(
            parse_duration("5d"),
            Err(DurationError::Unit { .. })
        ));
        assert!(matches!(
            parse_duration("5s5"),
            Err(DurationError::Syntax(_))
        ));
        assert!(matches!(
            parse_duration("1.5ns"),
            Err(DurationError::TooPrecise(_))
        ));
        assert!(matches!(
            parse_duration("0.0000000001"),
            Err(DurationError::TooPrecise(_))
        ));
        assert!(matches!(
            parse_duration("99999999999999999999s"),
            Err(DurationError::TooLarge(_))
        ));
        assert!(matches!(
            parse_duration("18446744073709551616ns"),
            Err(DurationError::TooLarge(_))
        ));
        assert_eq!(ns("18446744073709551615ns"), u128::from(u64::MAX));
        let msg = parse_duration("abc").unwrap_err().to_string();
        assert!(msg.contains("'abc'") && msg.contains("10s"), "{msg}");
    }

    #[test]
    fn format_examples() {
        assert_eq!(format_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(format_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(
            format_duration(Duration::from_nanos(1_000_001)),
            "1.000001ms"
        );
        assert_eq!(format_duration(Duration::from_nanos(12)), "12ns");
    }

    proptest! {
        /// Any nanosecond count printed with any unit and the exact number of
        /// decimals parses back to itself.
        #[test]
        fn roundtrip_any_unit(n in 0u64..=u64::MAX, unit_idx in 0usize..4) {
            let (unit, per): (&str, u64) = [("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)][unit_idx];
            let whole = n / per;
            let frac = n % per;
            let text = if per == 1 {
                format!("{whole}{unit}")
            } else {
                let width = per.ilog10() as usize;
                format!("{whole}.{frac:0width$}{unit}")
            };
            prop_assert_eq!(parse_duration(&text).unwrap(), Duration::from_nanos(n));
        }

        /// format_duration output always parses back exactly.
        #[test]
        fn format_parse_roundtrip(n in 0u64..=u64::MAX) {
            let d = Duration::from_nanos(n);
            prop_assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }

        /// Bare numbers are seconds and agree with the `s` suffix.
        #[test]
        fn bare_is_seconds(secs in 0u32..1_000_000, millis in 0u32..1000) {
            let bare = format!("{secs}.{millis:03}");
            prop_assert_eq!(parse_duration(&bare).unwrap(), parse_duration(&format!("{bare}s")).unwrap());
            prop_assert_eq!(parse_duration(&bare).unwrap(), Duration::from_millis(u64::from(secs) * 1000 + u64::from(millis)));
        }

        /// Arbitrary strings never panic.
        #[test]
        fn never_panics(s in "\\PC{0,24}") {
            let _ = parse_duration(&s);
        }
    }
}
