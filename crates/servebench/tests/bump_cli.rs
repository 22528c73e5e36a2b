//! `servebench bump` options and one-line errors.

use crate::common;
use common::{make_writable, run_scratch, SCENARIO as SCEN};

const KEY: &str = "qwen3.8next-fp4-b200-sglang-agentic-mtp";

fn setup() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(t.path().join("recipes")).unwrap();
    for (f, to) in [
        ("master.yaml", "master.yaml"),
        (
            "recipes/qwen3.8next_fp4_b200_sglang_mtp.sh",
            "recipes/qwen3.8next_fp4_b200_sglang_mtp.sh",
        ),
    ] {
        let to = t.path().join(to);
        std::fs::copy(format!("{SCEN}/{f}"), &to).unwrap();
        make_writable(&to);
    }
    t
}

#[test]
fn dry_run_writes_nothing_and_no_resolve_says_so() {
    let t = setup();
    let before = std::fs::read_to_string(t.path().join("master.yaml")).unwrap();
    let (rc, out, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--no-resolve",
            "--dry-run",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.contains(
            "-  image: lmsysorg/sglang:qwen38flashnext\n+  image: lmsysorg/sglang:v0.5.20-cu130\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("(digests not resolved: --no-resolve)"),
        "{out}"
    );
    assert!(out.contains("Note: digests were not resolved (--no-resolve): no index or platform digest is recorded"), "{out}");
    assert!(out.contains("Dry run: nothing written."));
    assert_eq!(
        std::fs::read_to_string(t.path().join("master.yaml")).unwrap(),
        before
    );
    assert!(!t.path().join("provenance.json").exists());
}

/// An entry in enroot form (`nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14` in InferenceX's
/// nvidia-master.yaml) keeps that form: `--image nvcr.io/…` was written as given, which
/// `enroot import docker://$IMAGE` looks up on Docker Hub.
#[test]
fn an_enroot_form_entry_keeps_its_form() {
    let t = setup();
    let cat = t.path().join("master.yaml");
    let text = std::fs::read_to_string(&cat).unwrap().replace(
        "image: lmsysorg/sglang:qwen38flashnext",
        "image: nvcr.io#nvidia/sglang:qwen38flashnext",
    );
    std::fs::write(&cat, text).unwrap();
    let (rc, out, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "nvcr.io/nvidia/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--no-resolve",
            "--dry-run",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.contains(
            "-  image: nvcr.io#nvidia/sglang:qwen38flashnext\n+  image: nvcr.io#nvidia/sglang:v0.5.20-cu130\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("Note: the catalog entry writes its image in enroot form"),
        "{out}"
    );
}

#[test]
fn unreachable_registry_stops_the_bump_with_one_line() {
    let t = setup();
    let before = std::fs::read_to_string(t.path().join("master.yaml")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let img = format!("127.0.0.1:{port}/lmsysorg/sglang:v0.5.20-cu130");
    let (rc, out, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            &img,
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--plain-http",
        ],
    );
    assert_eq!(rc, 1);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.starts_with(&format!(
            "error: registry unreachable: http://127.0.0.1:{port}/v2/ ("
        )),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1);
    assert_eq!(
        std::fs::read_to_string(t.path().join("master.yaml")).unwrap(),
        before
    );
}

#[test]
fn bad_reference_and_missing_key_are_one_line() {
    let t = setup();
    let (rc, _, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20@sha256:123",
            "--catalog",
            "master.yaml",
            "--no-resolve",
        ],
    );
    assert_eq!(rc, 1);
    assert_eq!(err.trim_end(), "error: invalid image reference `lmsysorg/sglang:v0.5.20@sha256:123`: sha256 digest needs 64 lowercase hex digits, got `123` (3 characters)");
    let (rc, _, err) = run_scratch(
        t.path(),
        &[
            "bump",
            "nope",
            "--image",
            "lmsysorg/sglang:v1",
            "--catalog",
            "master.yaml",
            "--no-resolve",
        ],
    );
    assert_eq!(rc, 1);
    assert_eq!(
        err.trim_end(),
        "error: config key `nope` not found in master.yaml"
    );
    let (rc, _, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v1",
            "--catalog",
            "missing.yaml",
            "--no-resolve",
        ],
    );
    assert_eq!(rc, 1);
    assert!(
        err.starts_with("error: cannot read missing.yaml: "),
        "{err}"
    );
}

