//! The `--profiler` settings: a real profiler (perf record, bpftrace, an
//! eBPF agent) run as the sampler in place of ours, its command a template
//! with `{freq}` and `{cpu}`, and the settings that do not apply to it.

use super::resolve::Sources;
use super::user_command::{find_program, only_design, split_command};
use super::{ConfigError, Design, invalid};

/// The placeholder for the run's sampling rate, Hz.
const FREQ_PLACEHOLDER: &str = "{freq}";
/// The placeholder for the measured CPU.
const CPU_PLACEHOLDER: &str = "{cpu}";

/// The profiler's argv at `freq_hz` on `cpu`: the template's placeholders
/// replaced, then split into words like a shell does.
pub fn profiler_argv(template: &str, freq_hz: u64, cpu: u32) -> Result<Vec<String>, String> {
    let text = template
        .replace(FREQ_PLACEHOLDER, &freq_hz.to_string())
        .replace(CPU_PLACEHOLDER, &cpu.to_string());
    split_command(&text)
}

/// The profiler's template from `--profiler` or the file's `profiler`,
/// checked: it splits into words, names a program that exists, and says
/// where its rate goes (`{freq}`); None without a profiler.
pub(super) fn resolve_profiler(src: &Sources<'_>) -> Result<Option<String>, ConfigError> {
    let (flag, file) = (src.flags.profiler.clone(), src.exp.profiler.clone());
    let Some((text, origin)) = src.given_at((flag, "--profiler"), (file, "profiler")) else {
        return Ok(None);
    };
    let example = "e.g. --profiler 'perf record -e cpu-clock -F {freq} -C {cpu} -g -o /dev/null'";
    if !text.contains(FREQ_PLACEHOLDER) {
        return Err(invalid(
            text,
            &origin,
            "it has no {freq}: the sweep sets the profiler's rate at each frequency",
            format!("put {{freq}} where the profiler takes its rate, {example}"),
        ));
    }
    let argv = profiler_argv(&text, 1, 0)
        .map_err(|p| invalid(text.as_str(), &origin, p, format!("give {example}")))?;
    let path = std::env::var("PATH").ok();
    find_program(&argv[0], path.as_deref()).map_err(|p| {
        invalid(
            text.as_str(),
            &origin,
            p,
            "install it (perf: Debian's linux-perf; bpftrace: bpftrace), or give its path",
        )
    })?;
    Ok(Some(text))
}

/// Refuses what has no meaning with a profiler on the loop: only the gaps
/// design measures it (the paired design switches our own sampler on and
/// off, which an external profiler cannot be). On a `--command` the
/// command's own checks hold (whole runs, the classic design).
pub(super) fn refuse_with_profiler(src: &Sources<'_>) -> Result<(), ConfigError> {
    only_design(
        src,
        Design::Gaps,
        "a profiler is measured by the gaps design only (the paired design switches our own sampler on and off in phases, which an external profiler cannot be)",
        "drop the design (gaps is used) or give --design gaps",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_before_the_split() {
        let argv = profiler_argv(
            "bpftrace -e 'profile:hz:{freq} /cpu == {cpu}/ { @[kstack] = count(); }'",
            99,
            1,
        )
        .unwrap();
        assert_eq!(argv[0], "bpftrace");
        assert_eq!(argv[2], "profile:hz:99 /cpu == 1/ { @[kstack] = count(); }");
        assert!(profiler_argv("'unclosed {freq}", 1, 0).is_err());
    }
}
