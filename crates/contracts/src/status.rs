//! [`PointStatus`]: the outcome of one measured point.

use serde::{Deserialize, Serialize};

/// The outcome of one measured point, as written in `agg.json`/`result.json`
/// (`point_status`) and read back by compare and report.
///
/// One meaning everywhere: `Failed` is about requests (more than the failure tolerance — 5 %
/// for the fixed-sequence workload — failed, or none was measured), `Interrupted` is about the
/// run (Ctrl-C stopped the point before all its requests ran; what finished is measured). The
/// on-disk string of `Interrupted` is `"partial"`, kept for compatibility with existing files
/// and stores; it never means "some requests failed" (that is `num_requests_failed` of an `Ok`
/// point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PointStatus {
    /// Measured; failed requests within the tolerance.
    #[serde(rename = "ok")]
    Ok,
    /// More than the tolerated fraction of requests failed (files are still written; the exit
    /// status is non-zero).
    #[serde(rename = "failed")]
    Failed,
    /// Interrupted (Ctrl-C) before all requests ran; on disk `"partial"`.
    #[serde(rename = "partial")]
    Interrupted,
    /// Measured, but a validity rule was violated (the server broke the request's contract:
    /// a fixed output length not honoured, prompt lengths off by more than 5 %); the reasons
    /// are under [`INVALID_REASONS_KEY`]. Never compared, the exit status is non-zero.
    #[serde(rename = "invalid")]
    Invalid,
}

/// The row key (`agg.json`, `summary.json` points, the store's `row_json`) holding an invalid
/// point's reasons: an array of one-line strings, e.g. `["fixed length violated: 2/4 short
/// (min 5, want 128)"]`. Absent on valid points.
pub const INVALID_REASONS_KEY: &str = "invalid_reasons";

/// The reasons of an invalid point from its row (`[]` when the key is absent or not an array
/// of strings).
pub fn invalid_reasons_of(row: &serde_json::Value) -> Vec<String> {
    row.get(INVALID_REASONS_KEY)
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl PointStatus {
    /// The on-disk string: `"ok"`, `"failed"`, `"partial"` (interrupted), `"invalid"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PointStatus::Ok => "ok",
            PointStatus::Failed => "failed",
            PointStatus::Interrupted => "partial",
            PointStatus::Invalid => "invalid",
        }
    }

    /// Parses the on-disk string (`"interrupted"` is accepted as a synonym of `"partial"`).
    pub fn parse(s: &str) -> Option<PointStatus> {
        match s {
            "ok" => Some(PointStatus::Ok),
            "failed" => Some(PointStatus::Failed),
            "partial" | "interrupted" => Some(PointStatus::Interrupted),
            "invalid" => Some(PointStatus::Invalid),
            _ => None,
        }
    }
}

impl std::fmt::Display for PointStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::PointStatus;

    #[test]
    fn on_disk_strings_are_unchanged() {
        for (s, text) in [
            (PointStatus::Ok, "\"ok\""),
            (PointStatus::Failed, "\"failed\""),
            (PointStatus::Interrupted, "\"partial\""),
            (PointStatus::Invalid, "\"invalid\""),
        ] {
            assert_eq!(serde_json::to_string(&s).unwrap(), text);
            assert_eq!(serde_json::from_str::<PointStatus>(text).unwrap(), s);
            assert_eq!(PointStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(
            PointStatus::parse("interrupted"),
            Some(PointStatus::Interrupted)
        );
        assert_eq!(PointStatus::parse("some"), None);
    }
}
