#!/usr/bin/env bash
# bench-client.sh — servebench's client ceiling, measured, next to AIPerf on the same server and
# workload, in one invocation.
#
# What it does (docs/benchmarks-client.md has the method and the numbers):
#  1. builds the release binary once and snapshots it into the run directory;
#  2. per client run, starts `servebench sim --zero-delay` as a SEPARATE process pinned to
#     $BC_SIM_CPUS (fresh for every run, with its own emission log), so the server's memory and
#     CPU are never counted as the client's;
#  3. runs the client under scripts/bench_client/procmon.py (CPU and RSS of the client's whole
#     process tree, sampled every 20 ms; exact totals from wait4), pinned with `taskset` to
#     $BC_CLIENT_CPUS (one core by default → "token events/s on one core");
#  4. for every scenario marked "both", runs AIPerf with the same concurrency, ISL/OSL (same
#     tokenizer, InferenceX/sglang range [⌊L·0.8⌋, L]), request count and warmup count;
#  5. prints the side-by-side table, `servebench / aiperf` ratio lines, the server cross-check
#     (simulator emission log vs the client's records) and the two targets (≥ 200,000 token
#     events/s on one core; < 300 MB at 10,000 streams); writes report.md and report.json.
#
# Usage: scripts/bench-client.sh [SCENARIO ...]   (default: core c1k c10k ceiling c1k-long c10k-long)
#   scenarios (name: conc, ISL/OSL, requests, warmups, clients):
#     core       64,    128/1024,   384,  64, servebench+aiperf   one-core ceiling, side by side
#     c1k        1000,  128/256,   1000,   0, servebench+aiperf   1,000 streams
#     c10k       10000, 128/64,   10000,   0, servebench+aiperf   10,000 streams
#     ceiling    64,    128/1024,  4096,  64, servebench         longer window for the per-core figure
#     c10k-long  10000, 128/1024, 10000,   0, servebench         10,000 streams, long outputs (memory)
#     c10k-1k1k  10000, 1024/1024,10000,   0, servebench         the issue's 1k/1k at 10,000 (slow: ~70 s dataset)
#     c1k-long   1000,  128/4096,  1000,   0, servebench         1,000 streams, very long outputs (memory)
# Environment:
#   BC_OUT          run directory (default target/bench-client/<UTC timestamp>)
#   BC_TOKENIZER    tokenizer dir for both clients (default $SERVEBENCH_REAL_ENGINE_MODEL_DIR or
#                   /tmp/real-engine/model); the simulator itself counts one token per word
#   BC_AIPERF       AIPerf executable (default /tmp/refclient/bin/aiperf, else `aiperf` on PATH);
#                   BC_AIPERF=none skips AIPerf
#   BC_CLIENT_CPUS  CPU list for the clients (default 0); BC_SIM_CPUS for the simulator (default 1)
#   BC_NO_BUILD=1   use target/release/servebench as it is
#   BC_BIN=PATH     measure this servebench binary instead (no build; e.g. a patched client)
#   BC_PARSER_BENCH=0  skip the SSE parser micro-benchmark (crates/client/benches/sse_parse.rs,
#                   criterion, pinned to $BC_CLIENT_CPUS; on by default when that bench exists)
# Needs: Linux /proc, taskset, curl, python3 (stdlib only), `ulimit -n` ≥ 12,000 for 10k streams.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
HERE=$ROOT/scripts/bench_client
OUT=${BC_OUT:-$ROOT/target/bench-client/$(date -u +%Y%m%dT%H%M%SZ)}
TOKENIZER=${BC_TOKENIZER:-${SERVEBENCH_REAL_ENGINE_MODEL_DIR:-/tmp/real-engine/model}}
CLIENT_CPUS=${BC_CLIENT_CPUS:-0}
SIM_CPUS=${BC_SIM_CPUS:-1}
MODEL=Qwen/Qwen3-8B   # the simulator's default served model
if [[ -n "${BC_AIPERF:-}" ]]; then AIPERF=$BC_AIPERF
elif [[ -x /tmp/refclient/bin/aiperf ]]; then AIPERF=/tmp/refclient/bin/aiperf
else AIPERF=$(command -v aiperf || echo none); fi

die() { echo "bench-client: $*" >&2; exit 2; }
log() { echo "bench-client: $*" >&2; }

