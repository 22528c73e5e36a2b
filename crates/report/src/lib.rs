//! Report: renders comparisons and attempts as the bilingual Markdown comment, a self-contained
//! HTML file with SVG charts, JSON, and a terminal table.
//!
//! Must not know about: HTTP, SQLite, how numbers were measured.
//!
//! Shape: builders turn their inputs into a [`model::Document`] — [`attempt::build_attempt`]
//! (the attempt comment of an image bump), [`attempt::build_baseline_body`] (the frozen
//! baseline), [`comparison::build`] (a `servebench_compare::Comparison`) — deciding every value,
//! delta and N/A reason; renderers only format it: [`markdown::render`] (AUTOMATION.md §5.6
//! layout), [`html::render`] (one self-contained file, SVG charts), [`terminal::render`]
//! (comfy-table, coloured deltas) and JSON (the document serialized, [`to_json`]).
//! [`dist`] computes the latency CDFs and Pareto frontiers of [`model::ChartData`] and
//! [`dist_charts`] draws them (with the goodput curve) in the HTML report.
#![warn(missing_docs)]

pub mod attempt;
pub mod charts;
pub mod comparison;
pub mod dist;
pub mod dist_charts;
pub mod format;
pub mod html;
pub mod ix_columns;
pub mod markdown;
pub mod model;
pub mod notes;
pub mod plausibility;
pub mod terminal;
pub mod words;

pub use markdown::Lang;
pub use model::Document;

/// Output formats of `servebench report` / `servebench attempt`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    /// The Markdown comment (AUTOMATION.md §5.6 layout).
    Md,
    /// One self-contained HTML file with SVG charts.
    Html,
    /// The document as JSON ([`model::Document`]).
    Json,
    /// The terminal table (coloured when `colored`).
    Table,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Ok(Format::Md),
            "html" => Ok(Format::Html),
            "json" => Ok(Format::Json),
            "table" | "text" | "terminal" => Ok(Format::Table),
            _ => Err(format!(
                "unknown format {s:?}: expected md, html, json or table"
            )),
        }
    }
}

/// Renders `doc` in `format` (`lang` for md/html; `colored` for the table).
pub fn render(doc: &Document, format: Format, lang: Lang, colored: bool) -> String {
    match format {
        Format::Md => markdown::render(doc, lang),
        Format::Html => html::render(doc, lang),
        Format::Json => to_json(doc) + "\n",
        Format::Table => terminal::render(doc, colored),
    }
}

/// The document as pretty JSON (the `--format json` output; schema: [`model::Document`]).
pub fn to_json(doc: &Document) -> String {
    serde_json::to_string_pretty(doc).expect("a report document always serializes")
}
