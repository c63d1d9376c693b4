//! errno translation: causes and fixes in the message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io;

use driver::perf::PerfError;
use driver::perf::error::OpenContext;

fn ctx(freq_hz: u64) -> OpenContext {
    OpenContext {
        event: "cycles".into(),
        freq_hz,
        pid: -1,
        cpu: 1,
    }
}

fn err(errno: i32, freq_hz: u64) -> PerfError {
    PerfError::from_open(io::Error::from_raw_os_error(errno), &ctx(freq_hz))
}

#[test]
fn enoent_and_eopnotsupp_name_the_cpu_clock_fallback() {
    for e in [libc::ENOENT, libc::EOPNOTSUPP] {
        let p = err(e, 1000);
        assert!(p.is_no_such_event());
        let m = p.to_string();
        assert!(m.contains("cpu-clock") && m.contains("VM"), "{m}");
    }
}

#[test]
fn eacces_quotes_paranoid_and_names_the_capability() {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    for e in [libc::EACCES, libc::EPERM] {
        let m = err(e, 1000).to_string();
        assert!(
            m.contains(&format!("perf_event_paranoid is {paranoid}")),
            "{m}"
        );
        assert!(
            m.contains("CAP_PERFMON") && m.contains("root") && m.contains("tracing"),
            "{m}"
        );
    }
}

#[test]
fn einval_above_the_max_rate_names_the_sysctl_else_not() {
    let Ok(max) = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate") else {
        common::skip_or_fail("there is no /proc/sys/kernel/perf_event_max_sample_rate");
        return;
    };
    let max: u64 = max.trim().parse().unwrap();
    let m = err(libc::EINVAL, max + 1).to_string();
    assert!(
        m.contains("kernel.perf_event_max_sample_rate") && m.contains(&max.to_string()),
        "{m}"
    );
    let m = err(libc::EINVAL, max).to_string();
    assert!(!m.contains("perf_event_max_sample_rate"), "{m}");
}

#[test]
fn other_errnos_have_their_causes() {
    assert!(err(libc::ESRCH, 0).to_string().contains("exited"));
    assert!(err(libc::EMFILE, 0).to_string().contains("ulimit"));
    assert!(err(libc::E2BIG, 0).to_string().contains("E2BIG"));
    let m = err(libc::EBUSY, 0).to_string();
    assert!(m.contains("perf_event_open") && m.contains("cycles"), "{m}");
}
