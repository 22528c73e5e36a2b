//! Shell-level first errors: which layer owns them, and what fixes them.
//!
//! Bash reports an error as `NAME: line N: MESSAGE` (`error_prolog` in bash's `error.c`):
//! `NAME` is the script being read (`$0`, or the sourced file that holds the line), or the
//! shell itself (`bash: …`) for `bash -c` and standard input; dash prints `sh: 1: …`. The
//! signature rows of group `shell` (layer `"shell"` in `signatures.toml`) extract the script,
//! its line and the subject (`command`, `path`, `var`); [`attribute`] then decides the owning
//! layer from the subject and from what the log showed before the line:
//!
//! * a path under the recipe tree (`benchmarks/…`, `benchmark_lib.sh`, the directory of a recipe
//!   the log started with `Run bash PATH`) → `recipe`; a launcher (`runners/…`, `launch_*.sh`)
//!   → `launcher`; a model or data mount (`/scratch`, `/mnt`, `/data`, `/models`, `/lustre`)
//!   → `launcher` (the launcher stages weights, AUTOMATION §4.2);
//! * a command that is not found: a scheduler or container tool (`srun`, `docker`, `enroot` …)
//!   → `host`; a shell function of the recipe tree (`check_env_vars`) → the script's layer;
//!   any other command → `image` when an image import or container start appears before the
//!   line (the command ran inside the container), else `host`;
//! * any other path: relative → the layer of the script that refers to it; absolute → `image`
//!   inside a container, else `host`.
//!
//! Every attribution says why (`layer_reason`) and what fixes it (`remedy`); both become
//! fields of the first error, used by the rows' `fix` and `next` templates.

use std::collections::BTreeMap;

use crate::types::Layer;

/// What the log showed before a shell error line (the inputs of [`attribute`]).
#[derive(Debug, Clone, Copy)]
pub struct ShellContext<'a> {
    /// An image import or container start marker appeared before the line.
    pub in_container: bool,
    /// The stage the log was in (launcher, recipe, engine, client), if any marker.
    pub stage: Option<Layer>,
    /// Scripts the log announced with `Run bash PATH` that are not launchers (the recipes
    /// `servebench run` started).
    pub recipe_paths: &'a [String],
}

/// The owning layer of a shell error, with why and what fixes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribution {
    /// The layer that owns the fix.
    pub layer: Layer,
    /// Why this layer (one clause, e.g. "no container start appears before it: it ran on the
    /// host").
    pub reason: String,
    /// What fixes it (one sentence).
    pub remedy: String,
}

/// Tools of the host a launcher calls (scheduler, container runtime): never inside an image.
const HOST_TOOLS: &[&str] = &[
    "srun",
    "salloc",
    "sbatch",
    "squeue",
    "scontrol",
    "sinfo",
    "sacct",
    "scancel",
    "enroot",
    "docker",
    "podman",
    "apptainer",
    "singularity",
    "gh",
    "module",
];

/// Binaries whose names look like shell functions (snake_case) but are programs.
const SNAKE_CASE_PROGRAMS: &[&str] = &["lm_eval", "hf_transfer", "torch_shm_manager"];

/// Prefixes of model and data mounts, staged by the launcher (same list as row F3).
const MOUNT_PREFIXES: &[&str] = &["/scratch/", "/mnt/", "/data/", "/models/", "/lustre/"];

/// Shells (and interpreters) whose name stands in the prolog when no script file is read.
fn is_shell_name(s: &str) -> bool {
    let base = s.rsplit('/').next().unwrap_or(s);
    matches!(base, "bash" | "sh" | "dash" | "zsh" | "ksh")
        || base.starts_with("python")
        || base == "env"
}

