//! The host traits that move what a sample costs beside the CPU model:
//! mitigations, cpuidle, the preemption model, microcode, and the kernel
//! config that also gives the tick rate. Each is None where the host does
//! not expose it (never a guess), with a debug line naming the path; an
//! unreadable file never stops a sweep.

use std::collections::BTreeMap;
use std::io::Read;

use serde::{Deserialize, Serialize};

const VULNERABILITIES: &str = "/sys/devices/system/cpu/vulnerabilities";
const CPUIDLE: &str = "/sys/devices/system/cpu/cpuidle";

/// The traits as the manifest's `host` holds them (older manifests lack
/// the keys: each reads as None).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostTraits {
    /// /sys/devices/system/cpu/vulnerabilities: each file's name and line.
    pub vulnerabilities: Option<BTreeMap<String, String>>,
    /// /sys/devices/system/cpu/cpuidle/current_driver.
    pub cpuidle_driver: Option<String>,
    /// cpuidle's current_governor (else current_governor_ro).
    pub cpuidle_governor: Option<String>,
    /// `none`, `voluntary`, `full`, `lazy`, `rt`, or `dynamic(MODE)`
    /// (`dynamic` where the mode is not readable).
    pub preempt: Option<String>,
    /// Where `preempt` was read.
    pub preempt_source: Option<String>,
    /// /proc/cpuinfo `microcode`.
    pub microcode: Option<String>,
}

/// A file's trimmed text, or None with a debug line naming it (the
/// probe's one reader of host files).
pub fn read(path: &str) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(s) => Some(s.trim().to_string()),
        Err(e) => {
            tracing::debug!("probe: cannot read {path}: {e}");
            None
        }
    }
}

/// The kernel's build config and where it was read: /boot/config-RELEASE,
/// else /proc/config.gz.
pub fn kernel_config(release: &str) -> Option<(String, &'static str)> {
    if let Some(text) = read(&format!("/boot/config-{release}")) {
        return Some((text, "/boot/config-RELEASE"));
    }
    let gz = "/proc/config.gz";
    let mut text = String::new();
    match std::fs::File::open(gz)
        .and_then(|f| flate2::read::GzDecoder::new(f).read_to_string(&mut text))
    {
        Ok(_) => Some((text, gz)),
        Err(e) => {
            tracing::debug!("host trait: cannot read {gz}: {e}");
            None
        }
    }
}

/// Reads every trait; `config` is [`kernel_config`]'s, `uname_v` is
/// `uname -v`, `microcode` the first CPU's /proc/cpuinfo field.
pub fn read_traits(
    config: Option<&(String, &'static str)>,
    uname_v: &str,
    microcode: Option<String>,
) -> HostTraits {
    let vulnerabilities = match std::fs::read_dir(VULNERABILITIES) {
        Ok(dir) => Some(
            dir.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    Some((name, read(&e.path().to_string_lossy())?))
                })
                .collect(),
        ),
        Err(e) => {
            tracing::debug!("host trait: cannot list {VULNERABILITIES}: {e}");
            None
        }
    };
    let cmdline = read("/proc/cmdline").unwrap_or_default();
    let (preempt, preempt_source) = read("/sys/kernel/debug/sched/preempt")
        .and_then(|t| Some((preempt_of_debugfs(&t)?, "/sys/kernel/debug/sched/preempt")))
        .or_else(|| {
            let (text, path) = config?;
            Some((preempt_of_config(text, &cmdline)?, *path))
        })
        .or_else(|| Some((preempt_of_uname(uname_v)?, "uname -v")))
        .unzip();
    if microcode.is_none() {
        tracing::debug!("host trait: /proc/cpuinfo has no `microcode`");
    }
    HostTraits {
        vulnerabilities,
        cpuidle_driver: read(&format!("{CPUIDLE}/current_driver")),
        cpuidle_governor: read(&format!("{CPUIDLE}/current_governor"))
            .or_else(|| read(&format!("{CPUIDLE}/current_governor_ro"))),
        preempt,
        preempt_source: preempt_source.map(str::to_owned),
        microcode,
    }
}

/// debugfs's `none voluntary (full) lazy`: the mode in parentheses.
pub fn preempt_of_debugfs(text: &str) -> Option<String> {
    let mode = text.split_whitespace().find(|w| w.starts_with('('))?;
    Some(format!("dynamic({})", mode.trim_matches(['(', ')'])))
}

/// From the kernel config: rt, else the built model; with
/// PREEMPT_DYNAMIC, `dynamic(MODE)`, the mode from the command line's
/// `preempt=` where given, else the built default.
pub fn preempt_of_config(config: &str, cmdline: &str) -> Option<String> {
    let set = |key: &str| config.lines().any(|l| l == format!("CONFIG_{key}=y"));
    if set("PREEMPT_RT") {
        return Some("rt".into());
    }
    let built = [
        ("PREEMPT_NONE", "none"),
        ("PREEMPT_VOLUNTARY", "voluntary"),
        ("PREEMPT", "full"),
        ("PREEMPT_LAZY", "lazy"),
    ]
    .into_iter()
    .find(|(k, _)| set(k))
    .map(|(_, m)| m);
    let boot = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("preempt="));
    match set("PREEMPT_DYNAMIC") {
        true => Some(format!("dynamic({})", boot.or(built)?)),
        false => built.map(str::to_owned),
    }
}

/// `uname -v`'s words: PREEMPT_RT, PREEMPT_DYNAMIC, PREEMPT (full); a
/// kernel built without preemption says nothing there (None).
pub fn preempt_of_uname(v: &str) -> Option<String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    [
        ("PREEMPT_RT", "rt"),
        ("PREEMPT_DYNAMIC", "dynamic"),
        ("PREEMPT", "full"),
    ]
    .into_iter()
    .find(|(w, _)| words.contains(w))
    .map(|(_, m)| m.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_model_from_each_source() {
        let d = preempt_of_debugfs("none voluntary (full) lazy");
        assert_eq!(d.as_deref(), Some("dynamic(full)"));
        let cfg = "CONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\n";
        assert_eq!(
            preempt_of_config(cfg, "ro").as_deref(),
            Some("dynamic(none)")
        );
        let boot = preempt_of_config(cfg, "ro preempt=full quiet");
        assert_eq!(boot.as_deref(), Some("dynamic(full)"));
        let vol = preempt_of_config("CONFIG_PREEMPT_VOLUNTARY=y\n", "");
        assert_eq!(vol.as_deref(), Some("voluntary"));
        let rt = preempt_of_config("CONFIG_PREEMPT=y\nCONFIG_PREEMPT_RT=y\n", "");
        assert_eq!(rt.as_deref(), Some("rt"));
        assert_eq!(preempt_of_config("CONFIG_HZ=250\n", ""), None);
        let u = preempt_of_uname("#1 SMP PREEMPT_DYNAMIC @0");
        assert_eq!(u.as_deref(), Some("dynamic"));
        assert_eq!(
            preempt_of_uname("#1 SMP PREEMPT Tue").as_deref(),
            Some("full")
        );
        assert_eq!(preempt_of_uname("#1 SMP Tue"), None);
    }
}
