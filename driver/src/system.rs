//! The host around a sweep, by what it does: the perf sysctls changed and
//! restored ([`settings`]), the Ctrl-C/SIGTERM flag ([`signals`]), the
//! driver's clocks ([`clock`]), /proc/stat ([`procstat`]), the quiet
//! check before a run ([`quiet`]) and the phase controller's real-time
//! priority ([`realtime`]). Callers name the part they use.

pub mod clock;
pub mod process;
pub mod procstat;
pub mod quiet;
pub mod realtime;
pub mod settings;
pub mod signals;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::procstat::*;
    use super::quiet::*;
    use super::settings::*;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn quiet_check_returns_on_interrupt() {
        // Never quiet (threshold below 0%), a 10 s limit: only the interrupt
        // can end it after the first 10 ms window.
        let stop = std::sync::atomic::AtomicBool::new(true);
        let r = wait_quiet(
            0,
            Duration::from_secs(10),
            Duration::from_millis(10),
            -1.0,
            &stop,
        );
        assert!(!r.quiet);
        assert!(r.waited_ns < 5_000_000_000, "waited {} ns", r.waited_ns);
    }

    const STAT: &str = "cpu  10 0 10 100 0 0 0 5 0 0\n\
        cpu0 4 0 6 50 0 0 0 2 0 0\n\
        cpu1 6 1 4 50 3 2 1 3 0 0\n\
        intr 1 2 3\nprocs_running 3\nprocs_blocked 0\n";

    #[test]
    fn parses_proc_stat() {
        let s = ProcStat::parse(STAT);
        assert_eq!(s.procs_running, 3);
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(
            s.cpu(1),
            CpuTicks {
                busy: 14,
                idle: 53,
                steal: 3
            }
        );
        assert_eq!(s.cpu(7), CpuTicks::default());
        // CPU 1 offline: it has no line, and CPU 2's ticks stay CPU 2's.
        let s = ProcStat::parse("cpu0 1 0 0 9 0 0 0 0 0 0\ncpu2 2 0 0 8 0 0 0 4 0 0\n");
        assert_eq!(s.cpu(1), CpuTicks::default());
        assert_eq!(
            s.cpu(2),
            CpuTicks {
                busy: 2,
                idle: 8,
                steal: 4
            }
        );
    }

    #[test]
    fn proc_stat_ticks_match_procfs() {
        use procfs::{ExplicitSystemInfo, FromReadSI, KernelStats};
        // One read of this host's /proc/stat, parsed by both: procfs's
        // per-CPU list is in line order, so pair it with the lines' CPU
        // numbers.
        let text = std::fs::read_to_string("/proc/stat").unwrap();
        let ours = ProcStat::parse(&text);
        let si = ExplicitSystemInfo {
            boot_time_secs: 0,
            ticks_per_second: 100,
            page_size: 4096,
            is_little_endian: cfg!(target_endian = "little"),
        };
        let theirs = KernelStats::from_read(text.as_bytes(), &si).unwrap();
        let numbers: Vec<u32> = text
            .lines()
            .filter_map(|l| {
                l.split_ascii_whitespace()
                    .next()?
                    .strip_prefix("cpu")?
                    .parse()
                    .ok()
            })
            .collect();
        assert_eq!(numbers.len(), theirs.cpu_time.len());
        assert!(!numbers.is_empty());
        for (cpu, t) in numbers.iter().zip(&theirs.cpu_time) {
            let o = |v: Option<u64>| v.unwrap_or(0);
            let want = CpuTicks {
                busy: t.user + t.nice + t.system + o(t.irq) + o(t.softirq),
                idle: t.idle + o(t.iowait),
                steal: o(t.steal),
            };
            assert_eq!(ours.cpu(*cpu), want, "cpu{cpu}");
        }
        assert_eq!(ours.procs_running, u64::from(theirs.procs_running.unwrap()));
    }

    #[test]
    fn busy_percentage() {
        let a = CpuTicks {
            busy: 10,
            idle: 90,
            steal: 0,
        };
        let b = CpuTicks {
            busy: 15,
            idle: 185,
            steal: 0,
        };
        assert!((busy_pct(a, b) - 5.0).abs() < 1e-9);
        assert_eq!(busy_pct(a, a), 0.0);
    }

    #[test]
    fn guard_restores_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sysctl");
        std::fs::write(&p, "100000\n").unwrap();
        {
            let mut g = SettingsGuard::default();
            g.set(&p, "200000").unwrap();
            assert_eq!(std::fs::read_to_string(&p).unwrap(), "200000");
            assert_eq!(g.changes()[0].old, "100000");
            assert!(!g.changes()[0].restored);
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "100000");
    }

    #[test]
    fn persisted_guard_records_before_changing_and_clears_after_restoring() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sysctl");
        let state = tmp.path().join("state");
        std::fs::write(&p, "100000\n").unwrap();
        let mut g = SettingsGuard::persisted(&state, Path::new("/r"));
        g.set(&p, "150000").unwrap();
        let s = crate::hoststate::read_state(&state).unwrap().unwrap();
        assert_eq!(s.owner.pid, std::process::id());
        assert_eq!(s.changes.len(), 1);
        assert_eq!(
            (s.changes[0].old.as_str(), s.changes[0].new.as_str()),
            ("100000", "150000")
        );
        // What a kill -9 leaves: the process gone, the file still there.
        std::mem::forget(g);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "150000");
        let r = crate::hoststate::handle_leftovers(&state, crate::hoststate::OnLeftover::Restore)
            .unwrap();
        assert_eq!(
            r.items[0].action,
            crate::hoststate::LeftoverAction::Restored
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "100000");
        // A clean run: recorded, restored, file gone.
        {
            let mut g = SettingsGuard::persisted(&state, Path::new("/r"));
            g.set(&p, "150000").unwrap();
            assert!(state.join(crate::hoststate::STATE_FILE).exists());
            assert!(g.restore().is_empty());
        }
        assert!(!state.join(crate::hoststate::STATE_FILE).exists());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "100000");
    }

    #[test]
    fn persisted_guard_refuses_to_change_what_it_cannot_record() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sysctl");
        std::fs::write(&p, "1").unwrap();
        // The state "directory" is a file: recording fails, nothing changes.
        let state = tmp.path().join("not-a-dir");
        std::fs::write(&state, "").unwrap();
        let mut g = SettingsGuard::persisted(&state, Path::new("/r"));
        assert!(g.set(&p, "2").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "1");
        assert!(g.changes().is_empty());
    }

    #[test]
    fn guard_restores_on_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("sysctl");
        std::fs::write(&p, "1").unwrap();
        let p2 = p.clone();
        let r = std::panic::catch_unwind(move || {
            let mut g = SettingsGuard::default();
            g.set(&p2, "2").unwrap();
            panic!("boom");
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "1");
    }

    #[test]
    fn drain_cpu_differs() {
        assert_eq!(other_cpu(1, &[0, 1]), Some(0));
        assert_eq!(other_cpu(0, &[0, 1]), Some(1));
        assert_eq!(other_cpu(0, &[0]), None);
        // A hole in the online list is never chosen.
        assert_eq!(other_cpu(3, &[0, 1, 3]), Some(1));
    }
}
