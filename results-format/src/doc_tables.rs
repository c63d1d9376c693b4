//! The column names a section of docs/results-format.md lists, for the
//! tests that check each file's columns against its documentation (this
//! crate's for the results files, the analysis's for the report's CSVs).

/// The names in the first cell of the table rows (`| \`name\`, \`other\` |`)
/// of the section under the line `heading`, up to the next heading, in
/// order; None when there is no such heading or no table under it.
pub fn documented(doc: &str, heading: &str) -> Option<Vec<String>> {
    let start = doc.lines().position(|l| l == heading)?;
    let names: Vec<String> = doc
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with("| `"))
        .filter_map(|line| line.split('|').nth(1))
        .flat_map(|first| first.split('`').skip(1).step_by(2).map(str::to_owned))
        .collect();
    (!names.is_empty()).then_some(names)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_come_from_the_first_cells_of_one_section() {
        let doc =
            "# a\n| `x`, `y` | m |\n## b\n| col | m |\n|---|---|\n| `z` | `not` this |\n## c\n";
        assert_eq!(super::documented(doc, "## b"), Some(vec!["z".to_string()]));
        assert_eq!(
            super::documented(doc, "# a"),
            Some(vec!["x".to_string(), "y".to_string()])
        );
        assert_eq!(super::documented(doc, "## c"), None);
        assert_eq!(super::documented(doc, "## d"), None);
    }
}
