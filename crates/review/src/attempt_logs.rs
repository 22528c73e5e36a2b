//! The triage → report adapter of the attempt comment: a triage report becomes the failure
//! paragraph and the `Next:` line; job logs name their points, image and launcher; bump records
//! and recipe edits become the Change line.

use std::path::{Path, PathBuf};

use servebench_report::attempt::{ChangeInput, ImageInfo, RecipeEdit};
use servebench_report::model::{Bilingual, FailureSummary, Span};
use servebench_report::words;
use servebench_triage::{Action, Layer, TriageReport};

use crate::error::{flag, io, IoOp, Result, ReviewError};

/// Library-version labels (plain names like `sgl-kernel`, `flashinfer`, `cuda`; dotted OCI
/// label keys are left out) and the build commit of an image's labels.
fn image_info(reference: &str, p: Option<&servebench_bump::Provenance>) -> ImageInfo {
    let Some(p) = p else {
        return ImageInfo {
            reference: reference.to_string(),
            ..Default::default()
        };
    };
    let build_commit = [
        "ai.sglang.build.commit",
        "org.opencontainers.image.revision",
    ]
    .iter()
    .find_map(|k| p.labels.get(*k).cloned());
    ImageInfo {
        reference: reference.to_string(),
        index_digest: p.index_digest.clone(),
        platform_digests: p
            .platform_digests
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        kind: None,
        labels: p
            .labels
            .iter()
            .filter(|(k, _)| !k.contains('.'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        build_commit,
        created: p.created.clone(),
    }
}

/// The Change line's input from a bump record.
pub fn change_from_record(r: &servebench_bump::ChangeRecord) -> ChangeInput {
    let mut edits = Vec::new();
    for rr in &r.recipes {
        let file = rr
            .path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| rr.path.display().to_string());
        for o in rr.outcomes.iter().filter(|o| o.status == "applied") {
            edits.push(RecipeEdit {
                file: file.clone(),
                summary: Some(o.summary.clone()),
                evidence: o.evidence.first().cloned(),
                ..Default::default()
            });
        }
    }
    ChangeInput {
        old: image_info(&r.old_image, r.old_provenance.as_ref()),
        new: image_info(&r.new_image, r.new_provenance.as_ref()),
        recipe_edits: edits,
        digests_resolved: r.new_provenance.is_some(),
    }
}

/// `RECIPE:OLD=NEW` → the edit, with the flag's value read from the recipe.
pub(crate) fn recipe_edit(spec: &str, evidence: Option<&str>) -> Result<RecipeEdit> {
    let (file, flags) = spec
        .rsplit_once(':')
        .ok_or_else(|| flag!("--recipe-edit {spec}: expected RECIPE:OLD=NEW"))?;
    let (old, new) = flags
        .split_once('=')
        .ok_or_else(|| flag!("--recipe-edit {spec}: expected RECIPE:OLD=NEW"))?;
    if !old.starts_with('-') {
        return Err(flag!("--recipe-edit {spec}: `{old}` is not a flag"));
    }
    let text = std::fs::read_to_string(file).map_err(io(IoOp::Read, Path::new(file)))?;
    // Before the bump the recipe has OLD; after it (the usual case once `servebench bump` has
    // run) it has NEW: the value is the same either way.
    let value = flag_value(&text, old)
        .or_else(|| (!new.is_empty()).then(|| flag_value(&text, new)).flatten())
        .ok_or_else(|| {
            if new.is_empty() {
                ReviewError::Invalid(format!(
                    "{file}: flag {old} not found (--recipe-edit {spec})"
                ))
            } else {
                ReviewError::Invalid(format!(
                    "{file}: flag {old} not found, nor {new} (--recipe-edit {spec})"
                ))
            }
        })?;
    let name = Path::new(file)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.to_string());
    let new_flag = (!new.is_empty()).then(|| new.to_string());
    Ok(RecipeEdit {
        file: name,
        old_flag: old.to_string(),
        new_value: if new_flag.is_some() {
            value.clone()
        } else {
            None
        },
        new_flag,
        old_value: value,
        reason: None,
        evidence: evidence.map(str::to_string),
        summary: None,
    })
}

