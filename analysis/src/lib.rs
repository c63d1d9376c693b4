//! Results directory -> utilisation and loss tables, fitted factors, plots,
//! report, safe-rate recommendation and cross-host comparison.
