//! Each point's own `/workspace`, as InferenceX's launchers give it: they mount the checkout at
//! `/workspace` in the engine's container and run the recipe from there
//! (`--container-workdir=/workspace/ … bash benchmarks/single_node/…`), and 70 of the 77
//! fixed-seq-len recipes write `/workspace/server.log` (and `--result-dir /workspace/`).
//!
//! servebench does the same without a container and without touching the host's `/workspace`:
//! the attempt gets a copy of the checkout (`workspace/`, without `.git`), and the recipe runs in
//! a private mount namespace made by bubblewrap, whose root is a fresh tmpfs holding the host's
//! top-level folders bind-mounted as they are (`/usr`, `/tmp`, `/home`, …, `/dev`, `/proc`) and
//! the copy bind-mounted at `/workspace` ([`bwrap_argv`]). Nothing outside the attempt folder is
//! written; the host need not have a `/workspace` (and a host one is hidden, not used). Works
//! as root and, where unprivileged user namespaces are allowed, as any user (bubblewrap then
//! makes a user namespace itself).
//!
//! After the attempt, [`prune`] drops the copied files the recipe left unchanged, so
//! `workspace/` keeps only what the recipe wrote (`server.log`, result files, …).

use std::path::{Path, PathBuf};

use crate::error::{Result, RunnerError};

/// The mount point the recipe sees its workspace at.
pub const MOUNT: &str = "/workspace";

/// The folder of the attempt that is mounted at `/workspace`.
pub const DIR: &str = "workspace";

/// The InferenceX checkout a recipe belongs to: the nearest folder above it holding
/// `benchmarks/benchmark_lib.sh`.
pub fn checkout_root(recipe: &Path) -> Option<PathBuf> {
    recipe
        .ancestors()
        .skip(1)
        .find(|d| d.join("benchmarks/benchmark_lib.sh").is_file())
        .map(Path::to_path_buf)
}

/// The namespace tool (`bwrap`) on `PATH`.
///
/// Errors: one line saying it is missing, why it is needed and how to install it.
pub fn find_bwrap() -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            RunnerError::Invalid(
                "bwrap (bubblewrap) is not on PATH: an InferenceX recipe runs with its own \
                 /workspace in a private mount namespace (apt-get install bubblewrap; \
                 scripts/services/bubblewrap.sh)"
                    .into(),
            )
        })
}

/// The recipe's path inside the namespace: `/workspace/<path of the recipe in the checkout>`.
pub fn recipe_inside(checkout: &Path, recipe: &Path) -> Option<PathBuf> {
    recipe
        .strip_prefix(checkout)
        .ok()
        .map(|rel| Path::new(MOUNT).join(rel))
}

/// Copies the checkout into `dest` (created; `.git` left out, and so is any folder holding
/// `dest` itself — a run directory inside the checkout, `--out run1` from its root), keeping
/// each file's modification time so [`prune`] can tell the recipe's writes from the copy.
///
/// Errors: a file or folder that cannot be read or written, named.
pub fn copy_checkout(checkout: &Path, dest: &Path) -> Result<()> {
    std::fs::create_dir_all(dest).map_err(|e| RunnerError::io(dest, e))?;
    let dest_abs = std::fs::canonicalize(dest).map_err(|e| RunnerError::io(dest, e))?;
    copy_tree(checkout, dest, &dest_abs)
}

fn copy_tree(checkout: &Path, dest: &Path, dest_abs: &Path) -> Result<()> {
    std::fs::create_dir_all(dest).map_err(|e| RunnerError::io(dest, e))?;
    let entries = std::fs::read_dir(checkout).map_err(|e| RunnerError::io(checkout, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| RunnerError::io(checkout, e))?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let src = entry.path();
        let dst = dest.join(&name);
        let ft = entry.file_type().map_err(|e| RunnerError::io(&src, e))?;
        if ft.is_symlink() {
            let target = std::fs::read_link(&src).map_err(|e| RunnerError::io(&src, e))?;
            std::os::unix::fs::symlink(&target, &dst).map_err(|e| RunnerError::io(&dst, e))?;
        } else if ft.is_dir() {
            if std::fs::canonicalize(&src).is_ok_and(|c| dest_abs.starts_with(&c)) {
                continue; // the run directory (and its attempt) inside the checkout
            }
            copy_tree(&src, &dst, dest_abs)?;
        } else if ft.is_file() {
            std::fs::copy(&src, &dst).map_err(|e| RunnerError::io(&dst, e))?;
            let mtime = entry
                .metadata()
                .and_then(|m| m.modified())
                .map_err(|e| RunnerError::io(&src, e))?;
            std::fs::File::options()
                .write(true)
                .open(&dst)
                .and_then(|f| f.set_modified(mtime))
                .map_err(|e| RunnerError::io(&dst, e))?;
        }
    }
    Ok(())
}

