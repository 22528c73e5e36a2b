//! The servebench pipeline: everything between a parsed command line and the stage crates.
//!
//! Owns: the [`SweepPlan`] (parsed once, from the CLI or a catalog matrix row), the [`Target`]
//! (an endpoint, or the embedded simulator started here and shared with the eval), the
//! scheduler over concurrencies × repeats ([`sweep::run_sweep`]), the workload seam
//! ([`Executor`]; the fixed-sequence workload is [`FixedSequence`]), and the observers that
//! turn finished points into outputs ([`Observer`]: files, store, console, table).
//!
//! Must not know about: reading runs back (sides, comparisons, reports, the attempt comment,
//! bump and triage: `servebench-review`, which a sweep's `--baseline`/`--report` reach through
//! [`review_hook`]), clap or any command-line parsing (the binary builds the requests), how
//! a stage computes (metrics, compare, rendering live in their crates), SQL (the store crate).
//! Errors are [`PipelineError`] (one variant per kind of failure, the called crates' errors as
//! sources); the binary turns them into `anyhow` at its edge.
#![warn(missing_docs)]

pub mod agentx;
pub mod cache;
pub mod console;
pub mod entry;
pub mod error;
pub mod eval;
pub mod executor;
pub mod fixed;
pub mod identity;
pub mod lifecycle;
pub mod measure;
pub mod multiturn;
pub mod observe;
pub mod outdir;
pub mod plan;
pub mod power;
pub mod preflight;
pub mod progress;
pub mod record;
pub mod resume;
pub mod review_hook;
pub mod session;
pub mod standalone_eval;
pub mod sweep;
pub mod table;
pub mod target;
pub mod workload;

pub use console::{Console, StdConsole};
pub use error::{BoxError, IoOp, PipelineError};
pub use executor::{Executor, PointOutput, PointSpec, SweepCtx};
pub use fixed::FixedSequence;
pub use observe::{Observer, ObserverError, SweepSummary};
pub use plan::{
    AgentxPlan, EvalPlan, EvalTask, FixedPlan, IdentityPlan, MultiturnPlan, SimPlan, SweepPlan,
    Workload, DEFAULT_SIM_SPEEDUP,
};
pub use session::{
    ProbeLoad, Session, SessionParts, SweepOutcome, EXIT_EVAL_GATE, EXIT_INTERRUPTED,
};
pub use sweep::run_sweep;
pub use target::Target;

#[cfg(test)]
mod module_graph {
    //! The modules of this crate import each other one way: no cycle (issue 33). A module's
    //! imports are the `crate::<module>` / `super::<module>` paths in its code before its
    //! `#[cfg(test)]` part, comment lines left out.
    use std::collections::{BTreeMap, BTreeSet};

    fn graph() -> BTreeMap<String, BTreeSet<String>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = BTreeMap::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "rs") {
                let name = p.file_stem().unwrap().to_string_lossy().to_string();
                files.insert(name, std::fs::read_to_string(&p).unwrap());
            }
        }
        let mut g = BTreeMap::new();
        for (name, text) in &files {
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let mut deps = BTreeSet::new();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for prefix in ["crate::", "super::"] {
                    for (i, _) in line.match_indices(prefix) {
                        let rest = &line[i + prefix.len()..];
                        let m: String = rest
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                            .collect();
                        if m != *name && files.contains_key(&m) {
                            deps.insert(m);
                        }
                    }
                }
            }
            g.insert(name.clone(), deps);
        }
        g
    }

    #[test]
    fn modules_import_each_other_without_a_cycle() {
        let g = graph();
        assert!(g.len() > 20, "{} modules read", g.len());
        // Kahn: repeatedly remove a module none of the remaining ones import
        let mut left = g.clone();
        while let Some(m) = left
            .keys()
            .find(|m| !left.values().any(|d| d.contains(*m)))
            .cloned()
        {
            left.remove(&m);
        }
        assert!(
            left.is_empty(),
            "import cycle among pipeline modules: {left:?}"
        );
        // the one every module reports through stays a leaf
        assert!(g["console"].is_empty(), "{:?}", g["console"]);
    }
}