/// The value of `flag` in a shell script: `--flag VALUE` or `--flag=VALUE` (quotes stripped);
/// `Some(None)` for a flag without a value; `None` when the flag is absent.
pub(crate) fn flag_value(text: &str, flag: &str) -> Option<Option<String>> {
    let toks: Vec<&str> = text.split_whitespace().filter(|t| *t != "\\").collect();
    for (i, t) in toks.iter().enumerate() {
        if *t == flag {
            let v = toks
                .get(i + 1)
                .filter(|v| !v.starts_with("--") && !v.starts_with('>'))
                .map(|v| v.trim_matches(['"', '\'']).to_string());
            return Some(v);
        }
        if let Some(v) = t.strip_prefix(&format!("{flag}=")) {
            return Some(Some(v.trim_matches(['"', '\'']).to_string()));
        }
    }
    None
}

/// What a job line says about its point: `(conc, eval task)`.
pub(crate) fn job_point(job: &str) -> Option<(u32, Option<String>)> {
    let conc = job
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find_map(|w| w.strip_prefix("conc").and_then(|n| n.parse::<u32>().ok()))?;
    let eval = job
        .split_once("eval-only")
        .map(|(_, rest)| {
            rest.trim()
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .next()
                .unwrap_or("")
                .to_string()
        })
        .filter(|t| !t.is_empty());
    Some((conc, eval))
}

/// What a job line says about its topology: `tp8 ep1` → `TP8/EP1` (the label the report uses).
pub(crate) fn job_topology(job: &str) -> Option<String> {
    let word = |prefix: &str| {
        job.split(|c: char| !c.is_ascii_alphanumeric())
            .find_map(|w| w.strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok()))
    };
    Some(words::topology_label(word("tp")?, word("ep").unwrap_or(1)))
}

/// First `+ IMAGE=…` (launcher trace) or `IMAGE=…` line of the logs.
pub(crate) fn image_from_logs(paths: &[PathBuf]) -> Option<String> {
    for p in paths {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        for line in text.lines().take(500) {
            if let Some((_, v)) = line.split_once("IMAGE=") {
                let v = v.trim().trim_matches(['"', '\'']);
                if !v.is_empty() {
                    return Some(v.to_string());
                }
            }
        }
    }
    None
}

/// The launcher script the logs ran (`Run bash ./runners/launch_….sh`).
pub(crate) fn launcher_from_logs(paths: &[PathBuf]) -> Option<String> {
    for p in paths {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        for line in text.lines().take(500) {
            if let Some(i) = line.find("runners/launch_") {
                let s = &line[i..];
                let end = s.find(char::is_whitespace).unwrap_or(s.len());
                return Some(s[..end].to_string());
            }
        }
    }
    None
}

fn file_name(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_string())
}

/// The failure paragraph from a triage report.
pub fn failure_summary(r: &TriageReport, repairs_used: u32) -> Option<FailureSummary> {
    let fe = r.first_error.as_ref()?;
    let mut lines = vec![fe.line.clone()];
    lines.extend(fe.continuation.iter().cloned());
    // Triage's own stage (and words): "before …" is claimed only when the log shows the job
    // start; an engine launched without an image import (the local executor) is "during
    // engine start-up", never "before any server start".
    let stage = fe.job_stage();
    // Before the image was imported and the engine started, neither the recipe nor the image
    // nor the engine had run: the owning layer is elsewhere.
    let not_layers = if stage.before_any_start()
        && matches!(
            r.layer,
            Layer::Launcher | Layer::Node | Layer::Network | Layer::Scheduler | Layer::Config
        ) {
        vec!["recipe".into(), "image".into(), "engine".into()]
    } else {
        vec![]
    };
    let deterministic = if r.deterministic {
        Some(true)
    } else if r.persistence.is_transient() {
        Some(false)
    } else {
        None
    };
    let class = match &r.section_class {
        Some(sc) => format!("{} ({sc})", r.class),
        None => r.class.clone(),
    };
    Some(FailureSummary {
        first_error: lines,
        log_file: Some(file_name(&fe.file)),
        line: Some(fe.line_no),
        layer: r.layer.as_str().to_string(),
        not_layers,
        seconds_after_start: fe.seconds_after_log_start,
        stage: Some(stage),
        node: fe.node.clone(),
        role: fe.role.clone(),
        class: Some(class),
        deterministic,
        same_on: r.same_first_error_runners.clone(),
        repairable_in_recipe: (r.action == Action::Stop && r.layer != Layer::Recipe)
            .then_some(false),
        outcome: r.outcome.map(|o| o.as_str().to_string()),
        phase: Some(r.phase.as_str().to_string()),
        repairs_used: Some(repairs_used),
        max_repairs: Some(servebench_triage::MAX_REPAIRS),
    })
}

