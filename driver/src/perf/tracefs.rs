//! tracefs: where it is, tracepoint ids and field layouts (read from each
//! tracepoint's `format` file, never hard-coded), and kernel symbol
//! addresses from /proc/kallsyms.

use std::path::{Path, PathBuf};

use super::error::PerfError;

/// The usual mount points, in order of preference.
pub const CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

fn is_tracefs(dir: &Path) -> bool {
    dir.join("events").is_dir()
}

/// Finds a mounted tracefs: the usual places first, then /proc/mounts.
pub fn find() -> Option<PathBuf> {
    let mounted = || mounts_tracefs(&std::fs::read_to_string("/proc/mounts").unwrap_or_default());
    CANDIDATES
        .iter()
        .map(PathBuf::from)
        .chain(std::iter::once_with(mounted).flatten())
        .find(|p| is_tracefs(p))
}

/// tracefs mount points listed in a /proc/mounts text.
// Kept, not procfs's MountEntry: it leaves a space (`\040`) escaped.
pub fn mounts_tracefs(mounts: &str) -> Vec<PathBuf> {
    mounts
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let _dev = it.next()?;
            let dir = it.next()?;
            let fs = it.next()?;
            (fs == "tracefs").then(|| PathBuf::from(dir.replace("\\040", " ")))
        })
        .collect()
}

/// Finds tracefs, mounting it at /sys/kernel/tracing when absent and we are
/// root (`mount -t tracefs nodev /sys/kernel/tracing`); otherwise explains.
pub fn find_or_mount() -> Result<PathBuf, PerfError> {
    if let Some(p) = find() {
        return Ok(p);
    }
    let missing = |fix: String| PerfError::TracefsMissing {
        tried: format!("{}, /proc/mounts", CANDIDATES.join(", ")),
        fix,
    };
    let target = Path::new(CANDIDATES[0]);
    if !rustix::process::geteuid().is_root() {
        return Err(missing(
            "Fix: as root, `mount -t tracefs nodev /sys/kernel/tracing` (the driver does it \
             itself when run as root)"
                .into(),
        ));
    }
    if !target.is_dir() {
        return Err(missing(format!(
            "{} does not exist (kernel built without CONFIG_TRACING/tracefs?)",
            target.display()
        )));
    }
    match super::sys::mount_tracefs(c"/sys/kernel/tracing") {
        Ok(()) if is_tracefs(target) => {
            tracing::info!("mounted tracefs at {}", target.display());
            Ok(target.to_path_buf())
        }
        Ok(()) => Err(missing(
            "mounted tracefs at /sys/kernel/tracing but it has no events/ directory".into(),
        )),
        Err(e) => Err(missing(format!(
            "mounting it at /sys/kernel/tracing failed: {e}"
        ))),
    }
}

/// One field of a tracepoint's raw record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (`hrtimer`, `delta_ns` ...); arrays keep their name without `[..]`.
    pub name: String,
    /// C type as written (`void *`, `u64` ...).
    pub c_type: String,
    /// Offset in the raw data (PERF_SAMPLE_RAW payload).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Signedness.
    pub signed: bool,
}

impl Field {
    /// Reads this field (1, 2, 4 or 8 bytes, native endian) from raw data;
    /// None when the data is too short or the size is unusual.
    #[inline]
    pub fn read_u64(&self, raw: &[u8]) -> Option<u64> {
        let s = raw.get(self.offset..self.offset.checked_add(self.size)?)?;
        Some(match self.size {
            1 => u64::from(s[0]),
            2 => u64::from(u16::from_ne_bytes([s[0], s[1]])),
            4 => u64::from(u32::from_ne_bytes([s[0], s[1], s[2], s[3]])),
            8 => u64::from_ne_bytes(s.try_into().ok()?),
            _ => return None,
        })
    }
}

/// A tracepoint's `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// `name:` line.
    pub name: String,
    /// `ID:` line.
    pub id: u64,
    /// All fields (common_* included).
    pub fields: Vec<Field>,
}

impl Format {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parses a tracepoint `format` file; `path` is for error messages.
pub fn parse_format(text: &str, path: &Path) -> Result<Format, PerfError> {
    let err = |line: usize, reason: String| PerfError::Format {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("name:") {
            name = Some(rest.trim().to_string());
        } else if let Some(rest) = t.strip_prefix("ID:") {
            id = Some(
                rest.trim()
                    .parse::<u64>()
                    .map_err(|e| err(ln, format!("bad ID `{}`: {e}", rest.trim())))?,
            );
        } else if t.starts_with("field:") {
            fields.push(parse_field(t).map_err(|r| err(ln, r))?);
        }
    }
    let name = name.ok_or_else(|| err(0, "no `name:` line".into()))?;
    let id = id.ok_or_else(|| err(0, "no `ID:` line".into()))?;
    if fields.is_empty() {
        return Err(err(0, "no `field:` lines".into()));
    }
    Ok(Format { name, id, fields })
}

fn parse_field(line: &str) -> Result<Field, String> {
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = None;
    for part in line.split(';') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (k, v) = part
            .split_once(':')
            .ok_or_else(|| format!("`{part}` is not key:value"))?;
        let (k, v) = (k.trim(), v.trim());
        let num = || v.parse::<usize>().map_err(|e| format!("{k} `{v}`: {e}"));
        match k {
            "field" => decl = Some(v.to_string()),
            "offset" => offset = Some(num()?),
            "size" => size = Some(num()?),
            "signed" => signed = Some(v == "1"),
            _ => {}
        }
    }
    let decl = decl.ok_or("no field declaration")?;
    // `unsigned long function` / `void * hrtimer` / `char comm[16]` / `__data_loc char[] name`
    let decl_trim = decl.trim();
    let last = decl_trim
        .rsplit(|c: char| c.is_whitespace() || c == '*')
        .next()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("no field name in `{decl}`"))?;
    let name = last.split('[').next().unwrap_or(last).to_string();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("bad field name in `{decl}`"));
    }
    let c_type = decl_trim[..decl_trim.len() - last.len()].trim().to_string();
    Ok(Field {
        name,
        c_type,
        offset: offset.ok_or("no offset")?,
        size: size.ok_or("no size")?,
        signed: signed.ok_or("no signed")?,
    })
}

/// Reads `events/<system>/<name>/format` under `root`.
pub fn tracepoint(root: &Path, system: &str, name: &str) -> Result<Format, PerfError> {
    let path = root.join("events").join(system).join(name).join("format");
    parse_format(&PerfError::read(&path)?, &path)
}

/// The address of a kernel text symbol in a kallsyms text (0 means hidden
/// by kptr_restrict).
pub fn kallsyms_lookup(text: &str, symbol: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let addr = it.next()?;
        let _kind = it.next()?;
        let name = it.next()?;
        if name == symbol && it.next().is_none() {
            u64::from_str_radix(addr, 16).ok()
        } else {
            None
        }
    })
}

/// The address of `symbol` from /proc/kallsyms; nonzero addresses need root
/// (or kptr_restrict=0).
pub fn kallsyms_address(symbol: &str) -> Result<u64, PerfError> {
    // Kept hand-written: procfs does not read /proc/kallsyms.
    match kallsyms_lookup(&PerfError::read(Path::new("/proc/kallsyms"))?, symbol) {
        None => Err(PerfError::Symbol {
            symbol: symbol.into(),
            reason: "is not listed",
        }),
        Some(0) => Err(PerfError::Symbol {
            symbol: symbol.into(),
            reason: "has address 0 (hidden by kptr_restrict or not root)",
        }),
        Some(a) => Ok(a),
    }
}
