//! `servebench run --dry-run`: the plan as text — each point, the engine command its recipe
//! (or the simulator) yields, the environment, the measurement, the GPUs, whether it is an
//! eval job, and the job script. Nothing is started or written.

use crate::error::Result;
use crate::job::{measure_args, EngineSpec};
use crate::plan::Point;
use crate::recipe::{recipe_env, shell_quote, sim_argv};
use crate::run::Runner;

/// What the simulator standing in for a point's engine is: its GPU and model presets with the
/// model's context length (a recipe's `--context-length`/`--max-model-len` overrides it), then
/// what it cannot model (the setup's notes).
pub fn sim_notes(sim: &crate::recipe::SimSetup) -> Vec<String> {
    let presets = servebench_sim::Presets::embedded();
    let ctx = presets
        .models
        .get(&sim.model)
        .map(|m| {
            format!(
                ", context length {} tokens unless the recipe sets one",
                m.max_model_len
            )
        })
        .unwrap_or_default();
    let mut v = vec![format!(
        "simulator: {} GPU preset × model preset {} (TP{}{ctx})",
        sim.gpu, sim.model, sim.tp
    )];
    v.extend(sim.notes.iter().cloned());
    v
}

/// The plan of `plan` as the runner would execute it (attempt 1 of every point).
pub fn plan_text(runner: &Runner, plan: &[Point]) -> Result<String> {
    let mut s = String::new();
    let n = plan.len();
    let slurm = runner.executor_name() == "slurm";
    if let Some(n) = plan.iter().find_map(|p| runner.measure().agentic_note(p)) {
        s.push_str(&format!("{n}\n"));
    }
    for (i, p) in plan.iter().enumerate() {
        if p.disagg.is_some() {
            s.push_str(&crate::multinode_plan::point_text(runner, i, n, p)?);
            continue;
        }
        let (spec, script) = runner.prepare("DRY-RUN", i, p, 1)?;
        s.push_str(&format!(
            "[{}/{n}] {}\n  point: {} · {} · {} · {} GPU{} ({}) · eval: {}\n",
            i + 1,
            p.id,
            p.label(),
            p.scenario_type(),
            p.image,
            p.gpus(),
            if p.gpus() == 1 { "" } else { "s" },
            if slurm {
                format!("sbatch --gpus={}", p.gpus())
            } else {
                "local".into()
            },
            if p.eval_only {
                "yes (gsm8k, eval-only job)"
            } else {
                "no"
            }
        ));
        let engine = match &spec.engine {
            EngineSpec::Recipe { path, sim } => {
                let mut line = format!(
                    "bash {}{}",
                    path.display(),
                    if sim.is_some() {
                        "  (simulated: engine and host tools shimmed on PATH, $SERVEBENCH_SIM_CMD set; docs/run.md)"
                    } else {
                        ""
                    }
                );
                if crate::workspace::checkout_root(path).is_some() {
                    line.push_str(
                        "
    note: runs with its own /workspace (a copy of the checkout, bubblewrap mount namespace)",
                    );
                }
                if let Some(sim) = sim {
                    for note in sim_notes(sim) {
                        line.push_str(&format!(
                            "
    note: {note}"
                        ));
                    }
                }
                line
            }
            EngineSpec::Simulator(sim) => {
                let mut v = sim_argv(&spec.exe, sim, 0, p.eval_only);
                v[0] = "servebench".into();
                let mut line = v.join(" ").replace("--port 0", "--port $PORT");
                for note in &sim.notes {
                    line.push_str(&format!("\n    note: {note}"));
                }
                line
            }
        };
        s.push_str(&format!("  engine: {engine}\n"));
        let env: Vec<String> = recipe_env(
            p,
            &spec.runner,
            0,
            &spec.dir.join("results"),
            runner.measure().window_s(),
        )
        .into_iter()
        .map(|(k, v)| {
            let v = if k == "PORT" {
                "$PORT".to_string()
            } else {
                shell_quote(&v)
            };
            format!("{k}={v}")
        })
        .collect();
        s.push_str(&format!("  env: {}\n", env.join(" ")));
        let m: Vec<String> = measure_args(&spec, 0)
            .iter()
            .map(|a| shell_quote(a))
            .collect();
        s.push_str(&format!(
            "  measure: servebench {}\n  job script ({}):\n",
            m.join(" ").replace("127.0.0.1:0", "127.0.0.1:$PORT"),
            spec.dir.join("job.sh").display()
        ));
        for l in script.lines() {
            s.push_str(&format!("    {l}\n"));
        }
    }
    Ok(s)
}