fn file_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The layer of a file path, when the path itself says it (`None` when it does not).
fn path_layer(path: &str, ctx: &ShellContext<'_>) -> Option<(Layer, String)> {
    let p = path.trim_matches(['\'', '"', '‘', '’']);
    let name = file_name(p);
    if p.contains("runners/") || name.starts_with("launch_") {
        return Some((Layer::Launcher, format!("`{p}` is a launcher file")));
    }
    if p.contains("benchmarks/") || name == "benchmark_lib.sh" {
        return Some((Layer::Recipe, format!("`{p}` is in the recipe tree")));
    }
    for r in ctx.recipe_paths {
        let dir = match r.rfind('/') {
            Some(i) => &r[..=i],
            None => "",
        };
        if p == r || (!dir.is_empty() && p.starts_with(dir)) {
            return Some((
                Layer::Recipe,
                format!("`{p}` is in the recipe tree (beside the recipe `{r}`)"),
            ));
        }
    }
    if MOUNT_PREFIXES.iter().any(|m| p.starts_with(m)) {
        return Some((
            Layer::Launcher,
            format!("`{p}` is on a model/data mount, which the launcher stages"),
        ));
    }
    None
}

/// The layer of the script that printed the error (`None`: the shell itself, no file).
fn script_layer(
    fields: &BTreeMap<String, String>,
    ctx: &ShellContext<'_>,
) -> Option<(Layer, String)> {
    let script = fields.get("script")?;
    if is_shell_name(script) {
        return None;
    }
    if let Some(l) = path_layer(script, ctx) {
        return Some(l);
    }
    if script.starts_with('/') {
        return Some(if ctx.in_container {
            (
                Layer::Image,
                format!("`{script}` is a file of the container (not in the recipe tree)"),
            )
        } else {
            (
                Layer::Host,
                format!("`{script}` is a file of the host (not in the recipe tree)"),
            )
        });
    }
    None
}

/// The script's layer, else the stage the log was in, else the recipe the log started.
fn owner_of_line(fields: &BTreeMap<String, String>, ctx: &ShellContext<'_>) -> (Layer, String) {
    if let Some(l) = script_layer(fields, ctx) {
        return l;
    }
    match ctx.stage {
        Some(s @ (Layer::Launcher | Layer::Recipe)) => (
            s,
            format!("no script file is named; the log was in the {s} stage"),
        ),
        _ if !ctx.recipe_paths.is_empty() => (
            Layer::Recipe,
            format!(
                "no script file is named; the job ran the recipe `{}`",
                ctx.recipe_paths[0]
            ),
        ),
        _ => (
            Layer::Unknown,
            "no script file is named and the log shows no stage".into(),
        ),
    }
}

/// Where the line is, for templates: `line 29 of /x/recipe.sh`, or the shell.
fn at(fields: &BTreeMap<String, String>) -> String {
    match (fields.get("script"), fields.get("script_line")) {
        (Some(s), _) if is_shell_name(s) => {
            format!("the command run by `{s}` (no script file named: `{s} -c` or standard input)")
        }
        (Some(s), Some(l)) => format!("line {l} of {s}"),
        (Some(s), None) => s.clone(),
        (None, _) => "the script".into(),
    }
}

fn host_or_image(ctx: &ShellContext<'_>, what: &str) -> (Layer, String) {
    if ctx.in_container {
        (
            Layer::Image,
            format!("{what} ran inside the container (an image import or container start comes before it)"),
        )
    } else {
        (
            Layer::Host,
            format!("{what} ran on the host (no image import or container start comes before it)"),
        )
    }
}

/// A hint for a few commands whose origin is not obvious.
fn command_hint(cmd: &str) -> &'static str {
    match cmd {
        "hf" => " (`hf` comes with huggingface_hub ≥ 0.34: `pip install -U huggingface_hub`; older installs have `huggingface-cli`)",
        "huggingface-cli" => " (`huggingface-cli` comes with huggingface_hub: `pip install -U huggingface_hub`)",
        "nvidia-smi" | "rocm-smi" | "amd-smi" => " (it comes with the GPU driver: on the host, the node's driver install; in a container, the runtime's GPU hooks mount it)",
        "python" => " (many images only have `python3`)",
        _ => "",
    }
}

