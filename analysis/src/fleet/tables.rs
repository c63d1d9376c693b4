//! The fleet's tables as CSV: fleet.csv (one row per class, the fleet
//! first) and hosts.csv (one row per host); missing.csv and skipped.csv
//! are their rows' own (`crate::columns`).

use std::collections::BTreeSet;
use std::path::Path;

use results_format::summary::SUMMARY_BUDGETS;

use super::Fleet;
use super::classes::label;
use crate::columns::{csv_records, write_csv};
use crate::error::AnalysisError;

/// `v`'s text, empty for none.
fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |x| x.to_string())
}

/// `names`, space-separated, as a header's cells.
fn cells(names: &str) -> Vec<String> {
    names.split_whitespace().map(String::from).collect()
}

/// fleet.csv: the fleet's row first, then one per class.
pub fn write_fleet_csv(path: &Path, f: &Fleet) -> Result<(), AnalysisError> {
    let mut header = cells("class hosts cost_median_ns cost_p95_ns cost_max_ns");
    for (_, stem) in SUMMARY_BUDGETS {
        for what in ["p95_host_max_hz", "every_host_max_hz", "p95_host_rate_hz"] {
            header.push(format!("budget_{stem}_{what}"));
        }
    }
    header.extend(cells("single outliers conservative drifted"));
    let rows: Vec<Vec<String>> = std::iter::once(&f.fleet)
        .chain(&f.classes)
        .map(|c| {
            let mut rec = vec![c.class.clone(), c.hosts.to_string()];
            rec.extend([c.cost_median_ns, c.cost_p95_ns, c.cost_max_ns].map(|v| v.to_string()));
            for b in &c.budgets {
                rec.extend([
                    b.p95_host_max_hz.to_string(),
                    b.every_host_max_hz.to_string(),
                ]);
                rec.push(opt(b.p95_host_rate_hz));
            }
            let outliers: Vec<&str> = c.outliers.iter().map(|o| o.host.as_str()).collect();
            rec.extend([c.single.to_string(), outliers.join(" ")]);
            rec.extend([c.conservative.join(" "), c.drifted.join(" ")]);
            rec
        })
        .collect();
    write_csv(path, csv_records(&header, &rows))
}

/// hosts.csv: one row per host (or host-date).
pub fn write_hosts_csv(path: &Path, f: &Fleet) -> Result<(), AnalysisError> {
    let mut header =
        cells("host date set class freq_hz cost_ns cost_lo_ns cost_hi_ns cost_pred_hi_ns");
    header.extend(SUMMARY_BUDGETS.map(|(_, s)| format!("budget_{s}_max_hz")));
    let flags = "outside_spread conservative drifted bounds_only made_from_tables";
    header.extend(cells(flags));
    let outside: BTreeSet<(&str, &str)> = f
        .classes
        .iter()
        .flat_map(|c| {
            c.outliers
                .iter()
                .map(|o| (c.class.as_str(), o.host.as_str()))
        })
        .collect();
    let rows: Vec<Vec<String>> = f
        .hosts
        .iter()
        .map(|o| {
            let class = label(o);
            let outside = outside.contains(&(class.as_str(), o.host.as_str()));
            let mut rec = vec![o.host.clone(), o.date.clone(), o.set.clone(), class];
            rec.push(o.freq_hz.to_string());
            rec.extend([o.cost_ns, o.cost_lo_ns, o.cost_hi_ns, o.cost_pred_hi_ns].map(opt));
            rec.extend(o.max_hz.iter().map(|v| opt(*v)));
            rec.extend(
                [outside, o.conservative, o.drifted, o.bounds_only, o.made].map(|b| b.to_string()),
            );
            rec
        })
        .collect();
    write_csv(path, csv_records(&header, &rows))
}
