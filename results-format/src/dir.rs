//! Writing a results directory as the sweep goes: a runs.csv row is
//! appended, flushed and synced when each run ends, and the manifest is
//! replaced atomically (write to a temporary file, then rename), so a crash
//! or Ctrl-C loses at most the run in progress.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::runs::{PHASES_CSV, RUNS_CSV, header_of};
use crate::{FormatError, Manifest, PhaseRow, RunRow};

/// Path of a util run's handler intervals in the results directory `root`.
pub fn events_path(root: &Path, run_id: u32) -> PathBuf {
    root.join("events").join(format!("run-{run_id}.parquet"))
}

/// Path of a run's run summary (the workload's `--json`) in the results directory `root`.
pub fn workload_path(root: &Path, run_id: u32) -> PathBuf {
    root.join("workload").join(format!("run-{run_id}.json"))
}

/// The folder a `--command` run may write its own files into, in the
/// results directory `root` (the command finds it in the environment
/// variable [`COMMAND_DIR_VAR`]).
pub fn command_dir(root: &Path, run_id: u32) -> PathBuf {
    root.join("command").join(format!("run-{run_id}"))
}

/// The environment variable that names a `--command` run's own folder
/// ([`command_dir`]; a temporary one for its warm-up runs).
pub const COMMAND_DIR_VAR: &str = "PERF_OVERHEAD_RUN_DIR";

/// An open results directory, being written.
#[derive(Debug)]
pub struct ResultsDir {
    root: PathBuf,
}

