#!/usr/bin/env bash
# bench-client-process.sh — the WHOLE `servebench bench` process (start, tokenizer and dataset,
# preflight, warmup, measuring, records.jsonl/result.json/agg.json written) in token events per
# CPU-second on one core, next to the measuring phase alone (issue 21 target 1), in one invocation.
#
# Per round: `servebench sim --zero-delay` as its own process pinned to $BP_SIM_CPU, then
# `servebench bench` pinned to $BP_CLIENT_CPU under scripts/bench_client/procmon.py (exact
# user+sys of the whole process from wait4; CPU inside the measured window interpolated from
# 20 ms samples). Workload: conc 64 × OSL 1,024, 4,096 requests (+64 warmup), ISL 128,
# range ratio 0.8 (override with BP_CONC, BP_OSL, BP_N, BP_WARMUPS, BP_ISL).
#
# Prints per round and as medians: measured token events (sum of `token_events` of the measured
# records), whole-process CPU-s (user+sys), events / whole-process CPU-s, events / window CPU-s,
# and the ratio against the target (2.0 M events per CPU-s) and against $BP_REF (default the
# issue's 0.84 M whole-process figure).
#
# Usage: scripts/bench-client-process.sh [ROUNDS]      (default 3)
# Environment: BP_BIN (default target/release/servebench; built with BP_BUILD=1), BP_TOKENIZER
# (dir with tokenizer.json; default $SERVEBENCH_REAL_ENGINE_MODEL_DIR or /tmp/real-engine/model),
# or BP_TOKENIZERS="NAME=DIR NAME=DIR…" to measure several side by side in one invocation (each
# round runs every tokenizer in turn; the summary is per tokenizer, e.g.
# BP_TOKENIZERS="8k=/tmp/real-engine/model 128k=/tmp/servebench-agentx-oracle/tokenizer"),
# BP_CLIENT_CPU (0), BP_SIM_CPU (1), BP_OUT (target/bench-client-process/<UTC>).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${1:-3}
BIN=${BP_BIN:-target/release/servebench}
TOK=${BP_TOKENIZER:-${SERVEBENCH_REAL_ENGINE_MODEL_DIR:-/tmp/real-engine/model}}
CC=${BP_CLIENT_CPU:-0}; SC=${BP_SIM_CPU:-1}
CONC=${BP_CONC:-64}; OSL=${BP_OSL:-1024}; N=${BP_N:-4096}; W=${BP_WARMUPS:-64}; ISL=${BP_ISL:-128}
REF=${BP_REF:-840000}
OUT=${BP_OUT:-target/bench-client-process/$(date -u +%Y%m%dT%H%M%SZ)}
die() { echo "bench-client-process: $*" >&2; exit 2; }
[[ "${BP_BUILD:-0}" == 1 ]] && cargo build --release -p servebench >&2
[[ -x $BIN ]] || die "$BIN missing (BP_BUILD=1 builds it)"
TOKS=${BP_TOKENIZERS:-tok=$TOK}
for t in $TOKS; do [[ -f ${t#*=}/tokenizer.json ]] || die "no tokenizer.json in ${t#*=} (set BP_TOKENIZER/BP_TOKENIZERS)"; done
mkdir -p "$OUT"; cp "$BIN" "$OUT/servebench"; BIN=$OUT/servebench
echo "binary $(sha256sum "$BIN" | cut -c1-12), commit $(git rev-parse --short HEAD), $(git status --porcelain -- crates | wc -l) changed files under crates/; client CPU $CC, sim CPU $SC; $(nproc) CPUs" | tee "$OUT/env.txt"
SIM=
trap '[[ -n $SIM ]] && kill $SIM 2>/dev/null; true' EXIT
for r in $(seq "$ROUNDS"); do
 for t in $TOKS; do
  name=${t%%=*}; TOK=${t#*=}
  d=$OUT/$name/r$r; mkdir -p "$d"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  taskset -c "$SC" "$BIN" sim --zero-delay --port "$port" >"$d/sim.log" 2>&1 & SIM=$!
  for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null && break; sleep 0.1; done
  echo "round $r $name ($TOK): load$(uptime | sed 's/.*load average://')" | tee -a "$OUT/env.txt"
  python3 scripts/bench_client/procmon.py --out "$d/mon.json" -- taskset -c "$CC" "$BIN" bench \
    --endpoint "http://127.0.0.1:$port" --model Qwen/Qwen3-8B --tokenizer "$TOK" --conc "$CONC" \
    --isl "$ISL" --osl "$OSL" --range-ratio 0.8 --num-prompts "$N" --warmups "$W" --no-store \
    --out "$d/out" >"$d/client.log" 2>&1 || true   # exit 1 when the point is INVALID (e.g. a tokenizer that is not the sim's one-token-per-word)
  find "$d/out" -name result.json | grep -q . || die "bench wrote no result.json: $(tail -3 "$d/client.log")"
  kill "$SIM" 2>/dev/null; wait "$SIM" 2>/dev/null || true; SIM=
 done
done
python3 - "$OUT" "$ROUNDS" "$REF" $TOKS <<'PY'
import glob, json, statistics, sys
out, rounds, ref = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for tok in sys.argv[4:]:
  name, tdir = tok.split("=", 1)
  print(f"== tokenizer {name}: {tdir}")
  rows = []
  for r in range(1, rounds + 1):
    d = f"{out}/{name}/r{r}"
    mon = json.load(open(f"{d}/mon.json"))
    res = json.load(open(glob.glob(f"{d}/out/**/result.json", recursive=True)[0]))
    recs = [json.loads(l) for l in open(glob.glob(f"{d}/out/**/records.jsonl", recursive=True)[0])]
    ev = sum(x["token_events"] for x in recs if x["phase"] == "measured" and x["success"])
    t0, t1 = res["benchmark_start_time_unix"], res["benchmark_end_time_unix"]
    s = mon["samples"]
    def cpu_at(t):
        for a, b in zip(s, s[1:]):
            if a[0] <= t <= b[0]:
                return a[1] + (b[1] - a[1]) * (t - a[0]) / ((b[0] - a[0]) or 1)
        return s[-1][1] if t > s[-1][0] else s[0][1]
    win = cpu_at(t1) - cpu_at(t0)
    tot = mon["cpu_total_s"]
    rows.append((ev, tot, ev / tot, ev / win if win > 0 else float("nan"), mon["wall_s"]))
    print(f"round {r}: {ev:,} measured token events; whole process {tot:.2f} CPU-s ({rows[-1][4]:.2f} s wall) → {ev/tot:,.0f} events/CPU-s; measuring window {win:.2f} CPU-s → {rows[-1][3]:,.0f}")
  whole = statistics.median(x[2] for x in rows); meas = statistics.median(x[3] for x in rows)
  print(f"[{name}] median whole process: {whole:,.0f} events per CPU-s = {whole/2e6:.2f} × the 2.0 M target, {whole/ref:.2f} × reference {ref:,.0f}")
  print(f"[{name}] median measuring phase: {meas:,.0f} events per CPU-s = {meas/2e6:.2f} × the 2.0 M target")
PY
echo "files: $OUT"
