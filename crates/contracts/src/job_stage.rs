//! Where a job's first error sits among the job's stages: the one wording that triage's
//! evidence and the attempt comment both use (triage decides it from the log's stage markers;
//! the report only words it, in English from here and in Chinese beside it).

use serde::{Deserialize, Serialize};

/// The stage of the job at its first error, as the log shows it.
///
/// Decided by triage (`servebench_triage::FirstError::job_stage`) from the markers seen
/// before the error line: the job start (`Runner name:`, `Job:` …), an image import or
/// container start, the engine launch, "model loaded" and "server ready" lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobStage {
    /// The log shows the job start and no image import, container start or engine launch
    /// before the error.
    BeforeImportOrServerStart,
    /// After an image import or container start, before any engine launch.
    AfterImageImport,
    /// After the engine launch, before any model-loaded or server-ready line.
    EngineStartUp,
    /// After the engine launch and model loading, before any server-ready line.
    EngineStartUpAfterModelLoad,
    /// After the server reported ready.
    AfterServerReady,
    /// No import or launch line before the error, but the log does not show the job start
    /// (an earlier part may be in another log): nothing can be claimed.
    Unknown,
}

impl JobStage {
    /// The English words (`before any image import or server start`, `during engine
    /// start-up` …); `None` for [`JobStage::Unknown`], which claims nothing.
    pub fn en(self) -> Option<&'static str> {
        Some(match self {
            JobStage::BeforeImportOrServerStart => "before any image import or server start",
            JobStage::AfterImageImport => "after the image import, before any server start",
            JobStage::EngineStartUp => {
                "during engine start-up, before any model-loaded or server-ready line"
            }
            JobStage::EngineStartUpAfterModelLoad => {
                "during engine start-up, after model loading, before any server-ready line"
            }
            JobStage::AfterServerReady => "after the server reported ready",
            JobStage::Unknown => return None,
        })
    }

    /// True when nothing of the recipe, image or engine had run yet.
    pub fn before_any_start(self) -> bool {
        self == JobStage::BeforeImportOrServerStart
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_spelling() {
        assert!(JobStage::EngineStartUp
            .en()
            .is_some_and(|w| w.starts_with("during engine start-up")));
        assert_eq!(JobStage::Unknown.en(), None);
        assert_eq!(
            serde_json::to_string(&JobStage::BeforeImportOrServerStart).unwrap(),
            "\"before-import-or-server-start\""
        );
        assert!(JobStage::BeforeImportOrServerStart.before_any_start());
        assert!(!JobStage::EngineStartUp.before_any_start());
    }
}
