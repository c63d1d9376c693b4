//! One summary row with the host, date and set it came from: what the
//! scan returns and the cache keeps (a leaf, so neither imports the other).

use std::path::PathBuf;

use results_format::summary::SummaryRow;

/// One summary row with where it came from.
#[derive(Debug, Clone)]
pub struct FleetRow {
    /// The `host=` folder, else the row's hostname.
    pub host: String,
    /// The `date=` folder, else the UTC day the sweep started.
    pub date: String,
    /// The result set's folder.
    pub set_dir: PathBuf,
    /// True when the set had no summary and it was made from its tables.
    pub made: bool,
    pub row: SummaryRow,
}