fn is_shell_function_name(cmd: &str) -> bool {
    cmd.contains('_')
        && cmd
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !SNAKE_CASE_PROGRAMS.contains(&cmd)
}

/// Decides the owning layer of a shell error of `category` (a row of group `shell`) from its
/// extracted `fields` and the log's context, and says why and what fixes it.
///
/// Categories: `shell_command_not_found` (field `command`), `shell_file_not_found` (`path`),
/// `shell_unbound_variable` (`var`), `shell_permission_denied` (`path`),
/// `shell_syntax_error`, `shell_bad_interpreter` (`path`), `shell_set_e_command_failed`
/// (`command`, `exit_status`). Other categories get the owner of the line (script, stage).
pub fn attribute(
    category: &str,
    fields: &BTreeMap<String, String>,
    ctx: &ShellContext<'_>,
) -> Attribution {
    let at = at(fields);
    let get = |k: &str| fields.get(k).map(String::as_str).unwrap_or("");
    let (layer, reason, remedy) = match category {
        "shell_command_not_found" => {
            let cmd = get("command");
            if cmd.contains('/') {
                return attribute("shell_file_not_found", &with_path(fields, cmd), ctx);
            }
            if HOST_TOOLS.contains(&cmd) {
                (
                    Layer::Host,
                    format!("`{cmd}` is a scheduler/container tool of the host"),
                    format!("install or load `{cmd}` on the host the job runs on (PATH, `module load`); no recipe or image change fixes it"),
                )
            } else if is_shell_function_name(cmd) {
                let (l, why) = owner_of_line(fields, ctx);
                (
                    l,
                    format!("`{cmd}` looks like a shell function (such as benchmark_lib.sh's `check_env_vars`) that was not defined when {at} ran; {why}"),
                    format!("source the file that defines `{cmd}` before {at} (check that `source` line and its path), or fix the name"),
                )
            } else {
                let (l, why) = host_or_image(ctx, &format!("`{cmd}`"));
                let fix = match l {
                    Layer::Image => format!(
                        "use an image that ships `{cmd}`{}, or change {at} to call a command the image has",
                        command_hint(cmd)
                    ),
                    _ => format!(
                        "install `{cmd}` on the host or put it on the job's PATH{}; under `servebench run --simulate` the shims on PATH cover model downloads, engine launches and GPU probes (docs/run.md), and any other command must exist on the host",
                        command_hint(cmd)
                    ),
                };
                (l, why, fix)
            }
        }
        "shell_file_not_found" => {
            let path = get("path");
            let how = match get("builtin") {
                "cd" | "pushd" => "the directory",
                "source" | "." => "the sourced file",
                _ => "the file",
            };
            if let Some((l, why)) = path_layer(path, ctx) {
                let fix = match l {
                    Layer::Launcher if MOUNT_PREFIXES.iter().any(|m| path.starts_with(m)) => format!(
                        "stage {how} `{path}` on the target (weights/mounts are the launcher's), then rerun"
                    ),
                    _ => format!(
                        "add {how} `{path}` to the {l} tree or fix the path at {at} (a relative path resolves against the working directory, not the script's: use \"$(dirname \"$0\")/…\")"
                    ),
                };
                (l, why, fix)
            } else if !path.starts_with('/') {
                let (l, why) = owner_of_line(fields, ctx);
                (
                    l,
                    format!("a relative path, resolved against the working directory; {why}"),
                    format!("fix the path at {at} (relative paths resolve against the working directory, not the script's: use \"$(dirname \"$0\")/…\") or add {how} `{path}`"),
                )
            } else {
                let (l, why) = host_or_image(ctx, &format!("the script that needs `{path}`"));
                (
                    l,
                    why,
                    format!("create {how} `{path}` on the {l} (or fix the path at {at})"),
                )
            }
        }
        "shell_unbound_variable" => {
            let var = get("var");
            let (l, why) = owner_of_line(fields, ctx);
            let fix = if var.chars().all(|c| c.is_ascii_digit()) {
                format!("{at} reads positional argument ${var} under `set -u`, and the script was called without it: pass the argument or default it (`${{{var}:-…}}`)")
            } else {
                format!("set `{var}` before {at} runs: export it where the job's environment is made (the launcher's env contract, or `servebench run`'s recipe env) if the script expects it, or default it in the script (`${{{var}:-…}}`); under `set -u` an unset variable ends the script")
            };
            (l, why, fix)
        }
        "shell_permission_denied" => {
            let path = get("path");
            if let Some((l, why)) = path_layer(path, ctx) {
                (
                    l,
                    why,
                    format!("make `{path}` executable in the {l} tree (`chmod +x`, and `git update-index --chmod=+x` so the mode is committed) or run it as `bash {path}`"),
                )
            } else if !path.starts_with('/') {
                let (l, why) = owner_of_line(fields, ctx);
                (
                    l,
                    format!("a relative path, resolved against the working directory; {why}"),
                    format!("make `{path}` executable (`chmod +x`) or run it as `bash {path}`; if it is an output file, write where the job's user may"),
                )
            } else {
                let (l, why) = host_or_image(ctx, &format!("the access to `{path}`"));
                (
                    l,
                    why,
                    format!("give the job's user access to `{path}` on the {l} (owner, mode, mount options) or use another path"),
                )
            }
        }
        "shell_syntax_error" => {
            let (l, why) = owner_of_line(fields, ctx);
            let script = get("script");
            (
                l,
                why,
                format!("fix the shell syntax at {at} (`bash -n {script}` checks a script without running it)"),
            )
        }
        "shell_bad_interpreter" => {
            let path = get("path");
            let (l, why) = match path_layer(path, ctx) {
                Some(x) => x,
                None => owner_of_line(fields, ctx),
            };
            (
                l,
                why,
                format!("`{path}` has Windows line endings (CRLF: the `#!` line names `bash\\r`) or a `#!` line naming a missing interpreter: convert it (`sed -i 's/\\r$//' {path}`, `dos2unix`) or fix the `#!` line"),
            )
        }
        "shell_set_e_command_failed" => {
            let cmd = get("command");
            let status = get("exit_status");
            let (l, why) = owner_of_line(fields, ctx);
            (
                l,
                why,
                format!("`{cmd}` exited with status {status} under `set -e`, which ended the script: read its output (quoted under the command), fix what it needs, or let the script tolerate the failure (`|| true`) when it is expected"),
            )
        }
        _ => {
            let (l, why) = owner_of_line(fields, ctx);
            (l, why, format!("fix {at}"))
        }
    };
    Attribution {
        layer,
        reason,
        remedy,
    }
}

