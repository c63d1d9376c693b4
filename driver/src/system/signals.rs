//! Ctrl-C and SIGTERM: one flag the executor polls.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Installs the Ctrl-C/SIGTERM handler (once per process) and returns the
/// flag it sets. The executor polls it between and during runs.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = Arc::clone(&flag);
        if let Err(e) = ctrlc::set_handler(move || {
            if f.swap(true, Ordering::SeqCst) {
                // Second Ctrl-C: the user insists.
                eprintln!("interrupted again: stopping now");
            } else {
                eprintln!("interrupted: stopping the current run, restoring settings");
            }
        }) {
            tracing::warn!("cannot install the Ctrl-C handler: {e}");
        }
        flag
    })
    .clone()
}
