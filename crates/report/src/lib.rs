//! Report: renders comparisons and attempts as the bilingual Markdown comment, a self-contained
//! HTML file with SVG charts, JSON, and a terminal table.
//!
//! Must not know about: HTTP, SQLite, how numbers were measured.
