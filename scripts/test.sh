#!/usr/bin/env bash
# The test command of the README. Installs and starts every service the tests need (real engine,
# OCI registry, Chromium, lm-eval, Slurm: one node and 4 nodes), each by its own idempotent script in scripts/services/, then
# runs the whole test suite. Tests that need a service fail (not skip) when it is missing, because
# SERVEBENCH_REQUIRE_SERVICES=1 is set here.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -p servebench-client   # extra args go to cargo test
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export SERVEBENCH_SHARED="${SERVEBENCH_SHARED:-$root/../shared}"
if [ ! -d "$SERVEBENCH_SHARED/data" ]; then
  echo "error: shared data folder not found at $SERVEBENCH_SHARED (set SERVEBENCH_SHARED)" >&2
  exit 1
fi
# Disk: a full debug build of the workspace and its ~100 test binaries needs about TARGET_GIB of
# disk. CI machines have been seen with only a few hundred MB free (stop 34: ENOSPC while
# compiling); then the build and the tests' temporary files go to RAM (/dev/shm, a tmpfs) when it
# has room, and the choice is printed.
free_gib() { df -Pk "$1" 2>/dev/null | awk 'NR==2 {print int($4/1048576)}'; }
need_gib="${SERVEBENCH_BUILD_GIB:-12}"
if [ -z "${CARGO_TARGET_DIR:-}" ] && [ "$(free_gib .)" -lt "$need_gib" ]; then
  if [ -d /dev/shm ] && [ "$(free_gib /dev/shm)" -ge "$need_gib" ]; then
    export CARGO_TARGET_DIR=/dev/shm/servebench-target TMPDIR=/dev/shm/servebench-tmp
    mkdir -p "$TMPDIR"
    echo "[test.sh] only $(free_gib .) GiB free on $(pwd): building in $CARGO_TARGET_DIR, TMPDIR=$TMPDIR" >&2
  else
    echo "warning: only $(free_gib .) GiB free on $(pwd) and /dev/shm is smaller; the build may run out of disk" >&2
  fi
fi
# apt lists once, for the scripts that install Debian packages.
if [ -z "${SERVEBENCH_SKIP_APT_UPDATE:-}" ] && command -v apt-get >/dev/null; then
  apt-get update -qq >&2 || echo "warning: apt-get update failed" >&2
fi
# Services this script started and must stop on exit (normal end, a failure, Ctrl-C): the
# throwaway PostgreSQL cluster (scripts/services/postgres.sh says SERVEBENCH_PG_STARTED=1 when it
# created one; a cluster that already answered is someone else's and is left running).
cleanup() {
  if [ -n "${SERVEBENCH_PG_STARTED:-}" ]; then
    echo "[test.sh] stopping the PostgreSQL cluster it started" >&2
    bash scripts/services/postgres.sh stop >&2 || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for s in scripts/services/*.sh; do
  name="$(basename "$s" .sh)"
  echo "[test.sh] starting service: $name" >&2
  t0=$(date +%s)
  if exports="$(bash "$s")"; then
    eval "$exports"
    echo "[test.sh] $name ready in $(( $(date +%s) - t0 ))s" >&2
  else
    echo "error: service script $s failed" >&2
    exit 1
  fi
done
export SERVEBENCH_REQUIRE_SERVICES=1
# A one-off build: incremental caches only cost disk (a stop's CI ran out of it while compiling).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
echo "[test.sh] disk before the build: $(df -h "${CARGO_TARGET_DIR:-.}" | awk 'NR==2 {print $4 " free of " $2}') (target: ${CARGO_TARGET_DIR:-target})" >&2
cargo build --workspace --all-targets
cargo test --workspace --no-fail-fast "$@"
