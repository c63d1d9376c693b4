//! The `--command` settings: the user's program, its warm-up, and the
//! settings that do not apply to it (each refused with the reason).

use std::path::{Path, PathBuf};

use super::resolve::Sources;
use super::{
    ConfigError, Design, FlagList, OneOrMany, Origin, ScopeName, invalid, parse_design, parse_scope,
};

/// Most warm-up runs allowed.
pub const MAX_WARMUP: i64 = 100;
/// Warm-up runs when none is given: one, which also checks that the
/// command works and tells how long it runs (to size the rings).
pub const DEFAULT_WARMUP: u32 = 1;

/// The command's argv from `--command` or the file's `command`, its
/// program found (on PATH or as a path); None without a command.
pub(super) fn resolve_command(src: &Sources<'_>) -> Result<Option<Vec<String>>, ConfigError> {
    let (given, origin, fix) = match (&src.flags.command, &src.exp.command) {
        (Some(text), _) => (
            OneOrMany::One(text.clone()),
            Origin::Flag("--command"),
            "give the program and its arguments, e.g. --command 'gzip -9 -c data.bin' (for pipes or redirections: --command \"sh -c '...'\")",
        ),
        (None, Some(c)) => (
            c.clone(),
            src.key("command"),
            "give e.g. command = \"gzip -9 -c data.bin\"",
        ),
        (None, None) => return Ok(None),
    };
    let argv = match given {
        OneOrMany::One(text) => {
            split_command(&text).map_err(|p| invalid(text.as_str(), &origin, p, fix))?
        }
        OneOrMany::Many(list) if list.is_empty() => {
            return Err(invalid(
                "[]",
                &origin,
                "no program in it",
                "give e.g. command = [\"gzip\", \"-9\", \"-c\", \"data.bin\"]",
            ));
        }
        OneOrMany::Many(list) => list,
    };
    // The flag as given; the file's command as the words it makes.
    let shown = src
        .flags
        .command
        .clone()
        .unwrap_or_else(|| shell_words::join(&argv));
    let program = argv.first().map(String::as_str).unwrap_or("");
    let path = std::env::var("PATH").ok();
    find_program(program, path.as_deref()).map_err(|p| {
        invalid(
            shown,
            &origin,
            p,
            "install it, or give its path (e.g. ./build/myprog or /usr/bin/gzip)",
        )
    })?;
    Ok(Some(argv))
}

/// Refuses the settings that have no meaning for a command: it runs to
/// completion (no --duration), it is the workload (no --work), a
/// per-task sampler would have to be opened before it starts (no --scope
/// task), and only whole runs measure it (no paired or gaps design).
pub(super) fn refuse_with_command(src: &Sources<'_>) -> Result<(), ConfigError> {
    let (flags, exp) = (src.flags, src.exp);
    let flag_duration = flags
        .duration_ns
        .map(|ns| workload::duration::format_duration(std::time::Duration::from_nanos(ns)));
    let duration = src.given_at(
        (flag_duration, "--duration"),
        (exp.duration.clone(), "duration"),
    );
    if let Some((v, o)) = duration {
        return Err(invalid(
            v,
            &o,
            "a command runs to completion: its wall time is the measurement",
            "drop the duration (use --reps for more runs)",
        ));
    }
    let workload = (exp.workload.as_ref(), "workload");
    if let Some((v, o)) = given_list(src, (flags.workload.as_ref(), "--work"), workload) {
        return Err(invalid(
            v,
            &o,
            "the command is the workload",
            "drop the workload setting, or drop the command to use the built-in loop",
        ));
    }
    let flag_scope = flags.scope.map(|s| s.as_str().to_owned());
    let scope = src.given_at((flag_scope, "--scope"), (exp.scope.clone(), "scope"));
    if let Some((v, o)) = scope
        && parse_scope(v.trim(), &o).ok() == Some(ScopeName::Task)
    {
        return Err(invalid(
            v,
            &o,
            "a per-task sampler must be opened before the command starts, which --command does not do",
            "use --scope cpu (the command's CPU, like perf record -C) or system",
        ));
    }
    only_design(
        src,
        Design::Classic,
        "only whole runs measure a command (the paired and gaps designs need the built-in loop's count and timeline)",
        "drop the design (classic is used) or give --design classic",
    )?;
    Ok(())
}

/// Refuses a `--design` (flag or experiment file) other than `only`,
/// with `why` and `fix`: a command is measured by whole runs, a profiler
/// by the gaps design.
pub(super) fn only_design(
    src: &Sources<'_>,
    only: Design,
    why: &str,
    fix: &str,
) -> Result<(), ConfigError> {
    let design = (src.exp.design.as_ref(), "design");
    match given_list(src, (src.flags.design.as_ref(), "--design"), design) {
        Some((v, o))
            if v.split(',')
                .any(|d| parse_design(d.trim(), &o).ok() != Some(only)) =>
        {
            Err(invalid(v, &o, why, fix))
        }
        _ => Ok(()),
    }
}

