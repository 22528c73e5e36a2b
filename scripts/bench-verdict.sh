#!/usr/bin/env bash
# How often does `servebench compare` cry wolf, and how often does it find a real regression?
# (issue 28; docs/benchmarks.md §7, docs/compare.md §4a)
#
# A chain of A/A sweeps of the embedded simulator, each with its own --seed (so its own prompt
# lengths), a0 a1 … aN: every neighbour pair (a(i-1), a(i)) is one A/A comparison of the same
# engine — N pairs from N+1 sweeps. Then SLOW sweeps with a planted slowdown (--sim-slowdown
# 1.10 and 1.15, new seeds), each compared against a(i). Every comparison is
# `servebench compare --baseline a/summary.json --candidate b/summary.json --json` at the
# defaults (mean, gate ±5 %), i.e. with per-request bootstrap intervals, Benjamini–Hochberg
# over all points × metrics, inconclusive instead of regression when the interval cannot tell.
# Every other sweep runs with LOAD_BURNERS busy-loop processes beside it (a loaded host on top
# of the machine's own load); the table says which.
#
#   bash scripts/bench-verdict.sh                 # N=200 A/A pairs, SLOW=30 per slowdown
#   N=20 SLOW=10 bash scripts/bench-verdict.sh    # quick look
#   JOBS=8 bash scripts/bench-verdict.sh          # 8 independent chains side by side (each
#                                                 # N/8 pairs; the machine loads itself)
#
# Workload per sweep: --conc $CONC (default 1,4,16) at --isl $ISL --osl $OSL (256/64), the
# default sample sizes (10 × conc requests per point), --no-store; CLOCK=virtual (default,
# issue 29: host-independent modelled numbers, the busy loops then change nothing but the wall
# time) or CLOCK=wall with --sim-speedup $SPEEDUP (20).
# Output: one line per comparison in $OUT/results.tsv, then the table (markdown) on stdout.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
N="${N:-200}"
SLOW="${SLOW:-30}"
CONC="${CONC:-1,4,16}"
ISL="${ISL:-256}"
OSL="${OSL:-64}"
SPEEDUP="${SPEEDUP:-20}"
CLOCK="${CLOCK:-virtual}"
if [ "$CLOCK" = virtual ]; then clock_args=(--sim-clock virtual); else clock_args=(--sim-clock wall --sim-speedup "$SPEEDUP"); fi
LOAD_BURNERS="${LOAD_BURNERS:-2}"
OUT="${OUT:-$(mktemp -d /tmp/bench-verdict.XXXXXX)}"
JOBS="${JOBS:-1}"
JOBS_TOTAL="${JOBS_TOTAL:-$JOBS}"
SEED0="${SEED0:-1000}"
bin="${SERVEBENCH_BIN:-}"
if [ -z "$bin" ]; then
  if [ -x target/release/servebench ]; then bin=target/release/servebench
  else
    [ -x target/debug/servebench ] || cargo build -p servebench >&2
    bin=target/debug/servebench
  fi
fi
mkdir -p "$OUT"
res="$OUT/results.tsv"
if [ "$JOBS" -gt 1 ]; then
  # independent chains with their own seeds, then one table over all of them
  pids=()
  t_start=$(date +%s)
  for j in $(seq 1 "$JOBS"); do
    N=$(( (N + JOBS - 1) / JOBS )) SLOW=$(( (SLOW + JOBS - 1) / JOBS )) JOBS=1 CLOCK="$CLOCK" \
      SEED0=$(( SEED0 + 100000 * j )) OUT="$OUT/chain$j" SERVEBENCH_BIN="$bin" TABLE=0 \
      bash "$0" >"$OUT/chain$j.log" 2>&1 &
    pids+=("$!")
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$OUT"/chain*/results.tsv > "$res"
  JOBS_TOTAL="$JOBS" ELAPSED=$(( $(date +%s) - t_start )) SKIP_RUN=1 JOBS=1 bash "$0"
  exit 0
fi

burners=()
start_load() {
  for _ in $(seq 1 "$LOAD_BURNERS"); do
    ( while :; do :; done ) &
    burners+=("$!")
  done
}
stop_load() {
  for p in "${burners[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${burners[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  burners=()
}
trap stop_load EXIT

