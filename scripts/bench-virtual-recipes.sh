#!/usr/bin/env bash
# bench-virtual-recipes.sh — issue 29: the real config behind the scenario
# (qwen3.5-fp8-b200-sglang-agentic-mtp: 33 AgentX points, its recipes' full 3,600 s window) under
# `servebench run --simulate --recipes <InferenceX checkout>` on the virtual clock, and one
# AgentX point (900 s window, conc 64, shared traces) as a sweep pinned to one core.
#
# Reports wall time, CPU-seconds of everything the run started (a cpuacct cgroup when
# /sys/fs/cgroup/cpuacct is writable — the jobs' recipes, shims, engines and sweeps are their
# own process groups, which getrusage undercounts — else the run's own rusage, said so), and the
# load average before and after.
#
# Usage: scripts/bench-virtual-recipes.sh INFERENCEX_CHECKOUT [OUT]
# Environment: VR_BIN (default target/release/servebench), VR_JOBS (run --jobs, default 2),
# VR_DURATION (default: the recipes' own, 3600 s), VR_CONC (a --conc subset; default all 33),
# VR_CPUS (taskset list for the run, default all), VR_POINT=0 skips the one-point sweep.
# SERVEBENCH_SHARED must name the shared data folder (traces).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
IX=${1:?usage: $0 INFERENCEX_CHECKOUT [OUT]}
OUT=${2:-target/bench-virtual-recipes/$(date -u +%Y%m%dT%H%M%SZ)}
BIN=$(realpath "${VR_BIN:-target/release/servebench}")
SHARED=${SERVEBENCH_SHARED:?set SERVEBENCH_SHARED}
JOBS=${VR_JOBS:-2}
[[ -x $BIN ]] || { echo "$BIN missing (cargo build --release -p servebench)" >&2; exit 2; }
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
# a private copy of the checkout: the run writes nothing into it, but it is not ours
rm -rf "$OUT/ix"; cp -a "$IX" "$OUT/ix"
CG=/sys/fs/cgroup/cpuacct/servebench-vr-$$
cpu_s() { awk '{printf "%.2f", $1/1e9}' "$CG/cpuacct.usage"; }
if mkdir "$CG" 2>/dev/null; then ACCT=cgroup; else ACCT=rusage; fi
trap '[[ $ACCT == cgroup ]] && { cat "$CG/cgroup.procs" >/dev/null; rmdir "$CG" 2>/dev/null; }; true' EXIT
measure() { # NAME CMD… : wall, CPU, load before/after into $OUT/NAME.txt
  local name=$1; shift
  local l0; l0=$(cut -d' ' -f1-3 /proc/loadavg)
  local t0; t0=$(date +%s.%N)
  if [[ $ACCT == cgroup ]]; then
    echo 0 > "$CG/cpuacct.usage"
    ( echo $BASHPID > "$CG/cgroup.procs"; exec "$@" ) > "$OUT/$name.log" 2>&1 || true
    local cpu; cpu=$(cpu_s)
  else
    /usr/bin/time -f '%U %S' -o "$OUT/$name.rusage" "$@" > "$OUT/$name.log" 2>&1 || true
    local cpu; cpu=$(awk '{printf "%.2f", $1+$2}' "$OUT/$name.rusage")
  fi
  local t1; t1=$(date +%s.%N)
  printf '%s: wall %.1f s, CPU %s s (%s), load before %s, after %s, %s CPUs\n' "$name" \
    "$(echo "$t1 - $t0" | bc)" "$cpu" "$ACCT" "$l0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)" \
    | tee "$OUT/$name.txt"
}
echo "binary $(sha256sum "$BIN" | cut -c1-12), commit $(git rev-parse --short HEAD)" | tee "$OUT/env.txt"
args=(run qwen3.5-fp8-b200-sglang-agentic-mtp --catalog configs/nvidia-master.yaml
      --runners configs/runners.yaml --recipes . --executor local --simulate --no-evals
      --traces "$SHARED/data/agentx-traces" --jobs "$JOBS" --out "$OUT/run" --db "$OUT/run.db")
[[ -n ${VR_DURATION:-} ]] && args+=(--duration "$VR_DURATION")
[[ -n ${VR_CONC:-} ]] && args+=(--conc "$VR_CONC")
pin=(); [[ -n ${VR_CPUS:-} ]] && pin=(taskset -c "$VR_CPUS")
( cd "$OUT/ix" && measure config "${pin[@]}" "$BIN" "${args[@]}" )
grep -E "^status|stored" "$OUT/config.log" | tail -3
if [[ ${VR_POINT:-1} == 1 ]]; then
  measure point900 taskset -c 0 "$BIN" sweep --scenario agentx --traces "$SHARED/data/agentx-traces" \
    --conc 64 --duration 900 --no-store --out "$OUT/point900"
  grep -E "ok, .* failed in" "$OUT/point900.log" || true
fi
