//! The failure loop's decision: every failed attempt is triaged from its own job log with the
//! signature table of `servebench-triage` (first error, layer, class, transient or
//! deterministic), plus the runner's own line for an engine killed from outside; transient
//! classes are retried within AUTOMATION.md §5.3's budget (at most
//! [`MAX_INFRA_RETRIES_PER_ATTEMPT`] infrastructure retries per attempt, no repair consumed),
//! deterministic ones are not.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::OnceLock;

pub use servebench_triage::MAX_INFRA_RETRIES_PER_ATTEMPT;
use servebench_triage::{
    build_report, scan_reader, SignatureTable, TriageOptions, TriageReport, BUILTIN_SIGNATURES_TOML,
};

use crate::error::{Result, RunnerError};

/// Signatures of the runner's own log lines, appended to the built-in table (first match
/// wins, so the built-in classes keep precedence).
pub const RUNNER_SIGNATURES_TOML: &str = r#"
[[signature]]
id = "engine_killed_externally"
group = "extra"
category = "engine_killed_externally"
class = "the engine was killed from outside (kill, OOM killer, preemption) while the point ran"
layer = "node"
persistence = "transient-node"
action = "retry"
patterns = ['the engine \(pid (?P<pid>\d+)\) was killed by signal (?P<signal>\d+) \(\w+\) from outside while the point was measured']
fix = "nothing in the recipe or image: the process was ended by a signal it did not raise itself"
next = "Infrastructure retry of the point; if it repeats, read the node's kernel log (OOM killer) and who sent signal {signal}."
example = "servebench-job: ERROR: the engine (pid 4242) was killed by signal 9 (SIGKILL) from outside while the point was measured"
source = "spec: servebench run's job line for an engine that a SIGKILL/SIGTERM/SIGINT/SIGHUP ended mid-point (a crash by SIGSEGV/SIGABRT is logged as D10 instead)"

[[signature]]
id = "slurm_job_never_starts"
group = "extra"
category = "slurm_job_never_starts"
class = "Slurm will never start the job: it asks for more than its partition has (a multinode plan larger than the cluster)"
layer = "scheduler"
persistence = "deterministic"
action = "stop"
patterns = ['Slurm will never start job (?P<job_id>\d+): Reason=(?P<reason>\w+)']
fix = "run the point on a cluster (partition) with the nodes its plan needs (`run --dry-run` prints them), or pick a point whose plan fits"
next = "Compare the job's node count ({reason}) with `sinfo -p <partition>`; nothing to retry on this cluster."
example = "servebench-job: ERROR: Slurm will never start job 700026: Reason=PartitionNodeLimit: it asks for 9 node(s), more than its partition has; cancelled"
source = "spec: servebench run's Slurm backend, for a job Slurm keeps PENDING with Reason=PartitionNodeLimit or BadConstraints (it never starts)"

[[signature]]
id = "sim_model_does_not_fit"
group = "extra"
category = "sim_model_does_not_fit"
class = "the simulated engine cannot hold the model: its weights per GPU at the simulated TP exceed the GPU's usable memory"
layer = "engine"
persistence = "deterministic"
action = "stop"
patterns = ['model: (?P<model>.+?) does not fit on (?P<gpu>.+?) at TP (?P<tp>\d+): (?P<weights>[\d.]+) GiB of weights per GPU']
fix = "simulate a point whose TP holds the model (`servebench sim --gpu`/`--tp`), or a preset with more memory; a multinode worker wider than 8 GPUs is simulated as TP8 replicas (docs/simulator.md, Multinode)"
next = "Compare {weights} GiB per GPU at TP {tp} with the GPU's usable memory; nothing to retry."
example = "error: model: DeepSeek-R1-0528 FP8 does not fit on H100 SXM 80GB at TP 8: 78.1 GiB of weights per GPU, 70.0 GiB usable (90% of 80 GiB minus 2 GiB reserve)"
source = "spec: servebench sim's start-up error (SimError::DoesNotFit) when the model preset's weights at the engine's TP exceed the GPU preset's usable memory"
"#;

