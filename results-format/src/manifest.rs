//! manifest.json: one type for the driver that writes it and the analysis
//! that reads it.
//!
//! The sweep options and the plan are the driver's types; the manifest is
//! generic over them so this crate does not depend on the driver. The
//! driver reads and writes `Manifest<SweepOptions, PlannedRun>`; the
//! analysis reads the default, `Manifest` (both as JSON values).

use std::io::Write as _;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{FORMAT_VERSION, FormatError, Status};

/// The manifest's file name in a results directory.
pub const MANIFEST_JSON: &str = "manifest.json";

/// A system setting the sweep changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingChange {
    /// The file (e.g. /proc/sys/kernel/perf_event_max_sample_rate).
    pub path: String,
    /// Value before.
    pub old: String,
    /// Value set.
    pub new: String,
    /// Whether the old value has been written back.
    pub restored: bool,
}

/// What the sweep saw of the measured CPU before its first run, with no
/// sampling (`driver sweep` without `--no-host-look`): the counting loop's
/// speed in short slices, the background episodes of its timeline (the
/// gaps design's workload) and steal, and what they mean for the plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLook {
    /// The CPU looked at (the sweep's measured CPU).
    pub cpu: u32,
    /// The loop's length, ns.
    pub duration_ns: u64,
    /// Length of one slice (the paired design's phase length, within
    /// 20 ms..1 s), ns.
    pub slice_ns: u64,
    /// The loop's rate in each slice after a settling period, iterations
    /// per ns, in time order (the raw data the next fields come from).
    pub slice_rates: Vec<f64>,
    /// Coefficient of variation of `slice_rates`, %.
    pub slice_cv_pct: f64,
    /// Slowest over fastest slice.
    pub slice_min_max_ratio: f64,
    /// Standard deviation of the ABBA "loss" of every four consecutive
    /// slices with nothing switched (1 - mean of the middle two over mean
    /// of the outer two), %: the paired design's noise per group of
    /// phases on this host, linear drift cancelled.
    pub abba_sd_pct: f64,
    /// Background episodes (the timeline's gaps joined) per second.
    pub episodes_per_s: f64,
    /// Median excess of an episode, ns.
    pub episode_median_ns: u64,
    /// 99th percentile of the episodes' excess, ns.
    pub episode_p99_ns: u64,
    /// Longest episode's excess, ns.
    pub episode_max_ns: u64,
    /// Share of the loop's time in episodes of at least 100 us, %.
    pub episode_share_100us_pct: f64,
    /// Share of the loop's time in episodes of at least 1 ms, %.
    pub episode_share_1ms_pct: f64,
    /// Steal time of the CPU over the look, % of its wall time.
    pub steal_pct: f64,
    /// The smallest throughput loss the plan's throughput design (paired,
    /// else classic) can resolve, in percentage points: the 95 % interval's
    /// half-width with this noise and the plan's runs and groups. Null when
    /// the plan has no throughput design or one repetition.
    pub resolvable_loss_pct: Option<f64>,
    /// How `resolvable_loss_pct` was reckoned (design, runs, groups, noise).
    pub resolvable_basis: String,
    /// What the look warns of, each a sentence (also in `warnings`).
    pub warnings: Vec<String>,
}

/// manifest.json. Keys other than `format_version` and `options` read as
/// empty when absent (hand-made and test result sets omit them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest<O = serde_json::Value, P = serde_json::Value> {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Driver crate version.
    #[serde(default)]
    pub tool_version: String,
    /// `git rev-parse HEAD` of the source tree, if known.
    #[serde(default)]
    pub git_revision: Option<String>,
    /// running / complete / interrupted.
    #[serde(default)]
    pub status: Status,
    /// UTC RFC 3339.
    #[serde(default)]
    pub started_at: String,
    /// UTC RFC 3339, set when the sweep stops.
    #[serde(default)]
    pub ended_at: Option<String>,
    /// `driver probe --json` facts.
    #[serde(default)]
    pub host: serde_json::Value,
    /// The options as resolved.
    pub options: O,
    /// Seed of the randomised order (also in `options`).
    #[serde(default)]
    pub seed: u64,
    /// Sampling event actually used (after a fallback).
    #[serde(default)]
    pub event: String,
    /// Every planned run.
    #[serde(default = "Vec::new")]
    pub plan: Vec<P>,
    /// Everything switched or doubtful.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// System settings changed and whether they were restored.
    #[serde(default)]
    pub settings_changed: Vec<SettingChange>,
    /// The command line of the first invocation (and of resumes).
    #[serde(default)]
    pub command: Vec<String>,
    /// The look at the host before the first run; null when skipped
    /// (`--no-host-look`), failed, or written before it existed.
    #[serde(default)]
    pub host_look: Option<HostLook>,
}

