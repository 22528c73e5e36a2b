#!/usr/bin/env bash
# AgentX replay client cost (issue 21 target 2): peak RSS and CPU-s per 1,000 requests of one
# `servebench sweep --scenario agentx` process against a mock engine in its own process.
#
#   scripts/bench-agentx-memory.sh BIN CONC [DURATION_S] [OUT_DIR]
#
# BIN: a servebench binary (release); CONC: lanes. The mock is scripts/agentx_fast_mock.py
# (no body held, 1 ms per output token as the oracle mock; MOCK=oracle uses the oracle's
# mock_server.py instead). Traces: $TRACES (default ../shared/data/agentx-traces), tokenizer:
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
if [ "${MOCK:-fast}" = oracle ]; then
  "$PY" "$SHARED/tools/agentx-oracle/mock_server.py" --port "$PORT" --model dsv4-mock \
    --log "$OUT/wire.jsonl" >"$OUT/mock.log" 2>&1 &
else
  "$PY" "$HERE/agentx_fast_mock.py" --port "$PORT" --model dsv4-mock >"$OUT/mock.log" 2>&1 &
fi
MOCK_PID=$!
trap 'kill $MOCK_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 0.2; done
PRE=()
if [ -n "${AS_LIMIT:-}" ]; then PRE=(prlimit "--as=$(numfmt --from=iec "$AS_LIMIT")"); fi
set +e
timeout -s INT "$LIMIT_S" /usr/bin/time -v -o "$OUT/time.txt" "${PRE[@]}" "$BIN" sweep \
  --scenario agentx --endpoint "http://127.0.0.1:$PORT" --model dsv4-mock --tokenizer "$TOK" \
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
tail -1 "$OUT/mock.log" || true
echo "files: $OUT"
