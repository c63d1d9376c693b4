//! Which summary rows a fleet answers on, and which row stands for a set:
//! the rule `scan` applies as it reads (so 100 000 sets keep one row each)
//! and `hosts` relies on, and analysis/validate/fleet_duckdb.py writes in
//! SQL.

use results_format::summary::SummaryRow;

/// What of a row decides whether it stands for its set: read from a
/// [`SummaryRow`], or from a table's columns before any row is built.
#[derive(Debug, Clone, Copy, Default)]
pub struct Standing<'a> {
    pub subject: Option<&'a str>,
    pub config_primary: Option<bool>,
    pub freq_hz: Option<i64>,
    pub has_cost: bool,
}

impl<'a> From<&'a SummaryRow> for Standing<'a> {
    fn from(r: &'a SummaryRow) -> Self {
        Standing {
            subject: r.subject.as_deref(),
            config_primary: r.config_primary,
            freq_hz: r.freq_hz,
            has_cost: r.cost_per_sample_ns.is_some(),
        }
    }
}

/// Whether a row is one the fleet answers on: our own sampler's loop
/// (older rows: null subject) and the set's primary configuration.
pub fn in_scope(r: Standing) -> bool {
    r.subject.is_none_or(|s| s == "loop") && r.config_primary != Some(false)
}

/// How far `f` is from `at`, as a ratio >= 1 (exact for 500 and 2000
/// around 1000, so ties go to the lower rate the same way in SQL).
pub fn rate_distance(f: i64, at: f64) -> f64 {
    let f = f as f64;
    (f / at).max(at / f)
}

/// The index of the row standing for a set among `rows` (one set's
/// in-scope rows): the rate nearest `at` among those with a cost (any
/// rate when none has one: a set without the gaps design still answers
/// each budget); ties to the lower rate. None without a rate above 0 Hz.
pub fn representative(rows: &[Standing], at: f64) -> Option<usize> {
    rows.iter()
        .enumerate()
        .filter(|(_, r)| r.freq_hz.is_some_and(|f| f > 0))
        .min_by(|(_, a), (_, b)| {
            let fa = a.freq_hz.unwrap_or_default();
            let fb = b.freq_hz.unwrap_or_default();
            (!a.has_cost)
                .cmp(&!b.has_cost)
                .then(rate_distance(fa, at).total_cmp(&rate_distance(fb, at)))
                .then(fa.cmp(&fb))
        })
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(f: i64, cost: Option<f64>) -> SummaryRow {
        SummaryRow {
            freq_hz: Some(f),
            cost_per_sample_ns: cost,
            ..Default::default()
        }
    }

    #[test]
    fn the_nearest_rate_with_a_cost_stands_for_the_set() {
        let rows = [
            row(100, Some(1.0)),
            row(500, Some(1.0)),
            row(2000, Some(1.0)),
            row(1100, None),
        ];
        let refs: Vec<Standing> = rows.iter().map(Standing::from).collect();
        // 500 and 2000 are equally far from 1000: the lower wins; 1100 has
        // no cost.
        assert_eq!(representative(&refs, 1000.0), Some(1));
        let none = [row(0, Some(1.0)), row(1100, None)];
        let refs: Vec<Standing> = none.iter().map(Standing::from).collect();
        assert_eq!(representative(&refs, 1000.0), Some(1));
        assert_eq!(representative(&refs[..1], 1000.0), None);
    }
}