/// A list setting as given, written back comma-separated, with where it
/// came from: the flag `name`, else the experiment file's `key`.
fn given_list<T: std::fmt::Display>(
    src: &Sources<'_>,
    (flag, name): (Option<&FlagList<T>>, &'static str),
    (file, key): (Option<&OneOrMany<String>>, &'static str),
) -> Option<(String, Origin)> {
    let flag = flag.map(|FlagList(list)| list.iter().map(T::to_string).collect::<Vec<_>>());
    let file = file.map(OneOrMany::to_vec);
    src.given_at((flag, name), (file, key))
        .map(|(list, o)| (list.join(","), o))
}

/// `--warmup` or the file's `warmup`: at least 1 with a command (the first
/// run checks it and sizes the rings), refused without one.
pub(super) fn resolve_warmup(src: &Sources<'_>, for_command: bool) -> Result<u32, ConfigError> {
    let flag = src.flags.warmup.map(i64::from);
    let Some((n, origin)) = src.given_at((flag, "--warmup"), (src.exp.warmup, "warmup")) else {
        return Ok(if for_command { DEFAULT_WARMUP } else { 0 });
    };
    if !for_command {
        return Err(invalid(
            n.to_string(),
            &origin,
            "warm-up runs are for --command",
            "drop it, or give a command",
        ));
    }
    check_warmup(n, &n.to_string(), &origin)
}

/// A number of warm-up runs: 1 to [`MAX_WARMUP`]; `text` is the value as
/// given, for the message.
pub(super) fn check_warmup(n: i64, text: &str, origin: &Origin) -> Result<u32, ConfigError> {
    match u32::try_from(n) {
        Ok(w) if (1..=MAX_WARMUP).contains(&n) => Ok(w),
        _ => Err(invalid(
            text,
            origin,
            format!(
                "must be 1 to {MAX_WARMUP}: the first warm-up run checks the command and tells how long it runs"
            ),
            "give e.g. --warmup 2",
        )),
    }
}

/// The argv of `--command` (or the experiment file's `command`), split like
/// a POSIX shell splits words (quotes and backslashes; no expansion, no
/// pipes: for those give `sh -c '...'`).
pub fn split_command(text: &str) -> Result<Vec<String>, String> {
    let argv = shell_words::split(text).map_err(|e| format!("cannot split it into words: {e}"))?;
    if argv.is_empty() {
        return Err("no program in it".to_string());
    }
    Ok(argv)
}

/// Where `program` is run from: itself when it names a path (has a `/`),
/// else the first executable of that name on `path_var` (`$PATH`).
// Kept by hand rather than the `which` crate: fifteen lines that name each
// failure (missing, not executable, not on the PATH searched) in the error
// the user sees, which `which` would still need wrapped.
pub fn find_program(program: &str, path_var: Option<&str>) -> Result<PathBuf, String> {
    if program.contains('/') {
        let p = Path::new(program);
        return if is_executable(p) {
            Ok(p.to_path_buf())
        } else if p.exists() {
            Err(format!("{program} is not an executable file"))
        } else {
            Err(format!("{program} does not exist"))
        };
    }
    let dirs = path_var.unwrap_or("");
    dirs.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| is_executable(p))
        .ok_or_else(|| format!("no executable {program} on PATH ({dirs})"))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{find_program, split_command};

    #[test]
    fn splits_like_a_shell_and_refuses_nothing_or_open_quotes() {
        assert_eq!(
            split_command("gzip -9 -c 'a file.bin'").unwrap(),
            vec!["gzip", "-9", "-c", "a file.bin"]
        );
        assert!(split_command("  ").unwrap_err().contains("no program"));
        assert!(
            split_command("sh -c 'echo")
                .unwrap_err()
                .contains("cannot split")
        );
    }

    #[test]
    fn finds_programs_on_path_and_names_what_is_missing() {
        let found = find_program("sh", Some("/nonexistent:/bin:/usr/bin")).unwrap();
        assert!(found.ends_with("sh"), "{found:?}");
        let e = find_program("no-such-program-xyz", Some("/bin:/usr/bin")).unwrap_err();
        assert!(
            e.contains("no executable no-such-program-xyz on PATH (/bin:/usr/bin)"),
            "{e}"
        );
        assert!(
            find_program("/etc/passwd", None)
                .unwrap_err()
                .contains("not an executable")
        );
        assert!(
            find_program("./missing/prog", None)
                .unwrap_err()
                .contains("does not exist")
        );
    }
}
