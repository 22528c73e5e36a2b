#!/usr/bin/env bash
# AgentX replay client cost (issue 21 target 2): peak RSS and CPU-s per 1,000 requests of one
# `servebench sweep --scenario agentx` process against a mock engine in its own process.
#
#   scripts/bench-agentx-memory.sh BIN CONC [DURATION_S] [OUT_DIR]
#
# BIN: a servebench binary (release), or `harness` for agentx-harness (below); CONC: lanes. The mock is scripts/agentx_fast_mock.py
# (no body held, 1 ms per output token as the oracle mock; MOCK=oracle uses the oracle's
# mock_server.py instead; MOCK=sim runs `$SIM_BIN sim $SIM_ARGS` (default SIM_BIN=BIN; default
# SIM_ARGS: 8x B300 serving DeepSeek-R1 FP8, context raised to 1,048,576 tokens so the 700k-token
# histories fit, --zero-delay; SPEEDUP=N models the engine instead, N times faster than real
# time) under its own /usr/bin/time, and the client sends its served name, $MODEL (default
# deepseek-ai/DeepSeek-R1-0528)). With the engine modelled, 512 lanes of these histories keep
# the modelled engine busy prefilling one request at a time (511 waiting, docs/benchmarks.md
# §6.4), so the zero-delay default measures the client rather than the model's queue. Traces: $TRACES (default ../shared/data/agentx-traces), tokenizer:
# $TOK (default: the oracle's DeepSeek-V4 tokenizer dir). CPU = user + sys of the servebench
# process (/usr/bin/time -v), RSS = its peak; requests = lines of agentx_records.jsonl (streamed
# to disk, so a run cut by $LIMIT_S still counts what finished). $AS_LIMIT (e.g. 14G) caps the
# client's address space (prlimit --as) so a runaway run cannot take the shared machine down.
set -euo pipefail
BIN=${1:?servebench binary}
CONC=${2:?lanes}
DUR=${3:-60}
OUT=${4:-$(mktemp -d /tmp/agx-mem.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=${SERVEBENCH_SHARED:-$HERE/../../shared}
TRACES=${TRACES:-$SHARED/data/agentx-traces}
TOK=${TOK:-/tmp/servebench-agentx-oracle/tokenizer}
PY=${PY:-/tmp/servebench-agentx-oracle/venv/bin/python}
PORT=${PORT:-$((20000 + RANDOM % 20000))}
LIMIT_S=${LIMIT_S:-900}
mkdir -p "$OUT"
MODEL=${MODEL:-dsv4-mock}
if [ "${MOCK:-fast}" = oracle ]; then
  "$PY" "$SHARED/tools/agentx-oracle/mock_server.py" --port "$PORT" --model dsv4-mock \
    --log "$OUT/wire.jsonl" >"$OUT/mock.log" 2>&1 &
elif [ "${MOCK:-fast}" = sim ]; then
  MODEL=${MODEL/#dsv4-mock/deepseek-ai/DeepSeek-R1-0528}
  # shellcheck disable=SC2206
  if [ -n "${SPEEDUP:-}" ]; then PACE="--speedup $SPEEDUP"; else PACE=--zero-delay; fi
  SIM_ARGS=(${SIM_ARGS:---gpu b300 --model deepseek-r1-fp8 --tp 8 --max-model-len 1048576 $PACE})
  /usr/bin/time -v -o "$OUT/sim-time.txt" "${SIM_BIN:-$BIN}" sim "${SIM_ARGS[@]}" --port "$PORT" \
    >"$OUT/mock.log" 2>&1 &
else
  "$PY" "$HERE/agentx_fast_mock.py" --port "$PORT" --model dsv4-mock >"$OUT/mock.log" 2>&1 &
fi
MOCK_PID=$!
# GNU time ignores SIGINT, so the simulator under it is stopped by its own pid (it then exits
# and time writes sim-time.txt); a Python mock is MOCK_PID itself.
stop_mock() {
  local kids
  kids=$(pgrep -P "$MOCK_PID" || true)
  kill -INT $kids "$MOCK_PID" 2>/dev/null || true
  wait "$MOCK_PID" 2>/dev/null || true
}
trap stop_mock EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 0.2; done
if [ "$BIN" = harness ]; then
  # agentx-harness (shared/tools/agentx-oracle/run_oracle.sh, InferenceX defaults) against the
  # same server, in its own session under a watchdog: the session's processes are sampled every
  # 0.5 s (RSS, CPU seconds per process; the report gives both /usr/bin/time's totals and the
  # sampled ones, as /usr/bin/time misses a worker its parent never reaps) and the whole session is killed once it reaches $RSS_CAP (default 10G), so a runaway
  # harness cannot take the shared machine down (it was OOM-killed at 21.8 GiB at conc 512).
  CAP_KB=$(($(numfmt --from=iec "${RSS_CAP:-10G}") / 1024))
  mkdir -p "$OUT/run"
  VENV=${VENV:-$(dirname "$(dirname "$PY")")} TOKENIZER="$TOK" URL="http://127.0.0.1:$PORT" \
    MODEL="$MODEL" CONC="$CONC" DURATION="$DUR" WARMUP_PER_LANE=${WARMUP_PER_LANE:-10} \
    setsid "$SHARED/tools/agentx-oracle/run_oracle.sh" "$TRACES" "$OUT/run/harness" \
    >"$OUT/harness.log" 2>&1 &
  HP=$!
  PEAK=0
  PEAK_ANON=0
  BIG=0
  declare -A CPU_OF=()
  KILLED=0
  T0=$(date +%s)
  while kill -0 "$HP" 2>/dev/null; do
    SNAP=$(ps -o pid=,times=,rss= -s "$HP" || true)
    # per process: the largest cumulative CPU seconds seen (processes its parent never reaps
    # are missing from /usr/bin/time's totals) and the largest RSS of one process
    while read -r pid secs rss; do
      [ -n "$pid" ] || continue
      [ "${CPU_OF[$pid]:-0}" -lt "$secs" ] && CPU_OF[$pid]=$secs
      [ "$rss" -gt "$BIG" ] && BIG=$rss
    done <<<"$SNAP"
    TOT=$(awk '{s += $3} END {print s + 0}' <<<"$SNAP")
    [ "$TOT" -gt "$PEAK" ] && PEAK=$TOT
    # anonymous memory alone (no file pages shared between its processes counted twice)
    ANON=$(for p in $(ps -o pid= -s "$HP"); do cat "/proc/$p/status" 2>/dev/null; done |
      awk '/^RssAnon/{s += $2} END {print s + 0}')
    [ "$ANON" -gt "$PEAK_ANON" ] && PEAK_ANON=$ANON
    if [ "$TOT" -ge "$CAP_KB" ] || [ $(($(date +%s) - T0)) -ge "$LIMIT_S" ]; then
      KILLED=$TOT
      # shellcheck disable=SC2046
      kill -KILL $(ps -o pid= -s "$HP") 2>/dev/null || true
      break
    fi
    sleep 0.5
  done
  set +e
  wait "$HP"
  RC=$?
  set -e
  EXP="$OUT/run/harness/profile_export.jsonl"
  COUNTS=$("$PY" - "$EXP" <<'PYEOF'
import json, sys
w = p = e = 0
try:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        ph = r.get("metadata", {}).get("benchmark_phase")
        w += ph == "warmup"
        p += ph == "profiling"
        e += bool(r.get("error"))
except FileNotFoundError:
    pass
print(w, p, e)
PYEOF
)
  read -r WARM PROF ERR <<<"$COUNTS"
  SAMPLED_CPU=0
  for pid in "${!CPU_OF[@]}"; do SAMPLED_CPU=$((SAMPLED_CPU + CPU_OF[$pid])); done
  TX="$OUT/run/harness/stderr.log"
  USER=$(awk -F': ' '/User time/{print $2}' "$TX" 2>/dev/null)
  SYS=$(awk -F': ' '/System time/{print $2}' "$TX" 2>/dev/null)
  RSS=$(awk -F': ' '/Maximum resident/{print $2}' "$TX" 2>/dev/null)
  WALL=$(awk -F': ' '/Elapsed \(wall/{print $2}' "$TX" 2>/dev/null)
  if [ "$KILLED" != 0 ]; then
    echo "harness conc $CONC: did not complete (killed at total RSS $((KILLED / 1024)) MiB, anonymous $((PEAK_ANON / 1024)) MiB, after $(($(date +%s) - T0)) s; cap ${RSS_CAP:-10G}, limit ${LIMIT_S} s); exported so far: $WARM warmup + $PROF profiling"
  else
    awk -v c="$CONC" -v w="$WARM" -v p="$PROF" -v u="${USER:-0}" -v s="${SYS:-0}" -v r="${RSS:-0}" \
      -v wall="$WALL" -v rc="$RC" -v peak="$PEAK" -v anon="$PEAK_ANON" -v big="$BIG" \
      -v sc="$SAMPLED_CPU" 'BEGIN{
      n = w + p; cpu = u + s;
      printf "harness conc %d: exit %d, requests %d (%d warmup + %d profiling), wall %s, CPU %.1f s (user %.1f + sys %.1f), %.2f CPU-s per 1,000 requests, peak RSS %.0f MiB (largest process); sampled every 0.5 s: CPU %d s (%.2f per 1,000), largest process %.0f MiB, all processes together %.0f MiB (anonymous %.0f MiB)\n",
        c, rc, n, w, p, wall, cpu, u, s, (n ? cpu * 1000 / n : 0), r / 1024, sc, (n ? sc * 1000 / n : 0), big / 1024, peak / 1024, anon / 1024 }'
  fi
  echo "errors $ERR"
  tail -1 "$OUT/mock.log" || true
  echo "files: $OUT"
  exit 0
fi
PRE=()
if [ -n "${AS_LIMIT:-}" ]; then PRE=(prlimit "--as=$(numfmt --from=iec "$AS_LIMIT")"); fi
set +e
timeout -s INT "$LIMIT_S" /usr/bin/time -v -o "$OUT/time.txt" "${PRE[@]}" "$BIN" sweep \
  --scenario agentx --endpoint "http://127.0.0.1:$PORT" --model "$MODEL" --tokenizer "$TOK" \
  --traces "$TRACES" --conc "$CONC" --duration "$DUR" --no-store --out "$OUT/run" \
  >"$OUT/servebench.log" 2>&1
RC=$?
set -e
REC=$(find "$OUT/run" -name agentx_records.jsonl | head -1)
WARM=$(grep -c '"phase":"warmup"' "$REC" || true)
PROF=$(grep -c '"phase":"profiling"' "$REC" || true)
USER=$(awk -F': ' '/User time/{print $2}' "$OUT/time.txt")
SYS=$(awk -F': ' '/System time/{print $2}' "$OUT/time.txt")
RSS=$(awk -F': ' '/Maximum resident/{print $2}' "$OUT/time.txt")
WALL=$(awk -F': ' '/Elapsed \(wall/{print $2}' "$OUT/time.txt")
awk -v c="$CONC" -v w="$WARM" -v p="$PROF" -v u="$USER" -v s="$SYS" -v r="$RSS" -v wall="$WALL" -v rc="$RC" 'BEGIN{
  n = w + p; cpu = u + s;
  printf "conc %d: exit %d, requests %d (%d warmup + %d profiling), wall %s, CPU %.1f s (user %.1f + sys %.1f), %.2f CPU-s per 1,000 requests, peak RSS %.0f MiB\n",
    c, rc, n, w, p, wall, cpu, u, s, (n ? cpu * 1000 / n : 0), r / 1024 }'
ERR=$(grep -c '"error":"' "$REC" || true)
OVF=$(grep -c '"context_overflow":true' "$REC" || true)
echo "errors $ERR (context overflows $OVF)"
tail -1 "$OUT/mock.log" || true
echo "files: $OUT"
