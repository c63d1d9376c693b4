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
    /// The rule's name in files (report/warning_runs.csv) and at the start
    /// of its line in report.md: its variant in snake_case (`lowered_limit`).
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

    /// What the rule's warnings say, in a few words: report.md's line for
    /// a rule with several warnings, or one too long for a line.
    pub fn summary(self) -> &'static str {
        match self {
            Rule::Incomplete => "the sweep is not complete: the tables use the runs present",
            Rule::Driver => "the driver's own warnings (manifest.json `warnings`)",
            Rule::Fallback => "another event was opened than the one requested",
            Rule::Failed => "failed runs, left out of every table",
            Rule::Throttled => "the kernel throttled sampling: the rate is below the request",
            Rule::Records => "lost or unmatched records: utilisation is a lower bound",
            Rule::LoweredLimit => "the kernel lowered perf_event_max_sample_rate",
            Rule::SlowRate => "achieved sample rate below 90% of the request",
            Rule::DriverCpu => "the driver used more than 1% of a CPU while sampling",
            Rule::Phases => "paired-design phases left out (excluded_phases.csv)",
            Rule::RunsDisagree => {
                "paired loss differs between runs: the interval over runs is used"
            }
            Rule::Noisy => "runs flagged noisy: kept, their spread widens the intervals",
            Rule::Tracing => "the handler tracepoints cost measurable loss",
            Rule::NoHandler => "util runs without handler intervals: utilisation 0",
            Rule::Thinned => "raw files keep 10 ms slices: handler times are means over them",
            Rule::NoLoss => "no loss can be computed",
            Rule::Excluded => "runs left out of every table: a file of theirs is unreadable",
            Rule::GapsFiles => "the gaps design's files disagree with each other",
            Rule::PerSample => "the gaps design's cost per sample is in doubt at some runs",
            Rule::Contents => "the tables and fits are those of one sample contents",
        }
    }
}

/// One run a warning concerns, with its own value where it has one
/// ("83536 of 100000 Hz", its noise reasons, its error).
#[derive(Debug, Clone, PartialEq)]
pub struct RunNote {
    pub run_id: u32,
    pub value: String,
}

/// One warning: the rule that raised it, what it found and what to read
/// or do instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub rule: Rule,
    /// What was found, with its figures over all the runs it concerns
    /// (each run's own value is in `runs`).
    pub text: String,
    /// What to read or do instead; None where the rule has nothing to
    /// offer beyond the finding.
    pub remedy: Option<String>,
    /// The runs it concerns, every one (report/warning_runs.csv).
    pub runs: Vec<RunNote>,
}

/// The longest line of a warning in report.md, in characters.
pub const LINE_MAX: usize = 160;

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
            remedy: Some(remedy.into()),
            ..Self::new(rule, text)
        }
    }

    /// The runs it concerns, by id, with no value of their own.
    pub fn with_runs(self, ids: impl IntoIterator<Item = u32>) -> Self {
        self.with_values(ids.into_iter().map(|id| (id, String::new())))
    }

    /// The runs it concerns, each with its own value.
    pub fn with_values(mut self, runs: impl IntoIterator<Item = (u32, String)>) -> Self {
        self.runs.extend(
            runs.into_iter()
                .map(|(run_id, value)| RunNote { run_id, value }),
        );
        self
    }

    /// The same finding about one sample contents of several: its name
    /// first.
    pub fn about(mut self, name: &str) -> Self {
        self.text = format!("{name}: {}", self.text);
        self
    }

    /// The finding, then its remedy after a semicolon: the whole warning
    /// (warning_runs.csv, the log).
    pub fn line(&self) -> String {
        match &self.remedy {
            Some(remedy) => format!("{}; {remedy}", self.text),
            None => self.text.clone(),
        }
    }
}

