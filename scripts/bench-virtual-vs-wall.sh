#!/usr/bin/env bash
# bench-virtual-vs-wall.sh — issue 29: the same inputs on the virtual clock and on the wall clock
# (speedup 1: real time, so host lag is not multiplied), fixed-sequence and AgentX, and the
# table of mean TTFT / TPOT / output tok/s/GPU with the differences (docs/benchmarks.md §9).
# For AgentX it also matches the requests of the two runs by (conversation, turn): the mean
# TTFT of the requests BOTH windows hold, so a difference from which requests fall in the
# window is told apart from a difference in the latency of the same request.
#
# Usage: scripts/bench-virtual-vs-wall.sh [OUT]
# Environment: VW_BIN (default target/release/servebench), VW_CONC (default 1,4,16,64),
# VW_DURATION (AgentX window, s; default 60), VW_PROMPTS (fixed-seq prompts per point, 64),
# VW_WALL_RUNS (wall runs per workload, default 1; 2 gives a wall A/A pair as well),
# VW_SKIP_FIXED=1, VW_SKIP_AGENTX=1. SERVEBENCH_SHARED names the shared data (traces).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${1:-target/bench-virtual-vs-wall/$(date -u +%Y%m%dT%H%M%SZ)}
BIN=$(realpath "${VW_BIN:-target/release/servebench}")
CONC=${VW_CONC:-1,4,16,64}; DUR=${VW_DURATION:-60}; NP=${VW_PROMPTS:-64}; WR=${VW_WALL_RUNS:-1}
TR=${SERVEBENCH_SHARED:?set SERVEBENCH_SHARED}/data/agentx-traces
mkdir -p "$OUT"
echo "binary $(sha256sum "$BIN" | cut -c1-12), commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs" | tee "$OUT/env.txt"
run() { echo "$(date -u +%T) $*" | tee -a "$OUT/env.txt"; "$BIN" "$@" > "$OUT/$(basename "${@: -1}").log" 2>&1 || true; }
fixed=(sweep --conc "$CONC" --isl 512 --osl 128 --num-prompts "$NP" --flush-cache auto --no-store)
agentx=(sweep --scenario agentx --traces "$TR" --conc "$CONC" --duration "$DUR" --no-store)
if [[ ${VW_SKIP_FIXED:-0} != 1 ]]; then
  run "${fixed[@]}" --out "$OUT/fixed-virtual"
  for w in $(seq "$WR"); do run "${fixed[@]}" --sim-speedup 1 --out "$OUT/fixed-wall$w"; done
fi
if [[ ${VW_SKIP_AGENTX:-0} != 1 ]]; then
  run "${agentx[@]}" --out "$OUT/agentx-virtual"
  for w in $(seq "$WR"); do run "${agentx[@]}" --sim-speedup 1 --out "$OUT/agentx-wall$w"; done
fi
python3 scripts/virtual_vs_wall.py "$OUT" | tee "$OUT/table.md"
