//! The kernel interface: perf_event_open, the ring buffer, records, tracefs.