declare -A SC=(
  [core]="64 128 1024 384 64 both"
  [c1k]="1000 128 256 1000 0 both"
  [c10k]="10000 128 64 10000 0 both"
  [ceiling]="64 128 1024 4096 64 servebench"
  [c10k-long]="10000 128 1024 10000 0 servebench"
  [c10k-1k1k]="10000 1024 1024 10000 0 servebench"
  [c1k-long]="1000 128 4096 1000 0 servebench"
)
SCENARIOS=("$@")
[[ ${#SCENARIOS[@]} -gt 0 ]] || SCENARIOS=(core c1k c10k ceiling c1k-long c10k-long)
for s in "${SCENARIOS[@]}"; do [[ -n "${SC[$s]:-}" ]] || die "unknown scenario '$s' (known: ${!SC[*]})"; done

[[ -f "$TOKENIZER/tokenizer.json" ]] || die "no tokenizer.json in $TOKENIZER (set BC_TOKENIZER; ../shared/tools/real-engine/setup.sh makes one)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
command -v curl >/dev/null || die "curl not found"
if [[ "$AIPERF" != none ]]; then
  [[ -x "$AIPERF" ]] || die "AIPerf not found at '$AIPERF' (pip install aiperf, or BC_AIPERF=none)"
fi

# file descriptors: every client connection (and, in its own process, every server connection)
max_conc=0
for s in "${SCENARIOS[@]}"; do read -r c _ <<<"${SC[$s]}"; if (( c > max_conc )); then max_conc=$c; fi; done
need=$(( max_conc + 2000 ))
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
have=$(ulimit -n)
if [[ "$have" != unlimited && "$have" -lt "$need" ]]; then
  die "ulimit -n is $have (hard $(ulimit -Hn)); conc $max_conc needs at least $need open files per process"
fi

mkdir -p "$OUT/bin"
SRC_BIN=${BC_BIN:-target/release/servebench}
if [[ -z "${BC_BIN:-}" && "${BC_NO_BUILD:-0}" != 1 ]]; then
  log "building the release binary (cargo build --release -p servebench)"
  cargo build --release -p servebench >&2
fi
[[ -x "$SRC_BIN" ]] || die "$SRC_BIN missing (build failed?)"
cp "$SRC_BIN" "$OUT/bin/servebench"   # a snapshot: later builds in the shared target/ cannot swap it mid-run
BIN=$OUT/bin/servebench
{
  echo "binary: $SRC_BIN ($(sha256sum "$SRC_BIN" | cut -c1-12))"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "working tree changes under crates/: $(git status --porcelain -- crates 2>/dev/null | wc -l) files"
  echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "clients pinned to CPU $CLIENT_CPUS, simulator to CPU $SIM_CPUS; ulimit -n $(ulimit -n)"
  echo "aiperf: $([[ $AIPERF != none ]] && "$AIPERF" --version 2>/dev/null | tail -1 || echo skipped)"
  echo "tokenizer: $TOKENIZER"
} | tee "$OUT/env.txt" >&2

# system-wide TCP counters: listen-queue overflows at the server show up as SYN retransmits and
# long connects on the client side (a server limit, not the client's)
tcp_counters() {
  python3 - <<'PY'
import json
rows = open("/proc/net/netstat").read().splitlines()
vals = {}
for h, v in zip(rows[::2], rows[1::2]):
    p, names = h.split(":")[0], h.split()[1:]
    vals.update({f"{p}.{n}": int(x) for n, x in zip(names, v.split()[1:])})
print(json.dumps({k: vals.get("TcpExt." + k, 0) for k in ("ListenOverflows", "ListenDrops", "TCPSynRetrans")}))
PY
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

SIM_PID=
stop_sim() {
  if [[ -n "$SIM_PID" ]] && kill -0 "$SIM_PID" 2>/dev/null; then
    kill -INT "$SIM_PID" 2>/dev/null || true      # Ctrl-C: the simulator flushes its emission log
    for _ in $(seq 50); do kill -0 "$SIM_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SIM_PID" 2>/dev/null && kill -KILL "$SIM_PID" 2>/dev/null || true
    wait "$SIM_PID" 2>/dev/null || true
  fi
  SIM_PID=
}
trap stop_sim EXIT

start_sim() { # dir → sets SIM_PID, URL
  local dir=$1 port
  port=$(free_port)
  taskset -c "$SIM_CPUS" "$BIN" sim --zero-delay --port "$port" --emission-log "$dir/emission.jsonl" \
    >"$dir/sim.log" 2>&1 &
  SIM_PID=$!
  URL=http://127.0.0.1:$port
  for _ in $(seq 100); do
    curl -fsS -o /dev/null "$URL/health" 2>/dev/null && return 0
    kill -0 "$SIM_PID" 2>/dev/null || die "the simulator exited: $(tail -3 "$dir/sim.log")"
    sleep 0.1
  done
  die "the simulator at $URL did not answer /health within 10 s"
}

run_client() { # scenario client conc isl osl n warmups
  local sc=$1 client=$2 conc=$3 isl=$4 osl=$5 n=$6 w=$7
  local dir=$OUT/runs/$sc-$client rc=0 up
  mkdir -p "$dir"
  start_sim "$dir"
  up=$(uptime)
  local tcp0 tcp1
  tcp0=$(tcp_counters)
  log "$sc / $client: conc $conc, ISL/OSL $isl/$osl, $n requests (+$w warmup) — load:${up##*load average:}"
  local cmd
  if [[ $client == servebench ]]; then
    cmd=("$BIN" bench --endpoint "$URL" --model "$MODEL" --tokenizer "$TOKENIZER" --conc "$conc"
         --isl "$isl" --osl "$osl" --range-ratio 0.8 --num-prompts "$n" --warmups "$w" --out "$dir/out")
    # files only: never record benchmark-of-the-benchmark runs in a results store
    if "$BIN" bench --help 2>/dev/null | grep -q -- '--no-store'; then cmd+=(--no-store); fi
  else
    cmd=("$AIPERF" profile --model "$MODEL" --url "$URL" --endpoint-type completions --streaming
         --tokenizer "$TOKENIZER" --concurrency "$conc" --request-count "$n"
         --isl "$isl" --osl "$osl" --random-range-ratio 0.8 --random-corpus-style sglang
         --extra-inputs ignore_eos:true --use-server-token-count --random-seed 0
         --ui none --no-server-metrics --no-gpu-telemetry --output-artifact-dir "$dir/out")
    if (( w > 0 )); then cmd+=(--warmup-request-count "$w"); fi
  fi
  python3 "$HERE/procmon.py" --out "$dir/mon.json" --watch "sim=$SIM_PID" -- \
    taskset -c "$CLIENT_CPUS" "${cmd[@]}" >"$dir/client.log" 2>&1 || rc=$?
  tcp1=$(tcp_counters)
  stop_sim
  [[ $rc == 0 ]] || log "$sc / $client exited with $rc (see $dir/client.log)"
  python3 - "$OUT/runs.jsonl" <<EOF
import json, sys
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"scenario": "$sc", "client": "$client", "conc": $conc, "isl": $isl, "osl": $osl,
        "num_prompts": $n, "warmups": $w, "client_cpus": "$CLIENT_CPUS", "out": "$dir/out",
        "mon": "$dir/mon.json", "emission": "$dir/emission.jsonl", "uptime": """$up""".strip(),
        "rc": $rc, "tcp_before": $tcp0, "tcp_after": $tcp1}) + "\n")
EOF
}

: >"$OUT/runs.jsonl"
for sc in "${SCENARIOS[@]}"; do
  read -r conc isl osl n w who <<<"${SC[$sc]}"
  run_client "$sc" servebench "$conc" "$isl" "$osl" "$n" "$w"
  if [[ $who == both && "$AIPERF" != none ]]; then
    run_client "$sc" aiperf "$conc" "$isl" "$osl" "$n" "$w"
  fi
done

PARSER_MD=
if [[ "${BC_PARSER_BENCH:-1}" != 0 && -f crates/client/benches/sse_parse.rs ]]; then
  log "SSE parser micro-benchmark (cargo bench -p servebench-client --bench sse_parse)"
  cargo bench -p servebench-client --bench sse_parse --no-run >&2
  up=$(uptime)
  if taskset -c "$CLIENT_CPUS" cargo bench -p servebench-client --bench sse_parse -- \
       --warm-up-time 1 --measurement-time 3 --noplot >"$OUT/parser-bench.txt" 2>&1; then
    PARSER_MD=$(python3 - "$OUT/parser-bench.txt" "$up" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rows = re.findall(r"^(parse_stream/\S+)\s*\n\s*time:\s*\[([^\]]+)\]\s*\n\s*thrpt:\s*\[([^\]]+)\]", text, re.M)
print("SSE parser micro-benchmark (criterion, crates/client/benches/sse_parse.rs: framing + chunk scan + stream rules, 4,096 token events per iteration; pinned; load:" + sys.argv[2].split("load average:")[-1] + ")")
print("| bench | time per 4,096 events (low / estimate / high) | token events/s (low / estimate / high) |")
print("|---|---|---|")
for name, t, thr in rows:
    print(f"| {name} | {t} | {thr} |")
PY
)
  else
    PARSER_MD="SSE parser micro-benchmark failed: see $OUT/parser-bench.txt"
  fi
fi

echo
echo "# servebench client vs AIPerf — $(date -u +%FT%TZ), $(cat "$OUT/env.txt" | sed -n 3p)"
python3 "$HERE/report.py" "$OUT"
if [[ -n "$PARSER_MD" ]]; then echo; echo "$PARSER_MD"; echo; echo "$PARSER_MD" >>"$OUT/report.md"; fi
echo "files: $OUT (report.md, report.json, runs/<scenario>-<client>/{client.log,mon.json,emission.jsonl,out/})"