# sweep DIR SEED SLOWDOWN LOADED
sweep() {
  local dir="$1" seed="$2" slow="$3" loaded="$4"
  [ -f "$dir/summary.json" ] && return 0
  [ "$loaded" = 1 ] && start_load
  "$bin" sweep --conc "$CONC" --isl "$ISL" --osl "$OSL" --seed "$seed" \
    "${clock_args[@]}" --sim-slowdown "$slow" --no-store --out "$dir" \
    >"$dir.log" 2>&1 || { stop_load; echo "sweep $dir failed: $(tail -3 "$dir.log")" >&2; exit 1; }
  [ "$loaded" = 1 ] && stop_load
  return 0
}

# compare KIND I LOADED BASE CAND
compare() {
  local kind="$1" i="$2" loaded="$3" base="$4" cand="$5" rc=0
  "$bin" compare --baseline "$base/summary.json" --candidate "$cand/summary.json" --json \
    >"$OUT/cmp-$kind-$i.json" 2>"$OUT/cmp-$kind-$i.err" || rc=$?
  python3 - "$OUT/cmp-$kind-$i.json" "$kind" "$i" "$loaded" "$rc" >>"$res" <<'PY'
import json, sys
path, kind, i, loaded, rc = sys.argv[1:]
c = json.load(open(path))
ms = [m for p in c["points"] for m in p["metrics"]]
n = lambda v: sum(1 for m in ms if m["verdict"] == v)
pts = lambda v: sum(1 for p in c["points"] if p["verdict"] == v)
ev = [m for m in ms if m.get("evidence")]
print("\t".join(map(str, [kind, i, loaded, rc, c["verdict"], n("regression"), pts("regression"),
    pts("inconclusive"), pts("no_change"), pts("improvement"), len(ms), len(ev)])))
PY
}

t0=$(date +%s)
if [ "${SKIP_RUN:-0}" != 1 ]; then
: > "$res"
sweep "$OUT/a0" "$SEED0" 1 0
for i in $(seq 1 "$N"); do
  loaded=$((i % 2))
  sweep "$OUT/a$i" $((SEED0 + i)) 1 "$loaded"
  compare aa "$i" "$loaded" "$OUT/a$((i - 1))" "$OUT/a$i"
done
for f in 1.10 1.15; do
  for i in $(seq 1 "$SLOW"); do
    loaded=$((i % 2))
    sweep "$OUT/s$f-$i" $((SEED0 + 5000 + i)) "$f" "$loaded"
    compare "slow$f" "$i" "$loaded" "$OUT/a$i" "$OUT/s$f-$i"
  done
done
fi
t1=$(date +%s)
[ "${TABLE:-1}" = 0 ] && exit 0
elapsed="${ELAPSED:-$((t1 - t0))}"

python3 - "$res" "$N" "$SLOW" "$CONC" "$ISL" "$OSL" "${clock_args[*]}" "$LOAD_BURNERS" "$elapsed" "$JOBS_TOTAL" <<'PY'
import sys
path, n, slow, conc, isl, osl, speedup, burners, secs, jobs = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
def summary(kind, loaded=None):
    r = [x for x in rows if x[0] == kind and (loaded is None or x[2] == loaded)]
    if not r:
        return None
    runs = len(r)
    any_reg = sum(1 for x in r if int(x[5]) > 0)
    exit2 = sum(1 for x in r if x[3] == "2")
    inc = sum(int(x[7]) for x in r)
    pts = sum(int(x[7]) + int(x[8]) + int(x[6]) + int(x[9]) for x in r)
    return runs, any_reg, exit2, inc, pts
print(f"Workload: sweep --conc {conc} --isl {isl} --osl {osl} (10 × conc requests per point), "
      f"{speedup}; loaded = {burners} busy-loop processes beside the sweep; "
      f"{jobs} chain(s) side by side; {secs} s in all.\n")
print("| comparison | host | runs | runs with any regression | exit 2 | inconclusive points / points |")
print("|---|---|---:|---:|---:|---:|")
for kind, label in [("aa", "A/A (same engine, other seed)"), ("slow1.10", "planted 10 % slowdown"),
                    ("slow1.15", "planted 15 % slowdown")]:
    for loaded, host in [("0", "machine's own load"), ("1", f"+{burners} busy loops"), (None, "all")]:
        s = summary(kind, loaded)
        if s:
            runs, any_reg, exit2, inc, pts = s
            print(f"| {label} | {host} | {runs} | {any_reg} ({100*any_reg/runs:.1f} %) | {exit2} | {inc} / {pts} |")
PY
echo "results: $res" >&2