/// Removes from `dest` every file the recipe left as [`copy_checkout`] made it (same length and
/// modification time as in the checkout) and the folders that are then empty. Returns how many
/// files are kept (the recipe's writes). Errors are ignored: the copy is only a convenience.
pub fn prune(checkout: &Path, dest: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dest) else {
        return 0;
    };
    let mut kept = 0;
    for entry in entries.flatten() {
        let p = entry.path();
        let src = checkout.join(entry.file_name());
        let Ok(ft) = entry.file_type() else {
            kept += 1;
            continue;
        };
        if ft.is_dir() {
            kept += prune(&src, &p);
            let _ = std::fs::remove_dir(&p); // only when empty
        } else {
            let same = match (entry.metadata(), std::fs::symlink_metadata(&src)) {
                (Ok(a), Ok(b)) if ft.is_symlink() => {
                    b.file_type().is_symlink() && a.len() == b.len()
                }
                (Ok(a), Ok(b)) => {
                    a.len() == b.len()
                        && a.modified().ok().is_some()
                        && a.modified().ok() == b.modified().ok()
                }
                _ => false,
            };
            if same {
                let _ = std::fs::remove_file(&p);
            } else {
                kept += 1;
            }
        }
    }
    kept
}

/// Folders of engine images that recipes reach into (SGLang's `/sgl-workspace`, vLLM's
/// `/vllm-workspace`): `qwen3.5_fp8_h200_mtp.sh` patches
/// `/sgl-workspace/sglang/python/sglang/srt/managers/multi_tokenizer_mixin.py` with `sed -i`
/// before it starts SGLang.
pub const IMAGE_ROOTS: &[&str] = &["/sgl-workspace", "/vllm-workspace"];

