//! The fleet's tables as CSV: fleet.csv (one row per class, the fleet
//! first), hosts.csv (one row per host), and missing.csv / skipped.csv.

use std::path::Path;

use results_format::summary::SUMMARY_BUDGETS;

use super::Fleet;
use crate::error::AnalysisError;

fn csv_err(path: &Path) -> impl Fn(csv::Error) -> AnalysisError + '_ {
    move |e| AnalysisError::write(path, std::io::Error::other(e))
}

/// fleet.csv: the fleet's row first, then one per class.
pub fn write_fleet_csv(path: &Path, f: &Fleet) -> Result<(), AnalysisError> {
    let mut w = csv::Writer::from_path(path).map_err(csv_err(path))?;
    let mut header = vec![
        "class".to_string(),
        "hosts".into(),
        "cost_median_ns".into(),
        "cost_p95_ns".into(),
        "cost_max_ns".into(),
    ];
    for (_, stem) in SUMMARY_BUDGETS {
        header.push(format!("budget_{stem}_p95_host_max_hz"));
        header.push(format!("budget_{stem}_every_host_max_hz"));
        header.push(format!("budget_{stem}_p95_host_rate_hz"));
    }
    header.extend(
        ["single", "outliers", "conservative", "drifted"]
            .iter()
            .map(|s| s.to_string()),
    );
    w.write_record(&header).map_err(csv_err(path))?;
    for c in std::iter::once(&f.fleet).chain(f.classes.iter()) {
        let mut rec = vec![
            c.class.clone(),
            c.hosts.to_string(),
            c.cost_median_ns.to_string(),
            c.cost_p95_ns.to_string(),
            c.cost_max_ns.to_string(),
        ];
        for b in &c.budgets {
            rec.push(b.p95_host_max_hz.to_string());
            rec.push(b.every_host_max_hz.to_string());
            rec.push(b.p95_host_rate_hz.map_or(String::new(), |r| r.to_string()));
        }
        rec.push(c.single.to_string());
        rec.push(
            c.outliers
                .iter()
                .map(|o| o.host.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        );
        rec.push(c.conservative.join(" "));
        rec.push(c.drifted.join(" "));
        w.write_record(&rec).map_err(csv_err(path))?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

pub fn write_hosts_csv(path: &Path, f: &Fleet) -> Result<(), AnalysisError> {
    let mut w = csv::Writer::from_path(path).map_err(csv_err(path))?;
    let mut header: Vec<String> = ["host", "date", "set", "class"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(
        [
            "freq_hz",
            "cost_ns",
            "cost_lo_ns",
            "cost_hi_ns",
            "cost_pred_hi_ns",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    for (_, stem) in SUMMARY_BUDGETS {
        header.push(format!("budget_{stem}_max_hz"));
    }
    header.extend(
        [
            "outside_spread",
            "conservative",
            "drifted",
            "bounds_only",
            "made_from_tables",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    w.write_record(&header).map_err(csv_err(path))?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let outside: std::collections::BTreeSet<(&str, &str)> = f
        .classes
        .iter()
        .flat_map(|c| {
            c.outliers
                .iter()
                .map(move |o| (c.class.as_str(), o.host.as_str()))
        })
        .collect();
    for o in &f.hosts {
        let class = super::classes::label(o);
        let mut rec = vec![
            o.host.clone(),
            o.date.clone(),
            o.set.clone(),
            super::classes::label(o),
            o.freq_hz.to_string(),
            opt(o.cost_ns),
            opt(o.cost_lo_ns),
            opt(o.cost_hi_ns),
            opt(o.cost_pred_hi_ns),
        ];
        rec.extend(o.max_hz.iter().map(|v| opt(*v)));
        rec.extend([
            outside
                .contains(&(class.as_str(), o.host.as_str()))
                .to_string(),
            o.conservative.to_string(),
            o.drifted.to_string(),
            o.bounds_only.to_string(),
            o.made.to_string(),
        ]);
        w.write_record(&rec).map_err(csv_err(path))?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}

pub fn write_rows<T: serde::Serialize>(path: &Path, rows: &[T]) -> Result<(), AnalysisError> {
    let mut w = csv::Writer::from_path(path).map_err(csv_err(path))?;
    for r in rows {
        w.serialize(r).map_err(csv_err(path))?;
    }
    w.flush().map_err(|e| AnalysisError::write(path, e))
}
