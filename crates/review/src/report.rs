//! The report document of a run — against a baseline when one is given — for `servebench
//! report` and `sweep --report`. A baseline table file given as the run renders the
//! frozen-baseline body (PR body).

use std::path::{Path, PathBuf};

use servebench_compare::Stat;
use servebench_report::attempt::{build_baseline_body, BaselineTable};
use servebench_report::comparison::{build, build_run, BuildOptions};
use servebench_report::{Document, Format, Lang};
use servebench_store::RunId;

use crate::error::{io, IoOp, Result};
use crate::sides::{build_comparison, load_side, CompareRequest};

/// Which report to build (the `report` flags that shape the document).
#[derive(Debug, Clone)]
pub struct ReportRequest {
    /// The run: id(s), `latest`, or a file.
    pub run: String,
    /// Results store.
    pub db: PathBuf,
    /// Baseline to compare with.
    pub baseline: Option<String>,
    /// Latency statistic.
    pub stat: Stat,
    /// Regression gate, % (with a baseline).
    pub gate: f64,
    /// Title prefix / bot name.
    pub title_prefix: Option<String>,
    /// Target image of a planned bump (baseline body Goal line).
    pub target_image: Option<String>,
}

/// Builds the report document `req` asks for.
pub fn document(req: &ReportRequest) -> Result<Document> {
    let opts = BuildOptions {
        title_prefix: req.title_prefix.clone(),
        columns: vec![],
    };
    if let Some(b) = &req.baseline {
        let creq = CompareRequest {
            stat: req.stat,
            gate: req.gate,
            ..CompareRequest::new(&req.db, b, &req.run)
        };
        let c = build_comparison(&creq)?;
        return Ok(build(&c, &opts));
    }
    let path = Path::new(&req.run);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(io(IoOp::Read, path))?;
        if let Ok(t) = serde_json::from_str::<BaselineTable>(&text) {
            return Ok(build_baseline_body(
                &t,
                req.target_image.as_deref(),
                req.title_prefix.as_deref(),
            ));
        }
    }
    let side = load_side(&req.db, &req.run)?;
    Ok(build_run(
        &side.info,
        &side.points,
        &side.evals,
        req.stat,
        &opts,
    ))
}

/// The format a report file's extension asks for: `.html`/`.htm` HTML, `.json` JSON, else
/// Markdown.
pub fn format_for(path: &Path) -> Format {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("html") | Some("htm") => Format::Html,
        Some("json") => Format::Json,
        _ => Format::Md,
    }
}

/// Writes the report of stored run `run` to `path` (format from the extension, both
/// languages), optionally against `baseline` (`sweep --report`).
pub fn write_run_report(
    path: &Path,
    db: &Path,
    run: RunId,
    baseline: Option<&str>,
    stat: Stat,
) -> Result<()> {
    let format = format_for(path);
    let req = ReportRequest {
        run: run.to_string(),
        db: db.to_path_buf(),
        baseline: baseline.map(str::to_string),
        stat,
        gate: 5.0,
        title_prefix: None,
        target_image: None,
    };
    let mut doc = document(&req)?;
    if format == Format::Html {
        // Latency CDFs and goodput (under the sweep's own --slo) from the run's records.
        crate::report_charts::add_charts(
            &mut doc,
            &crate::report_charts::ChartRequest {
                db: db.to_path_buf(),
                run: run.to_string(),
                runs: None,
                slo: None,
                stat,
            },
        )?;
    }
    let text = servebench_report::render(&doc, format, Lang::EnZh, false);
    std::fs::write(path, text).map_err(io(IoOp::Write, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_format_follows_the_extension() {
        assert_eq!(format_for(Path::new("r.HTML")), Format::Html);
        assert_eq!(format_for(Path::new("r.htm")), Format::Html);
        assert_eq!(format_for(Path::new("r.json")), Format::Json);
        assert_eq!(format_for(Path::new("r.md")), Format::Md);
        assert_eq!(format_for(Path::new("report")), Format::Md);
    }
}
