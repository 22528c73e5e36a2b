//! Issue 28's A/A against a REAL serving engine (llama.cpp `llama-server`, tiny random model,
//! started by `scripts/services/real-engine.sh`). In the `timing` binary, holding its `SERIAL`
//! lock, so no other test shares the engine or the CPU while the four sweeps run (in the
//! `services` binary a concurrent test's requests to the same engine made run 4 25 % slower
//! than run 1: a real difference of load, not of the engine).

use crate::common;
use common::real_engine_sweep as sweep;
use common::scratch_in;

/// Issue 28: two runs of the same real engine compared are not a regression. Four sweeps of the
/// llama.cpp engine into one store (one image): runs 1–3 are the configuration's earlier A/A
/// runs (its stored noise floor), run 4 the candidate; `compare --baseline 1 --candidate 4`
/// decides from the per-request records (bootstrap, FDR, noise floor, host lag) and exits 0.
#[test]
fn two_runs_of_the_real_engine_compared_are_not_a_regression() {
    let _alone = crate::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some((url, dir)) = common::real_engine() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("aa.db");
    for k in 1..=4 {
        let out = tmp.path().join(format!("r{k}"));
        sweep(
            &url,
            &dir,
            &out,
            &[
                "--conc",
                "2,4",
                "--image",
                "llama.cpp:aa",
                "--db",
                db.to_str().unwrap(),
            ],
        );
    }
    let o = scratch_in(tmp.path())
        .args(["compare", "--baseline", "1", "--candidate", "4", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "A/A of the real engine: {text}");
    assert!(!text.contains("Verdict: regression"), "{text}");
    assert!(
        text.contains("metric comparisons from per-request records"),
        "decided from the records: {text}"
    );
    assert!(
        text.contains("Noise floor ("),
        "runs 1–3 give the floor: {text}"
    );
}