/// The built-in table plus [`RUNNER_SIGNATURES_TOML`], compiled once.
pub fn table() -> &'static SignatureTable {
    static T: OnceLock<SignatureTable> = OnceLock::new();
    T.get_or_init(|| {
        let text = format!("{BUILTIN_SIGNATURES_TOML}\n{RUNNER_SIGNATURES_TOML}");
        SignatureTable::from_toml(&text, "signatures.toml + runner signatures")
            .expect("runner signatures are valid (unit test)")
    })
}

/// Triage of one attempt's job log, with `retries_used` infrastructure retries already spent
/// on this point.
pub fn triage_log(log: &Path, retries_used: u32) -> Result<TriageReport> {
    let f = File::open(log).map_err(|e| RunnerError::io(log, e))?;
    let name = log.display().to_string();
    let scanned =
        scan_reader(BufReader::new(f), &name, table()).map_err(|e| RunnerError::io(log, e))?;
    let opts = TriageOptions {
        infra_retries_used: retries_used,
        ..TriageOptions::default()
    };
    Ok(build_report(vec![scanned], table(), &opts))
}

/// The per-node, per-role logs of an attempt (`<attempt>/logs/workers/*`, sorted by name:
/// `<node>_<role>.out`) that a multinode point run as one `srun` step per role writes
/// ([`crate::fleet_launch`]); empty when there are none.
pub fn node_logs(dir: &Path) -> Vec<std::path::PathBuf> {
    let workers = dir.join(crate::fleet_launch::LOG_DIR);
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&workers)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Triage of one attempt: its job log, plus — for a multinode point run as one `srun` step
/// per role ([`crate::fleet_launch`]) — every per-node, per-role log of `logs/workers/`, read
/// together as one multi-node log set (the first error across nodes, with its node and role).
pub fn triage_attempt(log: &Path, dir: &Path, retries_used: u32) -> Result<TriageReport> {
    let mut files = node_logs(dir);
    if files.is_empty() {
        return triage_log(log, retries_used);
    }
    files.insert(0, log.to_path_buf());
    let mut scanned = Vec::new();
    for f in &files {
        let fh = File::open(f).map_err(|e| RunnerError::io(f, e))?;
        let name = f.display().to_string();
        scanned.push(
            scan_reader(BufReader::new(fh), &name, table()).map_err(|e| RunnerError::io(f, e))?,
        );
    }
    let opts = TriageOptions {
        infra_retries_used: retries_used,
        ..TriageOptions::default()
    };
    Ok(build_report(scanned, table(), &opts))
}

/// Whether a failed attempt is retried: the triage says infrastructure retry (a transient
/// class with budget left) and the run's own `--max-retries` allows another.
pub fn should_retry(r: &TriageReport, retries_used: u32, max_retries: u32) -> bool {
    r.retry && retries_used < max_retries.min(MAX_INFRA_RETRIES_PER_ATTEMPT)
}

