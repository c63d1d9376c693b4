//! One warning as a value: which rule raised it, what it found and what
//! to do instead. Made by the read and compute layers for what they find
//! while reading and computing, and by the judge (`warnings`) for every
//! rule over the tables; kept typed until the report writes its line.

/// The rules a report checks its data against, in the order their
/// warnings are shown (a **rule**: `driver check` is the only check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The sweep did not finish.
    Incomplete,
    /// What the driver itself logged as switched or doubtful.
    Driver,
    /// Another event was opened than the one requested.
    Fallback,
    /// Runs that failed.
    Failed,
    /// The kernel throttled sampling.
    Throttled,
    /// Lost, duplicated or unmatched records.
    Records,
    /// perf_event_max_sample_rate went down.
    LoweredLimit,
    /// The kernel delivered fewer samples than requested.
    SlowRate,
    /// The driver used much CPU while sampling.
    DriverCpu,
    /// Phases of the paired design the controller could not keep (or
    /// phases.csv rows that are nonsense), left out with their groups.
    Phases,
    /// The paired loss varies between runs.
    RunsDisagree,
    /// Runs flagged noisy.
    Noisy,
    /// The handler tracepoints cost measurable loss.
    Tracing,
    /// Util runs without handler intervals.
    NoHandler,
    /// Raw files that keep only some slices of their runs.
    Thinned,
    /// No loss can be computed.
    NoLoss,
    /// A run left out of every table (a file of it unreadable).
    Excluded,
    /// The gaps design's files disagree with each other or with
    /// timeline.csv (found while reading them).
    GapsFiles,
    /// The per-sample table's own findings (samples in no gap, a full gap
    /// buffer, a rate whose after-effect is a bound ...).
    PerSample,
    /// The sample contents compared in one set.
    Contents,
}

impl Rule {
    /// The rule's name in files (report/warning_runs.csv): its variant in
    /// snake_case (`lowered_limit`).
    pub fn name(self) -> String {
        let mut out = String::new();
        for (i, c) in format!("{self:?}").chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        }
        out
    }
}

/// One warning: the rule that raised it, what it found and what to read
/// or do instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub rule: Rule,
    /// What was found: the runs it concerns and what it does to the numbers.
    pub text: String,
    /// What to read or do instead; None where the rule has nothing to
    /// offer beyond the finding.
    pub remedy: Option<String>,
    /// The runs it concerns, every one: the text names at most
    /// [`INLINE_RUN_IDS`] of them, report/warning_runs.csv all.
    pub runs: Vec<u32>,
}

/// Run ids a warning's text names; more are counted and left to
/// report/warning_runs.csv (a line listing 44 ids was a wall to read).
pub const INLINE_RUN_IDS: usize = 5;

/// The run ids for a warning's text: all of up to [`INLINE_RUN_IDS`],
/// else the first three and where the rest are.
pub fn ids_text(ids: &[u32]) -> String {
    let shown = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    if ids.len() <= INLINE_RUN_IDS {
        shown(ids)
    } else {
        format!(
            "{} ... ({} in all: report/warning_runs.csv)",
            shown(&ids[..3]),
            ids.len()
        )
    }
}

impl Warning {
    /// A warning without a remedy.
    pub fn new(rule: Rule, text: impl Into<String>) -> Self {
        Self {
            rule,
            text: text.into(),
            remedy: None,
            runs: Vec::new(),
        }
    }

    /// A warning and its remedy.
    pub fn with_remedy(rule: Rule, text: impl Into<String>, remedy: impl Into<String>) -> Self {
        Self {
            rule,
            text: text.into(),
            remedy: Some(remedy.into()),
            runs: Vec::new(),
        }
    }

    /// The runs it concerns (report/warning_runs.csv), by id.
    pub fn with_runs(mut self, ids: impl IntoIterator<Item = u32>) -> Self {
        self.runs.extend(ids);
        self
    }

    /// The same finding about one sample contents of several: its name
    /// first.
    pub fn about(mut self, name: &str) -> Self {
        self.text = format!("{name}: {}", self.text);
        self
    }

    /// The report's line: the finding, then its remedy after a semicolon.
    pub fn line(&self) -> String {
        match &self.remedy {
            Some(remedy) => format!("{}; {remedy}", self.text),
            None => self.text.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_ids_inline_many_counted() {
        assert_eq!(ids_text(&[3, 7]), "3, 7");
        assert_eq!(ids_text(&[1, 2, 3, 4, 5]), "1, 2, 3, 4, 5");
        let many: Vec<u32> = (0..44).collect();
        assert_eq!(
            ids_text(&many),
            "0, 1, 2 ... (44 in all: report/warning_runs.csv)"
        );
        assert_eq!(Rule::LoweredLimit.name(), "lowered_limit");
        assert_eq!(Rule::Noisy.name(), "noisy");
    }
}
