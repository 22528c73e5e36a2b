#!/usr/bin/env python3
"""Regenerates the change-log goldens of crates/catalog/tests/data/changelog_history/.

Usage:
    python3 scripts/changelog_goldens.py REPO [--pin 843c6254f] [--count 150] [--out DIR]
                                             [--reuse OLD.bundle]

REPO is a clone or bare git directory of SemiAnalysisAI/InferenceX with its history (e.g. the
`fetch` tool's /work/.mirror/SemiAnalysisAI+InferenceX/repo). Needs python3 with pyyaml and
pydantic (what run-sweep.yml gives the script: `uv run --with pydantic --with pyyaml`).

What it does, for the last COUNT first-parent commits of PIN that touch perf-changelog.yaml:

1. Checks each commit C out in a scratch work tree and overlays `utils/` from PIN (the
   processor and matrix generator servebench implements: the catalog's commit), then runs the
   real script exactly as run-sweep.yml does on a push to main:
       python3 utils/process_changelog.py --changelog-file $WT/perf-changelog.yaml \
           --base-ref <C's parent, 40 hex> --head-ref <C, 40 hex>
   (no --trim-conc/--all-evals/--evals-only: those are PR labels), cwd = the work tree.
   Its stdout (byte for byte) or, when it exits non-zero, the last line of stderr (the
   exception, the scratch work tree's path written `${GITHUB_WORKSPACE}`) is the golden.
2. Writes the inputs the test needs, compactly: a git bundle (`history.bundle`) of a small
   repository holding only perf-changelog.yaml, configs/amd-master.yaml,
   configs/nvidia-master.yaml and configs/runners.yaml: two commits per InferenceX commit C, C's
   parent then C (the commits that touch the change log are not each other's parents: the
   master configs change in between), each with the real 40-hex SHA as its message; git stores
   the 300 versions as deltas. The test runs servebench's processor with `git diff` on that
   repository and the real SHAs as the base/head labels.
3. Adds the goldens to the same bundle, as `goldens.jsonl` on the orphan branch `goldens` (git
   compresses it; no gzip reader needed in the test): one line per commit, oldest first,
   {"sha", "parent", "subject", "rc", "stdout"|"error"}.

Append-only entries: the script generates the base matrix with the base revision's own
generator (`git show BASE:utils/matrix_logic/...`); servebench uses its one generator for both.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

FILES = [
    "perf-changelog.yaml",
    "configs/amd-master.yaml",
    "configs/nvidia-master.yaml",
    "configs/runners.yaml",
]
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "crates", "catalog", "tests", "data", "changelog_history")


def git(repo, *args, check=True, capture=True):
    r = subprocess.run(
        ["git", "-C", repo, *args],
        capture_output=capture,
        text=True,
        check=False,
    )
    if check and r.returncode != 0:
        sys.exit(f"git {' '.join(args)} in {repo}: {r.stderr.strip()}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repo")
    ap.add_argument("--pin", default="843c6254f")
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--reuse", metavar="BUNDLE",
                    help="take the goldens from this bundle's goldens branch instead of running "
                         "the script again (repacks the inputs only)")
    a = ap.parse_args()

    pin = git(a.repo, "rev-parse", a.pin + "^{commit}").strip()
    shas = git(
        a.repo, "log", "--first-parent", f"-{a.count}", "--format=%H %P", pin,
        "--", "perf-changelog.yaml",
    ).split("\n")
    commits = [line.split()[:2] for line in shas if line.strip()][::-1]  # oldest first

    scratch = tempfile.mkdtemp(prefix="sb-cl-goldens-")
    wt = os.path.join(scratch, "wt")
    mini = os.path.join(scratch, "mini")
    try:
        subprocess.run(["git", "clone", "-q", "--no-checkout", a.repo, wt], check=True)
        utils_tar = os.path.join(scratch, "utils.tar")
        git(wt, "archive", "-o", utils_tar, pin, "utils")
        subprocess.run(["git", "init", "-q", "--initial-branch=history", mini], check=True)

        def snapshot(sha):
            for f in FILES:
                dest = os.path.join(mini, f)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                blob = subprocess.run(
                    ["git", "-C", wt, "show", f"{sha}:{f}"], capture_output=True, check=True
                ).stdout
                with open(dest, "wb") as fh:
                    fh.write(blob)
            env = dict(os.environ,
                       GIT_AUTHOR_NAME="goldens", GIT_AUTHOR_EMAIL="goldens@localhost",
                       GIT_COMMITTER_NAME="goldens", GIT_COMMITTER_EMAIL="goldens@localhost",
                       GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
                       GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
            subprocess.run(["git", "-C", mini, "add", "-A"], check=True, env=env)
            subprocess.run(["git", "-C", mini, "commit", "-q", "--allow-empty", "-m", sha],
                           check=True, env=env)

        reused = {}
        if a.reuse:
            clone = os.path.join(scratch, "reuse.git")
            subprocess.run(["git", "clone", "-q", "--bare", a.reuse, clone], check=True)
            for line in git(clone, "show", "goldens:goldens.jsonl").splitlines():
                row = json.loads(line)
                reused[row["sha"]] = row
        rows = []
        for i, (sha, parent) in enumerate(commits):
            if sha in reused:
                row = reused[sha]
            else:
                git(wt, "checkout", "-q", "-f", sha)
                git(wt, "clean", "-q", "-fdx")
                shutil.rmtree(os.path.join(wt, "utils"), ignore_errors=True)
                subprocess.run(["tar", "xf", utils_tar, "-C", wt], check=True)
                r = subprocess.run(
                    ["python3", "utils/process_changelog.py",
                     "--changelog-file", os.path.join(wt, "perf-changelog.yaml"),
                     "--base-ref", parent, "--head-ref", sha],
                    cwd=wt, capture_output=True, text=True,
                )
                row = {"sha": sha, "parent": parent,
                       "subject": git(wt, "log", "-1", "--format=%s", sha).strip(),
                       "rc": r.returncode}
                if r.returncode == 0:
                    row["stdout"] = r.stdout
                else:
                    lines = [l for l in r.stderr.splitlines() if l.strip()]
                    row["error"] = lines[-1] if lines else f"exit {r.returncode}"
                    # The work tree's path as the workflow's ("${GITHUB_WORKSPACE}/...").
                    row["error"] = row["error"].replace(wt, "${GITHUB_WORKSPACE}")
            rows.append(row)
            # Two commits per change: the parent's files (base: the change log, and the master
            # configs append-only entries compare against), then the commit's.
            snapshot(parent)
            snapshot(sha)
            print(f"{i + 1}/{len(commits)} {sha[:9]} rc={row['rc']} "
                  f"{row.get('error', '')[:100]}", file=sys.stderr)

        subprocess.run(["git", "-C", mini, "branch", "-M", "history"], check=True)
        subprocess.run(["git", "-C", mini, "checkout", "-q", "--orphan", "goldens"], check=True)
        subprocess.run(["git", "-C", mini, "rm", "-rq", "--cached", "."], check=True)
        for f in FILES:
            os.remove(os.path.join(mini, f))
        with open(os.path.join(mini, "goldens.jsonl"), "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        env = dict(os.environ,
                   GIT_AUTHOR_NAME="goldens", GIT_AUTHOR_EMAIL="goldens@localhost",
                   GIT_COMMITTER_NAME="goldens", GIT_COMMITTER_EMAIL="goldens@localhost",
                   GIT_AUTHOR_DATE="2026-01-01T00:00:00Z", GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
        subprocess.run(["git", "-C", mini, "add", "goldens.jsonl"], check=True, env=env)
        subprocess.run(["git", "-C", mini, "commit", "-q", "-m", f"goldens of {pin}"],
                       check=True, env=env)
        os.makedirs(a.out, exist_ok=True)
        git(mini, "gc", "-q", "--aggressive")
        git(mini, "bundle", "create", os.path.join(os.path.abspath(a.out), "history.bundle"),
            "--all")
        ok = sum(1 for r in rows if r["rc"] == 0)
        print(f"{len(rows)} commits, {ok} rc=0; wrote {a.out}", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