/// One line about a triaged failure: `first error · layer · class · transient|deterministic`.
/// The first error is triage's normalised summary (ports, pids, temp paths and timestamps
/// replaced), so the same failure on two ports or runners reads the same; job.log keeps the raw line.
pub fn one_line(r: &TriageReport) -> String {
    let first = r
        .first_error
        .as_ref()
        .map(|f| f.summary.trim().to_string())
        .unwrap_or_else(|| "no error line found".into());
    // a multi-node log set: the node and role of the first error
    let origin = match r.first_error.as_ref().map(|f| (&f.node, &f.role)) {
        Some((Some(n), Some(role))) => format!(" (node {n}, {role})"),
        Some((Some(n), None)) => format!(" (node {n})"),
        _ => String::new(),
    };
    format!(
        "{first}{origin} · layer {} · {} · {}",
        r.layer.as_str(),
        r.category,
        r.determinism()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_signature_is_transient_and_builtins_still_win() {
        let t = table();
        assert!(t.get("engine_killed_externally").is_some());
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("job.log");
        std::fs::write(
            &log,
            "Runner name: 'local'\nJob: benchmark (k, fixed-seq-len, tp1 ep1 conc1)\n\
             2026-12-01T10:00:00.000Z servebench-job: engine ready after 0.3 s on http://127.0.0.1:1234\n\
             2026-12-01T10:00:02.000Z servebench-job: ERROR: the engine (pid 4242) was killed by signal 9 (SIGKILL) from outside while the point was measured\n",
        )
        .unwrap();
        let r = triage_log(&log, 0).unwrap();
        assert_eq!(r.category, "engine_killed_externally");
        assert!(r.retry);
        assert!(!r.deterministic);
        assert!(should_retry(&r, 0, 2));
        assert!(should_retry(&r, 1, 2));
        assert!(!should_retry(&r, 2, 2));
        assert!(!should_retry(&r, 0, 0));
        // budget spent: triage itself stops asking for a retry
        let r = triage_log(&log, 2).unwrap();
        assert!(!r.retry);

        std::fs::write(
            &log,
            "Runner name: 'local'\nJob: benchmark (k, fixed-seq-len, tp1 ep1 conc1)\n\
             Error: The following required environment variables are not set:\n  - MODEL_PATH\n\
             servebench-job: ERROR: Process died before http://127.0.0.1:1/health became ready (exit status 1)\n",
        )
        .unwrap();
        let r = triage_log(&log, 0).unwrap();
        assert_eq!(r.category, "missing_env_var");
        assert!(r.deterministic);
        assert!(!should_retry(&r, 0, 2));
        assert_eq!(r.outcome.map(|o| o.as_str()), Some("readiness-blocked"));
    }

    /// The simulator's "does not fit" start-up error (the two H100 DeepSeek-R1 FP8 multinode
    /// configs of the coverage run) is a deterministic engine-layer class, not `unclassified`.
    #[test]
    fn a_model_that_does_not_fit_the_simulated_gpu_is_classified() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("job.log");
        std::fs::write(
            &log,
            "Runner name: 'h100-dgxc-slurm_16'\nJob: benchmark (dsr1-fp8-h100-dynamo-sglang, fixed-seq-len, tp16 ep1 conc1)\n\
             2026-12-03T19:28:44.646Z servebench-job: engine started (pid 18674, process group 18674); waiting for http://127.0.0.1:38883/health (up to 600 s)\n\
             error: model: DeepSeek-R1-0528 FP8 does not fit on H100 SXM 80GB at TP 8: 78.1 GiB of weights per GPU, 70.0 GiB usable (90% of 80 GiB minus 2 GiB reserve)\n\
             2026-12-03T19:28:44.700Z servebench-job: ERROR: Process died before http://127.0.0.1:38883/health became ready (exit status 2)\n",
        )
        .unwrap();
        let r = triage_log(&log, 0).unwrap();
        assert_eq!(r.category, "sim_model_does_not_fit");
        assert_eq!(r.layer.as_str(), "engine");
        assert!(r.deterministic);
        assert!(!should_retry(&r, 0, 2));
    }

    /// Issue 18: the same failure on two ports read as two different first errors in the run
    /// table; the one line now carries triage's normalised summary.
    #[test]
    fn the_same_failure_on_two_ports_reads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<String> = ["33047", "45543"]
            .iter()
            .map(|port| {
                let log = dir.path().join(format!("job-{port}.log"));
                std::fs::write(
                    &log,
                    format!(
                        "Runner name: 'local'\n\
                         curl: (7) Failed to connect to 127.0.0.1 port {port}: Connection refused\n\
                         servebench-job: ERROR: Process died before http://127.0.0.1:{port}/health became ready (exit status 1)\n"
                    ),
                )
                .unwrap();
                one_line(&triage_log(&log, 0).unwrap())
            })
            .collect();
        assert_eq!(lines[0], lines[1]);
        assert!(!lines[0].contains("33047"), "{}", lines[0]);
    }
}