impl<O, P> Manifest<O, P> {
    /// A short label for the host: `host.hostname`, else the directory name.
    pub fn host_label(&self, dir: &Path) -> String {
        let host = &self.host;
        for key in ["hostname", "host", "name"] {
            if let Some(s) = host[key].as_str() {
                return s.to_string();
            }
        }
        dir.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string())
    }

    /// A field of `host` (e.g. `cpu_model`, `kernel`) as text, if present.
    pub fn host_str(&self, key: &str) -> Option<String> {
        match &self.host[key] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            v => Some(v.to_string()),
        }
    }
}

/// Writes `contents` to `path` through a temporary file beside it (synced,
/// then renamed, removed when any step fails: a full disk left a zero-byte
/// one behind before), so a reader never sees half a file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), std::io::Error> {
    let mut tmp = crate::dir::temporary_beside(path, ".manifest-")?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Replaces `<root>/manifest.json` atomically.
pub fn write_manifest<O: Serialize, P: Serialize>(
    root: &Path,
    manifest: &Manifest<O, P>,
) -> Result<(), FormatError> {
    let path = root.join(MANIFEST_JSON);
    let mut text = serde_json::to_string_pretty(manifest).map_err(|source| FormatError::Json {
        path: path.clone(),
        source,
    })?;
    text.push('\n');
    write_atomic(&path, text.as_bytes()).map_err(FormatError::io(&path))
}

/// Reads `<root>/manifest.json`, refusing a format version this build does
/// not know (checked before the rest, whose shape may differ).
pub fn read_manifest<O: DeserializeOwned, P: DeserializeOwned>(
    root: &Path,
) -> Result<Manifest<O, P>, FormatError> {
    let path = root.join(MANIFEST_JSON);
    let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => FormatError::Missing {
            path: path.clone(),
            what: "manifest.json of the results directory",
        },
        _ => FormatError::corrupt(&path, e),
    })?;
    let raw: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| FormatError::corrupt(&path, e))?;
    let version = &raw["format_version"];
    if version.as_u64() != Some(u64::from(FORMAT_VERSION)) {
        return Err(FormatError::FormatVersion {
            path,
            found: version.to_string(),
        });
    }
    serde_json::from_value(raw).map_err(|e| FormatError::corrupt(&path, e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_manifest_reads_with_defaults() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(MANIFEST_JSON),
            r#"{"format_version": 1, "options": {}, "host": {"hostname": "h", "cpus": 4}}"#,
        )
        .unwrap();
        let m: Manifest = read_manifest(tmp.path()).unwrap();
        assert_eq!(m.status, Status::Unknown);
        assert!(m.plan.is_empty() && m.warnings.is_empty());
        assert_eq!(m.host_label(tmp.path()), "h");
        assert_eq!(m.host_str("cpus").as_deref(), Some("4"));
        assert_eq!(m.host_str("kernel"), None);
    }

    #[test]
    fn another_version_is_refused_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(MANIFEST_JSON),
            r#"{"format_version": 2, "something": "else"}"#,
        )
        .unwrap();
        let e = read_manifest::<serde_json::Value, serde_json::Value>(tmp.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("format_version 2") && e.contains("manifest.json"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_manifest_says_what_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let e = read_manifest::<serde_json::Value, serde_json::Value>(tmp.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing") && e.contains("manifest.json"), "{e}");
    }

    #[test]
    fn a_failed_write_leaves_no_temporary() {
        let tmp = tempfile::tempdir().unwrap();
        // manifest.json is a non-empty directory: the rename fails.
        std::fs::create_dir_all(tmp.path().join(MANIFEST_JSON).join("x")).unwrap();
        let m: Manifest = Manifest::default();
        let e = write_manifest(tmp.path(), &m).unwrap_err().to_string();
        assert!(e.contains("manifest.json"), "{e}");
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with(".manifest-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_written_manifest_is_readable_by_all() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let m: Manifest = Manifest::default();
        write_manifest(tmp.path(), &m).unwrap();
        let mode = std::fs::metadata(tmp.path().join(MANIFEST_JSON))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
    }
}