impl ResultsDir {
    /// Creates a new results directory; refuses an existing one.
    pub fn create(root: &Path) -> Result<Self, FormatError> {
        if root.exists() {
            return Err(FormatError::Exists {
                path: root.to_owned(),
            });
        }
        if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(FormatError::io(parent))?;
        }
        std::fs::create_dir(root).map_err(|source| {
            if source.kind() == std::io::ErrorKind::AlreadyExists {
                FormatError::Exists {
                    path: root.to_owned(),
                }
            } else {
                FormatError::Io {
                    path: root.to_owned(),
                    source,
                }
            }
        })?;
        for sub in ["events", "workload"] {
            let p = root.join(sub);
            std::fs::create_dir(&p).map_err(FormatError::io(&p))?;
        }
        // runs.csv and phases.csv start with their header.
        let dir = ResultsDir {
            root: root.to_owned(),
        };
        dir.append_rows::<RunRow>(RUNS_CSV, &[])?;
        dir.append_rows::<PhaseRow>(PHASES_CSV, &[])?;
        Ok(dir)
    }

    /// Opens an existing directory to append to (`--resume`).
    pub fn open_existing(root: &Path) -> Result<Self, FormatError> {
        for sub in ["events", "workload"] {
            let p = root.join(sub);
            std::fs::create_dir_all(&p).map_err(FormatError::io(&p))?;
        }
        check_columns(&root.join(RUNS_CSV), &header_of::<RunRow>())?;
        check_columns(&root.join(PHASES_CSV), &header_of::<PhaseRow>())?;
        Ok(ResultsDir {
            root: root.to_owned(),
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of a util run's handler intervals.
    pub fn events_path(&self, run_id: u32) -> PathBuf {
        events_path(&self.root, run_id)
    }

    /// Appends one runs.csv row, flushed and synced.
    pub fn append_run(&mut self, row: &RunRow) -> Result<(), FormatError> {
        self.append_rows(RUNS_CSV, std::slice::from_ref(row))
    }

    /// Appends phases.csv rows, flushed and synced.
    pub fn append_phases(&mut self, rows: &[PhaseRow]) -> Result<(), FormatError> {
        self.append_rows(PHASES_CSV, rows)
    }

    /// Appends rows to `<root>/<name>` (a CSV with a header row, created on
    /// first use: the gaps design's timeline.csv and recovery.csv exist
    /// only in sweeps that run it), flushed and synced.
    pub fn append_rows<T: Serialize + Default>(
        &self,
        name: &str,
        rows: &[T],
    ) -> Result<(), FormatError> {
        append_csv(&self.root.join(name), &header_of::<T>(), rows)
    }

    /// Creates the directory that will hold `path` (the gaps design's
    /// `gaps/` and `samples/` exist only in sweeps that run it).
    pub fn ensure_parent(&self, path: &Path) -> Result<(), FormatError> {
        match path.parent() {
            Some(dir) => std::fs::create_dir_all(dir).map_err(FormatError::io(dir)),
            None => Ok(()),
        }
    }

    /// Writes a run's run summary (the workload's own JSON).
    pub fn write_workload(&self, run_id: u32, json: &str) -> Result<(), FormatError> {
        let path = workload_path(&self.root, run_id);
        std::fs::write(&path, json).map_err(FormatError::io(&path))
    }

    /// Replaces manifest.json atomically.
    pub fn write_manifest<O: Serialize, P: Serialize>(
        &self,
        manifest: &Manifest<O, P>,
    ) -> Result<(), FormatError> {
        crate::write_manifest(&self.root, manifest)
    }
}

/// An existing CSV's header is `expected` (a missing or empty file passes:
/// the first append writes the header).
fn check_columns(path: &Path, expected: &[String]) -> Result<(), FormatError> {
    use std::io::BufRead;
    let Ok(file) = File::open(path) else {
        return Ok(());
    };
    let mut header = String::new();
    std::io::BufReader::new(file)
        .read_line(&mut header)
        .map_err(FormatError::io(path))?;
    let found: Vec<&str> = header.trim_end().split(',').collect();
    if header.is_empty() || found == expected {
        return Ok(());
    }
    let at = (0..found.len().max(expected.len()))
        .find(|&i| found.get(i).copied() != expected.get(i).map(String::as_str))
        .unwrap_or(0);
    Err(FormatError::Columns {
        path: path.to_owned(),
        found: found.get(at).copied().unwrap_or("").to_owned(),
        expected: expected.get(at).cloned().unwrap_or_default(),
    })
}

/// Appends `rows` to the CSV at `path` (created if missing), `header`
/// first when the file is new or empty; flushed and synced before it
/// returns. The results directory's CSVs and a host's history.csv.
pub(crate) fn append_csv<T: Serialize>(
    path: &Path,
    header: &[String],
    rows: &[T],
) -> Result<(), FormatError> {
    let new = std::fs::metadata(path)
        .map(|m| m.len() == 0)
        .unwrap_or(true);
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(FormatError::io(path))?;
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(file);
    if new {
        w.write_record(header).map_err(FormatError::csv(path))?;
    }
    for row in rows {
        w.serialize(row).map_err(FormatError::csv(path))?;
    }
    w.flush().map_err(FormatError::io(path))?;
    w.get_ref().sync_data().map_err(FormatError::io(path))
}

/// A temporary file in `path`'s folder, named `prefix...`, to be persisted
/// as `path`: removed on drop unless persisted, so a failed write leaves
/// nothing; rw-r--r--, as `File::create` would make it (tempfile's own is
/// 0600).
pub(crate) fn temporary_beside(
    path: &Path,
    prefix: &str,
) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .tempfile_in(dir)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::{Design, RunKind, RunStatus, Status, read_manifest, read_phases, read_runs};

    #[test]
    fn round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("r");
        let mut dir = ResultsDir::create(&root).unwrap();
        let m: Manifest = Manifest {
            format_version: crate::FORMAT_VERSION,
            status: Status::Running,
            plan: vec![serde_json::json!({"run_id": 0})],
            options: serde_json::json!({"reps": 2}),
            ..Manifest::default()
        };
        dir.write_manifest(&m).unwrap();
        let row = RunRow {
            run_id: 3,
            kind: RunKind::Util,
            design: Design::Gaps,
            freq_hz: 4000,
            achieved_hz: 3998.5,
            quiet: true,
            error: "boom, \"quoted\"\nline".into(),
            status: RunStatus::Failed,
            contents: "callchain".into(),
            workload: "stack:8".into(),
            callchain_mean: Some(3.5),
            perf_event_max_sample_rate_after: Some(1000),
            ..RunRow::default()
        };
        dir.append_run(&row).unwrap();
        dir.append_run(&RunRow {
            run_id: 4,
            ..row.clone()
        })
        .unwrap();
        let ph = PhaseRow {
            run_id: 3,
            phase: 1,
            sampling: true,
            iterations: 10,
            order: "ABBA".into(),
            ..PhaseRow::default()
        };
        dir.append_phases(&[ph.clone(), ph.clone()]).unwrap();
        drop(dir);
        let rows = read_runs(&root).unwrap();
        assert_eq!(
            rows,
            vec![
                row.clone(),
                RunRow {
                    run_id: 4,
                    ..row.clone()
                }
            ]
        );
        assert_eq!(read_phases(&root).unwrap(), vec![ph.clone(), ph]);
        assert_eq!(
            read_manifest::<serde_json::Value, serde_json::Value>(&root).unwrap(),
            m
        );
        // Appending after reopening keeps one header.
        let mut dir = ResultsDir::open_existing(&root).unwrap();
        dir.append_run(&RunRow { run_id: 5, ..row }).unwrap();
        assert_eq!(read_runs(&root).unwrap().len(), 3);
        let text = std::fs::read_to_string(root.join(RUNS_CSV)).unwrap();
        assert_eq!(text.matches("run_id,kind").count(), 1);
        // A sweep whose runs.csv has another driver's columns is refused.
        std::fs::write(root.join(RUNS_CSV), "run_id,kind,design\n1,loss,classic\n").unwrap();
        let e = ResultsDir::open_existing(&root).err().unwrap().to_string();
        assert!(
            e.contains("another driver version") && e.contains("`block`"),
            "{e}"
        );
    }

    #[test]
    fn refuses_existing_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let e = ResultsDir::create(tmp.path()).unwrap_err().to_string();
        assert!(
            e.contains("already exists") && e.contains("--resume"),
            "{e}"
        );
    }

    #[test]
    fn columns_start_with_the_documented_order() {
        let cols = header_of::<RunRow>();
        assert_eq!(&cols[..3], &["run_id", "kind", "design"]);
        assert!(cols.contains(&"noisy".to_owned()));
        assert_eq!(
            header_of::<PhaseRow>()[..3],
            ["run_id", "phase", "sampling"]
        );
    }

    #[test]
    fn older_rows_read_with_their_documented_defaults() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(RUNS_CSV),
            "run_id,kind,design,freq_hz,iterations,status,extra\n\
             0,loss,,4000,10,ok,x\n\
             1,util,paired,100,20,failed,y\n\
             2,loss,gaps,10",
        )
        .unwrap();
        let rows = read_runs(tmp.path()).unwrap();
        // The torn last line is skipped.
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].design, Design::Classic);
        assert_eq!(
            (rows[0].contents.as_str(), rows[0].workload.as_str()),
            ("time", "loop")
        );
        assert_eq!(rows[0].callchain_mean, None);
        assert!(rows[0].ok() && !rows[1].ok());
        assert_eq!(
            (rows[1].kind, rows[1].design),
            (RunKind::Util, Design::Paired)
        );
    }

    #[test]
    fn an_unreadable_row_before_the_last_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(RUNS_CSV),
            "run_id,kind,freq_hz,iterations,status\n0,loss,1,x,ok\n1,loss,1,2,ok\n",
        )
        .unwrap();
        let e = read_runs(tmp.path()).unwrap_err().to_string();
        assert!(
            e.contains("runs.csv") && e.contains("line 2, column `iterations`: "),
            "{e}"
        );
    }

    #[test]
    fn a_missing_required_column_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join(RUNS_CSV),
            "run_id,kind,freq_hz,status\n0,loss,1,ok\n",
        )
        .unwrap();
        let e = read_runs(tmp.path()).unwrap_err().to_string();
        assert!(
            e.contains("no column `iterations`") && e.contains("runs.csv"),
            "{e}"
        );
        std::fs::write(tmp.path().join(PHASES_CSV), "run_id,phase\n0,0\n").unwrap();
        let e = read_phases(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("no column `sampling`"), "{e}");
    }
}