fn with_path(fields: &BTreeMap<String, String>, path: &str) -> BTreeMap<String, String> {
    let mut f = fields.clone();
    f.insert("path".into(), path.to_string());
    f
}

/// Names of the fields [`template_fields`] adds (used by templates, not listed as extracted).
pub const TEMPLATE_FIELDS: [&str; 3] = ["at", "layer_reason", "remedy"];

/// The fields [`attribute`] adds for the rows' templates: `at` (where: `line 29 of
/// /x/recipe.sh`), `layer_reason` and `remedy`.
pub fn template_fields(
    fields: &BTreeMap<String, String>,
    a: &Attribution,
) -> [(String, String); 3] {
    [
        ("at".into(), at(fields)),
        ("layer_reason".into(), a.reason.clone()),
        ("remedy".into(), a.remedy.clone()),
    ]
}

/// The command of a bash `set -x` trace line: `+ cmd` → `cmd`, at any depth (`++ cmd`, `+++
/// cmd`: bash repeats the first character of `PS4` once per level of indirection); `None` for
/// any other line. A bare `+` (an empty traced command) gives `Some("")`.
pub fn trace_command(body: &str) -> Option<&str> {
    let rest = body.trim_start_matches('+');
    let depth = body.len() - rest.len();
    if depth == 0 {
        return None;
    }
    if rest.is_empty() {
        return Some("");
    }
    rest.strip_prefix(' ').map(str::trim)
}