#[test]
fn json_output_carries_the_record() {
    let t = setup();
    let (rc, out, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--provenance",
            &format!("{SCEN}/images.json"),
            "--json",
            "--dry-run",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["record"]["new_provenance"]["platform_digests"]["linux/amd64"],
        "sha256:b27fce60bc5494c118c4910702812bcfa8cee67abcdd1ff8b0902f21647552f4"
    );
    assert_eq!(
        v["record"]["recipes"][0]["outcomes"][0]["status"],
        "applied"
    );
    assert_eq!(v["dry_run"], true);
}

#[test]
fn a_skipped_change_log_is_said_and_a_missing_recipes_dir_is_an_error() {
    let t = setup();
    let (rc, out, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--no-resolve",
            "--no-store",
        ],
    );
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.contains("\nChange log: not written (no perf-changelog.yaml here or next to the catalog; pass --changelog FILE)\n"),
        "{out}"
    );
    assert!(!t.path().join("perf-changelog.yaml").exists());

    let t = setup();
    let before = std::fs::read_to_string(t.path().join("master.yaml")).unwrap();
    let (rc, out, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "/nonexist/recipes",
            "--no-resolve",
            "--no-store",
        ],
    );
    assert_eq!(rc, 1, "{out}");
    assert_eq!(
        err.trim_end(),
        "error: --recipes /nonexist/recipes: no such directory"
    );
    assert_eq!(
        std::fs::read_to_string(t.path().join("master.yaml")).unwrap(),
        before
    );
}

/// The recipe's engine flags are checked against the target image's flag table and reported
/// before the diff: the scenario's `--cuda-graph-max-bs` (deleted in SGLang v0.5.20) with the
/// argparse text; a recipe the bump cannot edit (a rule-less flag) says the launch will fail; an
/// image without a table says so once.
#[test]
fn bump_reports_removed_engine_flags_first() {
    let t = setup();
    let (rc, out, err) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--no-resolve",
            "--dry-run",
        ],
    );
    assert_eq!(rc, 0, "{out}\n{err}");
    let first = out.lines().next().unwrap_or("");
    assert!(
        first.starts_with("Flags recipes/qwen3.8next_fp4_b200_sglang_mtp.sh: 17 engine flag(s) checked against sglang 0.5.20 (PyPI sglang-0.5.20"),
        "{out}"
    );
    let flag = out
        .lines()
        .find(|l| l.starts_with("Flag "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(flag.contains("qwen3.8next_fp4_b200_sglang_mtp.sh:28 [renamed] --cuda-graph-max-bs was deleted in sglang 0.5.20 (it was an alias of --cuda-graph-max-bs-decode in sglang 0.5.19)"), "{flag}");
    assert!(flag.contains("`sglang serve: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill`"), "{flag}");
    assert!(
        flag.ends_with("replaced by this bump's recipe edit"),
        "{flag}"
    );
    let flag_at = out.find("Flag ").unwrap();
    assert!(flag_at < out.find("--- a/").unwrap(), "{out}");

    // a flag v0.5.20 does not know and no rule edits: the launch will fail, said before anything runs
    let r = t.path().join("recipes/qwen3.8next_fp4_b200_sglang_mtp.sh");
    let text = std::fs::read_to_string(&r).unwrap();
    std::fs::write(
        &r,
        text.replace("--max-mamba-cache-size 256", "--enable-nonexistent-thing"),
    )
    .unwrap();
    let (rc, out, _) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.20-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--no-resolve",
            "--dry-run",
        ],
    );
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains("[removed] --enable-nonexistent-thing is not a sglang 0.5.20 flag: `sglang serve: error: unrecognized arguments: --enable-nonexistent-thing` — still in the bumped recipe: its launch will fail"), "{out}");

    // no table for the target's release: said once, nothing passes silently
    let (rc, out, _) = run_scratch(
        t.path(),
        &[
            "bump",
            KEY,
            "--image",
            "lmsysorg/sglang:v0.5.17-cu130",
            "--catalog",
            "master.yaml",
            "--recipes",
            "recipes",
            "--no-resolve",
            "--dry-run",
        ],
    );
    assert_eq!(rc, 0, "{out}");
    assert_eq!(
        out.matches("no sglang flag table for release 0.5.17")
            .count(),
        1,
        "{out}"
    );
}
