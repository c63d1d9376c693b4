//! How numbers are written in the report, its sections and the comparison:
//! a leaf that every part of the presentation layer uses and that uses
//! nothing of theirs.

use std::fmt::Write as _;

use crate::stats::Estimate;

/// Each of `lines` on a line of its own after `lead` (`- `: a list).
pub(crate) fn lines_after<T: std::fmt::Display>(
    s: &mut String,
    lead: &str,
    lines: impl IntoIterator<Item = T>,
) {
    for line in lines {
        let _ = writeln!(s, "{lead}{line}");
    }
}

/// An optional estimate, `-` when absent or not finite.
pub(crate) fn opt_est(e: Option<&Estimate>, d: usize) -> String {
    e.filter(|e| e.value.is_finite())
        .map_or_else(|| "-".to_string(), |e| fmt_est(e, d))
}

/// `v [lo, hi]` with `d` decimals; `v` alone without an interval; `n/a`
/// when `v` is not finite.
pub fn fmt_est(e: &Estimate, d: usize) -> String {
    if !e.value.is_finite() {
        return "n/a".to_string();
    }
    if e.lo.is_finite() && e.hi.is_finite() {
        format!("{:.d$} [{:.d$}, {:.d$}]", e.value, e.lo, e.hi)
    } else {
        format!("{:.d$}", e.value)
    }
}

/// `n` and `word`, with an `s` unless one: `1 run`, `3 runs`.
pub(crate) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