/// True when a traced command starts no program and so says nothing about which stage is
/// running: a variable assignment (`AIPERF_DIR=/workspace/utils/aiperf`, `missing_vars+=(…)`,
/// `PYTHONNOUSERSITE=1` before a command, which bash traces on a line of its own), a shell
/// builtin or keyword that only tests, prints or declares (`echo`, `printf`, `[[`, `test`,
/// `export`, `local`, `for`, `case`, `shift` …), or a command that only reads or makes paths
/// (`dirname`, `basename`, `mkdir`, `cat` …). `source`/`.` of a script and every other
/// command start something and stay evidence.
pub fn trace_starts_nothing(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or("");
    if first.is_empty() {
        return true;
    }
    // `NAME=…`, `NAME+=…`, `NAME[i]=…`
    let name_end = first
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(first.len());
    let after = &first[name_end..];
    if name_end > 0
        && !first.as_bytes()[0].is_ascii_digit()
        && (after.starts_with('=') || after.starts_with("+=") || after.starts_with('['))
    {
        return true;
    }
    matches!(
        first,
        "echo"
            | "printf"
            | "[["
            | "["
            | "test"
            | "true"
            | "false"
            | ":"
            | "export"
            | "local"
            | "declare"
            | "typeset"
            | "readonly"
            | "unset"
            | "for"
            | "case"
            | "select"
            | "while"
            | "until"
            | "if"
            | "shift"
            | "set"
            | "let"
            | "read"
            | "return"
            | "exit"
            | "trap"
            | "wait"
            | "sleep"
            | "cd"
            | "pushd"
            | "popd"
            | "pwd"
            | "dirname"
            | "basename"
            | "realpath"
            | "readlink"
            | "mkdir"
            | "touch"
            | "rm"
            | "cp"
            | "mv"
            | "ln"
            | "ls"
            | "cat"
            | "tee"
            | "head"
            | "tail"
            | "grep"
            | "sed"
            | "awk"
            | "cut"
            | "tr"
            | "sort"
            | "uniq"
            | "wc"
            | "date"
            | "hostname"
            | "id"
            | "whoami"
            | "nproc"
            | "command"
            | "type"
            | "hash"
            | "getopts"
            | "mapfile"
            | "readarray"
            | "kill"
            | "chmod"
            | "chown"
    )
}

