//! report.html: report.md rendered into one self-contained page (the plots
//! inline as SVG, the style inline, nothing fetched), the answer box first
//! in `<section id="answer">`, wide tables scrolling inside the page. Under
//! the answer the recommendations and the summary are shown; everything
//! else (the host and budget plot, warnings, each section) is folded in a
//! `<details>` under its title, so that the first screen is the answer.
//!
//! The page is polyglot markup: it parses as XML too, which is how the
//! tests check it (analysis/tests/all/report_html.rs). Any HTML inside
//! report.md is shown as text, never passed through: a path like
//! `events/run-<id>.parquet` must not become an `<id>` element.

use std::path::Path;

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd, html};

/// The page's id of the answer box's section.
pub const ANSWER_ID: &str = "answer";

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:72rem;margin:1.5rem auto;\
padding:0 1rem;line-height:1.45;color:#1a1a1a}\
pre{background:#f4f4f4;padding:.6rem;overflow-x:auto;font-size:.85rem}\
#answer pre{background:#eef5ff;border-left:4px solid #2c6bd1;font-size:.9rem}\
.scroll{overflow-x:auto;margin:1rem 0}\
table{border-collapse:collapse;font-size:.85rem}\
th,td{border:1px solid #ccc;padding:.2rem .45rem;text-align:right;white-space:nowrap}\
th{background:#f0f0f0;white-space:normal;vertical-align:bottom;min-width:3.5rem}\
svg{max-width:100%;height:auto;display:block;margin:1rem 0}\
code{font-size:.9em}\
summary{cursor:pointer;margin:.4rem 0}summary>h2{display:inline;font-size:1.25rem}";

/// The sections shown unfolded: the answer's own.
const SHOWN: [&str; 2] = ["Recommended sampling rates", "Summary"];

/// Raw HTML for the page.
fn raw(s: impl Into<String>) -> Event<'static> {
    Event::Html(CowStr::from(s.into()))
}

/// Escapes text for an HTML element or attribute.
fn escape(s: &str) -> String {
    // `&` first, so the entities are not escaped again.
    let s = s.replace('&', "&amp;").replace('<', "&lt;");
    s.replace('>', "&gt;").replace('"', "&quot;")
}

/// An SVG file of the report directory, ready to inline (its XML
/// declaration dropped), or a note saying it is missing.
fn inline_svg(dir: &Path, name: &str) -> String {
    let safe = !name.contains('/') && !name.contains("..") && name.ends_with(".svg");
    let text = safe
        .then(|| std::fs::read_to_string(dir.join(name)).ok())
        .flatten();
    match text {
        Some(t) => format!("<figure>{}</figure>\n", &t[t.find("<svg").unwrap_or(0)..]),
        None => format!("<p><em>figure {} is missing</em></p>\n", escape(name)),
    }
}

/// report.md as a self-contained page; `dir` holds the SVG files it names.
pub fn render(markdown: &str, title: &str, dir: &Path) -> String {
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES);
    let mut events: Vec<Event> = Vec::new();
    let mut in_image = false;
    let mut answer_open = false;
    let mut answer_done = false;
    // A level-2 heading being read (its title decides its fold), and
    // whether a fold is open.
    let mut heading: Option<Vec<Event>> = None;
    let mut folded = false;
    for ev in parser {
        if in_image {
            if let Event::End(TagEnd::Image) = ev {
                in_image = false;
            }
            continue;
        }
        if let Some(h) = heading.as_mut() {
            let end = matches!(ev, Event::End(TagEnd::Heading(HeadingLevel::H2)));
            h.push(ev);
            if end {
                let h = heading.take().unwrap_or_default();
                let title: String = h
                    .iter()
                    .filter_map(|e| match e {
                        Event::Text(t) | Event::Code(t) => Some(&**t),
                        _ => None,
                    })
                    .collect();
                if std::mem::take(&mut folded) {
                    events.push(raw("</details>\n"));
                }
                folded = !SHOWN.contains(&title.as_str());
                if folded {
                    events.push(raw("<details>\n<summary>"));
                }
                events.extend(h);
                if folded {
                    events.push(raw("</summary>\n"));
                }
            }
            continue;
        }
        match ev {
            Event::Start(Tag::Heading {
                level: HeadingLevel::H2,
                ..
            }) => heading = Some(vec![ev]),
            Event::Start(Tag::Image { dest_url, .. }) => {
                in_image = true;
                events.push(raw(inline_svg(dir, &dest_url)));
            }
            Event::Html(s) | Event::InlineHtml(s) => events.push(Event::Text(s)),
            Event::Start(Tag::CodeBlock(k)) if !answer_done => {
                answer_open = true;
                events.push(raw(format!("<section id=\"{ANSWER_ID}\">\n")));
                events.push(Event::Start(Tag::CodeBlock(k)));
            }
            Event::End(TagEnd::CodeBlock) if answer_open => {
                answer_open = false;
                answer_done = true;
                events.push(Event::End(TagEnd::CodeBlock));
                events.push(raw("</section>\n"));
                // What follows the answer up to the first section: the
                // budget plot and the host.
                events.push(raw("<details>\n<summary>Host and budget plot</summary>\n"));
                folded = true;
            }
            Event::Start(Tag::Table(a)) => {
                events.push(raw("<div class=\"scroll\">\n"));
                events.push(Event::Start(Tag::Table(a)));
            }
            Event::End(TagEnd::Table) => {
                events.push(Event::End(TagEnd::Table));
                events.push(raw("</div>\n"));
            }
            other => events.push(other),
        }
    }
    if folded {
        events.push(raw("</details>\n"));
    }
    let mut body = String::new();
    html::push_html(&mut body, events.into_iter());
    format!(
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n\
         <meta charset=\"utf-8\" />\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn html_in_the_markdown_is_text_and_the_answer_is_a_section() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.svg"),
            "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>",
        )
        .unwrap();
        let md = "# t\n\n```text\n+- box -+\n```\n\nsee `x` and events/run-<id>.parquet\n\n\
                  ![a.svg](a.svg)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```text\nlater\n```\n";
        let page = render(md, "t & co", dir.path());
        assert!(page.contains("run-&lt;id&gt;.parquet"), "{page}");
        assert!(
            page.contains("<section id=\"answer\">\n<pre><code class=\"language-text\">+- box -+")
        );
        assert_eq!(page.matches("<section").count(), 1);
        assert!(page.contains("<figure><svg xmlns"));
        assert!(!page.contains("<?xml"));
        assert!(!page.contains("<img"));
        assert!(page.contains("<div class=\"scroll\">\n<table>"));
        assert!(page.contains("<title>t &amp; co</title>"));
        // What follows the answer is folded until the first section.
        assert!(page.contains("</section>\n<details>\n<summary>Host and budget plot</summary>"));
        assert_eq!(
            page.matches("<details>").count(),
            page.matches("</details>").count()
        );
    }

    #[test]
    fn the_sections_fold_under_the_answer_but_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let md = "# t\n\n```text\nbox\n```\n\n## Recommended sampling rates\n\n- 1 %\n\n\
                  ## Warnings\n\n- noisy (9 runs): x\n\n## Summary\n\n- s\n\n## Plots\n\nend\n";
        let page = render(md, "t", dir.path());
        assert!(
            page.contains("<details>\n<summary>\n<h2>Warnings</h2>\n</summary>"),
            "{page}"
        );
        assert!(
            page.contains("<details>\n<summary>\n<h2>Plots</h2>\n</summary>"),
            "{page}"
        );
        assert!(!page.contains("<summary>\n<h2>Summary"), "{page}");
        assert!(!page.contains("<summary>\n<h2>Recommended"), "{page}");
        assert_eq!(page.matches("<details>").count(), 3, "{page}");
        assert_eq!(page.matches("</details>").count(), 3, "{page}");
        // The summary is not inside the warnings' fold.
        let (warn, summ) = (
            page.find("Warnings</h2>").unwrap(),
            page.find("<h2>Summary").unwrap(),
        );
        assert!(page[warn..summ].contains("</details>"), "{page}");
    }

    #[test]
    fn a_missing_or_outside_figure_is_named_not_fetched() {
        let dir = tempfile::tempdir().unwrap();
        let page = render("![x](../secret.svg)\n", "t", dir.path());
        assert!(page.contains("figure ../secret.svg is missing"), "{page}");
    }
}