/// The `Next:` line from a triage report (English from the signature table; Chinese from its
/// structured parts).
pub fn next_step(r: &TriageReport, launcher: Option<&str>) -> Bilingual {
    let mut en = vec![Span::Text(r.next_step.clone())];
    let mut zh = vec![Span::Text(words::next_step_zh(
        &r.category,
        r.layer.as_str(),
        r.action.as_str(),
        r.first_error
            .as_ref()
            .and_then(|f| f.fields.get("var").or_else(|| f.fields.get("flag")))
            .map(String::as_str),
    ))];
    if let (Some(l), Layer::Launcher) = (launcher, r.layer) {
        en.push(Span::Text(" Launcher: ".into()));
        en.push(Span::Code(l.to_string()));
        en.push(Span::Text(".".into()));
        zh.push(Span::Text("启动器脚本：".into()));
        zh.push(Span::Code(l.to_string()));
        zh.push(Span::Text("。".into()));
    }
    Bilingual { en, zh }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A multi-node attempt: the failure paragraph names the node and role of the first error
    /// across nodes, in English and Chinese.
    #[test]
    fn the_failure_paragraph_names_node_and_role() {
        let logs = [
            (
                "logs/gb200-cn08_decode_w1.out",
                "[2026-09-21 01:20:13 TP0] Decode batch. #running-req: 61\ngb200-cn08:3468:3905 [4] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.7.12<54862> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n",
            ),
            (
                "logs/gb200-cn07_decode_w0.out",
                "[2026-09-21 01:20:11 TP0] Decode batch. #running-req: 60\n",
            ),
            (
                "logs/slurm_job-18590.out",
                "2026-09-21 01:17:05,100 - srtctl - INFO - Running sa-bench\nsrun: error: Node failure on gb200-cn07\n",
            ),
        ];
        let r =
            servebench_triage::triage_texts(&logs, &servebench_triage::TriageOptions::default());
        let f = failure_summary(&r, 0).unwrap();
        assert_eq!(f.node.as_deref(), Some("gb200-cn07"));
        assert_eq!(f.role.as_deref(), Some("decode worker w0"));
        let en = servebench_report::markdown::failure_en(&f);
        assert!(
            en.starts_with("First error in the job log (`slurm_job-18590.out`, line 2) on node `gb200-cn07` (decode worker w0): `srun: error: Node failure on gb200-cn07`."),
            "{en}"
        );
        let zh = servebench_report::markdown::failure_zh(&f);
        assert!(
            zh.starts_with("作业日志中的第一个错误（节点 `gb200-cn07`，decode 工作进程 w0）是 `srun: error: Node failure on gb200-cn07`，由运行器节点报出"),
            "{zh}"
        );
    }

    #[test]
    fn job_lines_name_points() {
        assert_eq!(
            job_point("benchmark (qwen3.8next-fp4-b200-sglang-agentic-mtp, agentic-coding, tp1 ep1 conc1)"),
            Some((1, None))
        );
        assert_eq!(
            job_point("benchmark (k, agentic-coding, tp1 ep1 conc16, eval-only gsm8k)"),
            Some((16, Some("gsm8k".into())))
        );
        assert_eq!(job_point("benchmark (no conc here)"), None);
    }

    #[test]
    fn flag_values_from_recipes() {
        let r =
            "python3 -m x \\\n  --cuda-graph-max-bs 64 \\\n  --foo=\"bar\" --flag-only \\\n  > log";
        assert_eq!(
            flag_value(r, "--cuda-graph-max-bs"),
            Some(Some("64".into()))
        );
        assert_eq!(flag_value(r, "--foo"), Some(Some("bar".into())));
        assert_eq!(flag_value(r, "--flag-only"), Some(None));
        assert_eq!(flag_value(r, "--absent"), None);
    }
}