/// True when a `set -x` trace line (`+ cmd`, `++ cmd`) shows a command whose failure is not a
/// `set -e` stop of interest: an explicit `exit`/`return` (the script chose to stop; its
/// message comes before), `wait`, cleanup (`kill`, `scancel`: the multinode launchers'
/// `EXIT` traps cancel the Slurm job after the failure, `scancel "$JOB_ID" … || true`), or
/// an engine launch (its death is the engine's, read server.log: row D9).
pub fn trace_is_not_a_set_e_candidate(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or("");
    matches!(
        first,
        "exit" | "return" | "wait" | "trap" | "set" | "kill" | "scancel"
    ) || command.contains("sglang.launch_server")
        || command.contains("vllm serve")
        || command.contains("vllm.entrypoints")
        || command.contains("trtllm-serve")
        || command.contains("sglang serve")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const HOST: ShellContext<'static> = ShellContext {
        in_container: false,
        stage: None,
        recipe_paths: &[],
    };
    const CONTAINER: ShellContext<'static> = ShellContext {
        in_container: true,
        stage: Some(Layer::Launcher),
        recipe_paths: &[],
    };

    #[test]
    fn command_not_found_is_owned_by_where_the_command_should_come_from() {
        let recipe = f(&[
            ("script", "/r/benchmarks/single_node/x.sh"),
            ("script_line", "29"),
            ("command", "hf"),
        ]);
        let a = attribute("shell_command_not_found", &recipe, &HOST);
        assert_eq!(a.layer, Layer::Host, "{a:?}");
        assert!(a.remedy.contains("huggingface_hub"), "{}", a.remedy);
        assert_eq!(
            attribute("shell_command_not_found", &recipe, &CONTAINER).layer,
            Layer::Image
        );
        let srun = f(&[("script", "runners/launch_b200-cw.sh"), ("command", "srun")]);
        assert_eq!(
            attribute("shell_command_not_found", &srun, &CONTAINER).layer,
            Layer::Host
        );
        let func = f(&[
            ("script", "/r/benchmarks/single_node/x.sh"),
            ("script_line", "4"),
            ("command", "check_env_vars"),
        ]);
        assert_eq!(
            attribute("shell_command_not_found", &func, &CONTAINER).layer,
            Layer::Recipe
        );
        let lm = f(&[("script", "bash"), ("command", "lm_eval")]);
        assert_eq!(
            attribute("shell_command_not_found", &lm, &HOST).layer,
            Layer::Host
        );
    }

    #[test]
    fn files_are_owned_by_their_tree() {
        let lib = f(&[
            ("script", "/x/my-recipes/qwen.sh"),
            ("script_line", "5"),
            ("path", "../benchmark_lib.sh"),
        ]);
        assert_eq!(
            attribute("shell_file_not_found", &lib, &HOST).layer,
            Layer::Recipe
        );
        let rel = f(&[
            ("script", "/x/my-recipes/qwen.sh"),
            ("script_line", "5"),
            ("path", "../common.sh"),
        ]);
        let recipes = ["/x/my-recipes/qwen.sh".to_string()];
        let ctx = ShellContext {
            recipe_paths: &recipes,
            ..HOST
        };
        let a = attribute("shell_file_not_found", &rel, &ctx);
        assert_eq!(a.layer, Layer::Recipe, "{a:?}");
        let launcher = f(&[
            ("script", "runners/launch_b200-cw.sh"),
            ("script_line", "12"),
            ("path", "runners/slurm_utils.sh"),
        ]);
        assert_eq!(
            attribute("shell_file_not_found", &launcher, &HOST).layer,
            Layer::Launcher
        );
        let mount = f(&[
            ("script", "bash"),
            ("path", "/scratch/models/x/config.json"),
        ]);
        assert_eq!(
            attribute("shell_file_not_found", &mount, &CONTAINER).layer,
            Layer::Launcher
        );
        let sys = f(&[("script", "bash"), ("path", "/usr/local/bin/entry.sh")]);
        assert_eq!(
            attribute("shell_permission_denied", &sys, &CONTAINER).layer,
            Layer::Image
        );
        assert_eq!(
            attribute("shell_permission_denied", &sys, &HOST).layer,
            Layer::Host
        );
    }

    #[test]
    fn unbound_variable_belongs_to_the_script_that_reads_it() {
        let v = f(&[
            ("script", "runners/launch_h200-nb.sh"),
            ("script_line", "7"),
            ("var", "MODEL_PATH"),
        ]);
        let a = attribute("shell_unbound_variable", &v, &HOST);
        assert_eq!(a.layer, Layer::Launcher);
        assert!(a.remedy.contains("${MODEL_PATH:-…}"), "{}", a.remedy);
        let p = f(&[("script", "bash"), ("var", "1")]);
        let a = attribute("shell_unbound_variable", &p, &HOST);
        assert_eq!(a.layer, Layer::Unknown);
        assert!(a.remedy.contains("positional argument $1"), "{}", a.remedy);
    }
}