/// report.md's line for the warnings of one rule (`of`, all of the same
/// rule): its name, how many runs (or findings) and the whole warning when
/// there is one that fits in [`LINE_MAX`] characters, else its finding
/// alone, else the rule's [`Rule::summary`]. Every warning is whole in
/// report/warning_runs.csv.
pub fn kind_line(of: &[&Warning]) -> Option<String> {
    let first = of.first()?;
    let mut runs: Vec<u32> = of.iter().flat_map(|w| &w.runs).map(|r| r.run_id).collect();
    runs.sort_unstable();
    runs.dedup();
    let count = match (runs.len(), of.len()) {
        (0, 1) => "1".to_string(),
        (0, n) => format!("{n} findings"),
        (1, _) => "1 run".to_string(),
        (n, _) => format!("{n} runs"),
    };
    let head = format!("- {} ({count}): ", first.rule.name());
    let fits = |t: &str| head.chars().count() + t.chars().count() <= LINE_MAX;
    let single = (of.len() == 1).then(|| [first.line(), first.text.clone()]);
    let body = single
        .into_iter()
        .flatten()
        .find(|t| fits(t))
        .unwrap_or_else(|| first.rule.summary().to_string());
    Some(head + &body)
}

/// A row of report/warning_runs.csv: one per run and warning (one with
/// no run for a warning about none).
#[derive(Debug, Default, serde::Serialize)]
pub struct WarningRunRow {
    pub rule: String,
    pub run_id: Option<u32>,
    pub value: String,
    pub warning: String,
}

impl WarningRunRow {
    /// Every warning's rows, in the warnings' order.
    pub fn of(warnings: &[Warning]) -> Vec<Self> {
        let row = |w: &Warning, run: Option<&RunNote>| WarningRunRow {
            rule: w.rule.name(),
            run_id: run.map(|r| r.run_id),
            value: run.map(|r| r.value.clone()).unwrap_or_default(),
            warning: w.line(),
        };
        let rows = warnings.iter().flat_map(|w| {
            let none = w.runs.is_empty().then_some(None);
            w.runs.iter().map(Some).chain(none).map(move |r| row(w, r))
        });
        rows.collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_rule_within_the_limit() {
        let long = "x".repeat(200);
        let w = Warning::with_remedy(Rule::Noisy, "9 runs flagged noisy", "they are kept")
            .with_values([
                (1, "run-queue wait 0.12% of wall".into()),
                (2, String::new()),
            ]);
        assert_eq!(
            kind_line(&[&w]).unwrap(),
            "- noisy (2 runs): 9 runs flagged noisy; they are kept"
        );
        let too_long = Warning::with_remedy(Rule::Driver, "cycles: ENOENT", long.clone());
        assert_eq!(
            kind_line(&[&too_long]).unwrap(),
            "- driver (1): cycles: ENOENT"
        );
        let two = Warning::new(Rule::Driver, long);
        let line = kind_line(&[&too_long, &two]).unwrap();
        assert_eq!(
            line,
            format!("- driver (2 findings): {}", Rule::Driver.summary())
        );
        assert_eq!(kind_line(&[]), None);
        assert_eq!(Rule::LoweredLimit.name(), "lowered_limit");
    }

    #[test]
    fn every_rule_summary_fits_a_line_with_a_large_count() {
        for rule in [
            Rule::Incomplete,
            Rule::Driver,
            Rule::Fallback,
            Rule::Failed,
            Rule::Throttled,
            Rule::Records,
            Rule::LoweredLimit,
            Rule::SlowRate,
            Rule::DriverCpu,
            Rule::Phases,
            Rule::RunsDisagree,
            Rule::Noisy,
            Rule::Tracing,
            Rule::NoHandler,
            Rule::Thinned,
            Rule::NoLoss,
            Rule::Excluded,
            Rule::GapsFiles,
            Rule::PerSample,
            Rule::Contents,
        ] {
            let line = format!("- {} (99999 findings): {}", rule.name(), rule.summary());
            assert!(line.chars().count() <= LINE_MAX, "{line}");
        }
    }

    #[test]
    fn the_csv_has_a_row_per_run_and_one_for_a_warning_without_runs() {
        let ws = [
            Warning::new(Rule::SlowRate, "slow").with_values([(9, "83536 of 100000 Hz".into())]),
            Warning::with_remedy(Rule::Tracing, "costs", "use loss runs"),
        ];
        let rows = WarningRunRow::of(&ws);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].run_id, rows[0].value.as_str()),
            (Some(9), "83536 of 100000 Hz")
        );
        assert_eq!(
            (rows[1].run_id, rows[1].warning.as_str()),
            (None, "costs; use loss runs")
        );
    }
}