/// The paths under [`IMAGE_ROOTS`] that `text` (a recipe) names, sorted, each once.
pub fn image_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for root in IMAGE_ROOTS {
        let mut rest = text;
        while let Some(i) = rest.find(root) {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
                .unwrap_or(tail.len());
            let path = tail[..end].trim_end_matches(['.', '/']);
            if path.len() > root.len() && path.as_bytes()[root.len()] == b'/' {
                out.push(path.to_string());
            }
            rest = &tail[end.max(1)..];
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The engine image's own files a recipe names, stood in under `dir` (`<dir>/sgl-workspace/…`):
/// a path whose last part has an extension becomes an empty file (a `sed -i` patch of it is a
/// no-op: the simulator is the engine), any other a folder. Returns the binds
/// (`<dir>/<root>` → `<root>`) for the roots the host does not have.
///
/// Errors: a stand-in that cannot be written.
pub fn image_stand_ins(dir: &Path, recipe_text: &str) -> Result<Vec<(PathBuf, String)>> {
    let mut binds = Vec::new();
    for p in image_paths(recipe_text) {
        let Some(root) = IMAGE_ROOTS.iter().find(|r| p.starts_with(*r)) else {
            continue;
        };
        if Path::new(root).exists() {
            continue;
        }
        let local = dir.join(p.trim_start_matches('/'));
        let is_file = Path::new(&p)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains('.'));
        if is_file {
            if let Some(parent) = local.parent() {
                std::fs::create_dir_all(parent).map_err(|e| RunnerError::io(parent, e))?;
            }
            if !local.exists() {
                std::fs::write(&local, "").map_err(|e| RunnerError::io(&local, e))?;
            }
        } else {
            std::fs::create_dir_all(&local).map_err(|e| RunnerError::io(&local, e))?;
        }
        let bind = (dir.join(root.trim_start_matches('/')), root.to_string());
        if !binds.contains(&bind) {
            binds.push(bind);
        }
    }
    Ok(binds)
}

/// The bubblewrap command line (before the recipe's own argv) that runs a command with
/// `workspace` mounted at `/workspace` and `/workspace` as its working folder: a fresh root
/// holding every top-level entry of the host's `/` as it is (folders bind-mounted read-write,
/// symlinks recreated; the host's own `/workspace`, if any, left out), `/dev` and `/proc` bound,
/// then `--` (the caller appends the command). No other namespace is unshared: the network, the
/// process ids and the process group are the job's, so the job's readiness probe, its port and
/// its process-group teardown work as without it.
/// `extra` binds more folders (`host` → `mount point`), e.g. [`image_stand_ins`].
pub fn bwrap_argv(bwrap: &Path, workspace: &Path, extra: &[(PathBuf, String)]) -> Vec<String> {
    let mut v = vec![bwrap.display().to_string()];
    let mut names: Vec<PathBuf> = std::fs::read_dir("/")
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    for p in names {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        if matches!(name.as_deref(), Some("proc" | "dev") | None)
            || p == Path::new(MOUNT)
            || extra.iter().any(|(_, at)| Path::new(at) == p)
        {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let at = p.display().to_string();
        if meta.file_type().is_symlink() {
            if let Ok(t) = std::fs::read_link(&p) {
                v.extend(["--symlink".into(), t.display().to_string(), at]);
            }
        } else if meta.is_dir() || meta.is_file() {
            v.extend(["--bind".into(), at.clone(), at]);
        }
    }
    v.extend(
        [
            "--dev-bind",
            "/dev",
            "/dev",
            "--bind",
            "/proc",
            "/proc",
            "--bind",
        ]
        .into_iter()
        .map(String::from),
    );
    v.push(workspace.display().to_string());
    v.push(MOUNT.into());
    for (host, at) in extra {
        v.extend(["--bind".into(), host.display().to_string(), at.clone()]);
    }
    v.extend(["--chdir".into(), MOUNT.into(), "--".into()]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_is_pruned_to_what_the_recipe_wrote() {
        let d = tempfile::tempdir().unwrap();
        let co = d.path().join("ix");
        std::fs::create_dir_all(co.join("benchmarks/single_node")).unwrap();
        std::fs::create_dir_all(co.join(".git")).unwrap();
        std::fs::write(co.join("benchmarks/benchmark_lib.sh"), "x").unwrap();
        std::fs::write(co.join("benchmarks/single_node/r.sh"), "y").unwrap();
        std::fs::write(co.join("README"), "z").unwrap();
        let r = co.join("benchmarks/single_node/r.sh");
        assert_eq!(checkout_root(&r).as_deref(), Some(co.as_path()));
        assert_eq!(
            recipe_inside(&co, &r).unwrap(),
            Path::new("/workspace/benchmarks/single_node/r.sh")
        );
        // the run directory inside the checkout (`--out r` from its root) is not copied
        let ws = co.join("r/points/p/attempt-1/workspace");
        copy_checkout(&co, &ws).unwrap();
        assert!(!ws.join("r").exists());
        assert!(ws.join("benchmarks/single_node/r.sh").is_file());
        assert!(!ws.join(".git").exists());
        std::fs::write(ws.join("server.log"), "log").unwrap();
        std::fs::write(ws.join("README"), "changed!").unwrap();
        assert_eq!(prune(&co, &ws), 2);
        assert!(ws.join("server.log").is_file() && ws.join("README").is_file());
        assert!(!ws.join("benchmarks").exists());
    }

    #[test]
    fn image_files_a_recipe_patches_are_stood_in() {
        let text = "F=/sgl-workspace/sglang/python/sglang/srt/managers/multi_tokenizer_mixin.py\nsed -i 'x' \"$F\"\ncd /sgl-workspace/sglang.\n";
        assert_eq!(
            image_paths(text),
            vec![
                "/sgl-workspace/sglang".to_string(),
                "/sgl-workspace/sglang/python/sglang/srt/managers/multi_tokenizer_mixin.py".into()
            ]
        );
        let d = tempfile::tempdir().unwrap();
        let binds = image_stand_ins(d.path(), text).unwrap();
        assert_eq!(
            binds,
            vec![(d.path().join("sgl-workspace"), "/sgl-workspace".to_string())]
        );
        let f = d
            .path()
            .join("sgl-workspace/sglang/python/sglang/srt/managers/multi_tokenizer_mixin.py");
        assert_eq!(std::fs::read_to_string(f).unwrap(), "");
    }

    #[test]
    fn the_namespace_mounts_the_workspace_and_hides_nothing_else() {
        let a = bwrap_argv(
            Path::new("/usr/bin/bwrap"),
            Path::new("/t/ws"),
            &[(
                PathBuf::from("/t/img/sgl-workspace"),
                "/sgl-workspace".into(),
            )],
        );
        let s = a.join(" ");
        assert!(
            s.contains("--bind /t/ws /workspace --bind /t/img/sgl-workspace /sgl-workspace --chdir /workspace --"),
            "{s}"
        );
        assert!(s.contains("--bind /tmp /tmp"), "{s}");
        assert!(s.contains("--dev-bind /dev /dev"), "{s}");
        assert!(!s.contains("--bind /workspace /workspace"), "{s}");
        assert_eq!(a.last().map(String::as_str), Some("--"));
    }
}
