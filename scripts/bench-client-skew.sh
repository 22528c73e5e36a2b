#!/usr/bin/env bash
# bench-client-skew.sh — is the client ever the bottleneck? (issue 21 target 3)
#
# Per concurrency: a paced `servebench sim --emission-log` (its own process, pinned to
# $SK_SIM_CPUS) and `servebench bench` (pinned to $SK_CLIENT_CPUS, one tokio worker per CPU).
# Each measured record is joined to the simulator's line for the same response id; the
# client-side delay is  skew = client TTFT − server TTFT  =  ttft_ms − (first_token_ns −
# received_ns)/1e6 : the request's way in (write → the server's parsed headers) plus the
# first token's way out (written to the server's socket → parsed by the client). A client that
# falls behind its sockets shows up here first. Target: p50 < 1 ms, p99 < 5 ms at every
# concurrency. `first_token_ns` is taken when the socket write carrying the first token returned
# (since 20b3488; before, when hyper pulled the frame: `first_token_frame_ns` now).
#
# The skew splits three ways with the simulator's kernel receive stamp `request_arrived_ns`
# (Linux SO_TIMESTAMPNS). The two processes' clocks are aligned by off = min over requests of
# (request_arrived_ns − t0_ns) (the fastest way in, a few µs on loopback), then
#   way in      = request_arrived_ns − off − t0_ns        (client write → server kernel)
#   server wait = received_ns − request_arrived_ns        (server: its read, accept, parse)
#   way out     = t0_ns + ttft − (first_token_ns − off)   (server socket → client parsed)
# and skew = way in + server wait + way out exactly. The client's part = way in + way out
# (its own PASS/FAIL against the same bounds); server wait is server time the skew counts.
# Requests whose bytes came without a kernel stamp are left out of the split (the count is
# shown; seen: 0–7 % of a run, all in one ~10 ms window, until b921496 set the stamp flag on the
# listener as well: the kernel's global switch went off whenever the last stamped socket closed).
#
# Prints per concurrency: requests joined, client worker threads (the client's own line), the
# client's CPU use (user+sys over wall: > 1.0 means more than one core), peak requests in flight,
# token events/s, server TTFT p50, skew p50/p99/max, PASS/FAIL; then the split (p50 / p99) and
# the first token's frame → socket gap; "n/a" where the simulator's log lacks the fields (an
# older binary).
#
# Usage: scripts/bench-client-skew.sh [CONC ...]          (default: 64 512 4096)
# Environment: SK_BIN (target/release/servebench), SK_SIM_BIN (the simulator's binary; default
# SK_BIN: an older client can be measured against the newer simulator's stamps), SK_TOKENIZER (dir with tokenizer.json;
# default $SERVEBENCH_REAL_ENGINE_MODEL_DIR or /tmp/real-engine/model), SK_CLIENT_CPUS (0-3),
# SK_SIM_CPUS (8-15), SK_SPEEDUP (10: the simulator's modelled H200 runs 10× faster than real
# time), SK_ISL (128), SK_OSL (256), SK_WAVES (2: requests = waves × conc, at least 256),
# SK_WARMUPS (bench's default, 2 × conc: the measured requests run on warm connections, as in
# every `bench`/`sweep` point), SK_OUT (target/bench-client-skew/<UTC>).
#
# The warmup requests are joined too and shown as "cold" columns: their first wave opens every
# connection at once, and the server's accept queue (kernel backlog → the simulator's accept
# loop → its parsed headers) lies between the client's write and `received_ns`, so their skew
# holds server-side connection set-up as well as the client's delay.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONCS=("$@"); [[ ${#CONCS[@]} -gt 0 ]] || CONCS=(64 512 4096)
BIN=${SK_BIN:-target/release/servebench}
SIMBIN=${SK_SIM_BIN:-$BIN}
TOK=${SK_TOKENIZER:-${SERVEBENCH_REAL_ENGINE_MODEL_DIR:-/tmp/real-engine/model}}
CC=${SK_CLIENT_CPUS:-0-3}; SC=${SK_SIM_CPUS:-8-15}; SPEEDUP=${SK_SPEEDUP:-10}
ISL=${SK_ISL:-128}; OSL=${SK_OSL:-256}; WAVES=${SK_WAVES:-2}
WARM=(); [[ -n ${SK_WARMUPS:-} ]] && WARM=(--warmups "$SK_WARMUPS")
# The simulator counts prompt words, not tokens, unless SK_SIM_TOKENIZER=1: its handler runs
# the HF tokenizer (~0.3 ms a prompt) on its async workers, and at conc 4,096 that delays other
# connections' parsed headers (received_ns) — server time the skew would count. The point is
# then INVALID (prompt length), which does not matter here.
SIMTOK=(); [[ ${SK_SIM_TOKENIZER:-0} == 1 ]] && SIMTOK=(--tokenizer "$TOK")
OUT=${SK_OUT:-target/bench-client-skew/$(date -u +%Y%m%dT%H%M%SZ)}
die() { echo "bench-client-skew: $*" >&2; exit 2; }
[[ -x $BIN ]] || die "$BIN missing (cargo build --release -p servebench)"
[[ -x $SIMBIN ]] || die "$SIMBIN missing (SK_SIM_BIN)"
[[ -f $TOK/tokenizer.json ]] || die "no tokenizer.json in $TOK (set SK_TOKENIZER)"
mkdir -p "$OUT"
echo "binary $(sha256sum "$BIN" | cut -c1-12), sim binary $(sha256sum "$SIMBIN" | cut -c1-12); client CPUs $CC, sim CPUs $SC ($(nproc) CPUs); sim --speedup $SPEEDUP; ISL $ISL OSL $OSL; load$(uptime | sed 's/.*load average://')" | tee "$OUT/env.txt"
SIM=
trap '[[ -n $SIM ]] && kill $SIM 2>/dev/null; true' EXIT
for conc in "${CONCS[@]}"; do
  d=$OUT/c$conc; rm -rf "$d"; mkdir -p "$d"
  n=$((conc * WAVES)); ((n >= 256)) || n=256
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  taskset -c "$SC" "$SIMBIN" sim --speedup "$SPEEDUP" "${SIMTOK[@]}" --port "$port" \
    --emission-log "$d/emission.jsonl" >"$d/sim.log" 2>&1 & SIM=$!
  for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null && break; sleep 0.1; done
  ulimit -n 65536 2>/dev/null || true
  /usr/bin/time -f '%U %S %e' -o "$d/time.txt" taskset -c "$CC" "$BIN" bench \
    --endpoint "http://127.0.0.1:$port" --model Qwen/Qwen3-8B --tokenizer "$TOK" --conc "$conc" \
    --isl "$ISL" --osl "$OSL" --range-ratio 0.8 --num-prompts "$n" "${WARM[@]}" --no-store \
    --out "$d/out" >"$d/client.log" 2>&1 || true
  find "$d/out" -name records.jsonl | grep -q . || die "conc $conc: no records.jsonl: $(tail -3 "$d/client.log")"
  # The simulator writes its emission log every 20 ms and all of it on a graceful stop (Ctrl-C).
  sleep 0.2; kill -INT "$SIM" 2>/dev/null
  for _ in $(seq 30); do kill -0 "$SIM" 2>/dev/null || break; sleep 0.1; done
  kill "$SIM" 2>/dev/null || true; wait "$SIM" 2>/dev/null || true; SIM=
done
python3 - "$OUT" "${CONCS[@]}" <<'PY'
import glob, json, re, sys
out, concs = sys.argv[1], sys.argv[2:]
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))] if xs else float("nan")
def f(x):
    return "n/a" if x != x else f"{x:.3f}"
def pq(xs):
    return f"{f(q(xs, .5))} / {f(q(xs, .99))}"
ok_all = True
main, split = [], []
for c in concs:
    d = f"{out}/c{c}"
    em = {}
    for l in open(f"{d}/emission.jsonl"):
        r = json.loads(l)
        if r.get("first_token_ns") is not None:
            em[r["id"]] = r
    allrecs = [json.loads(l) for l in open(glob.glob(f"{d}/out/**/records.jsonl", recursive=True)[0])]
    allrecs = [r for r in allrecs if r["success"] and r.get("ttft_ms") is not None]
    recs = [r for r in allrecs if r["phase"] == "measured"]
    cold = [r["ttft_ms"] - (em[r["response_id"]]["first_token_ns"] - em[r["response_id"]]["received_ns"]) / 1e6
            for r in allrecs if r["phase"] == "warmup" and r.get("response_id") in em]
    joined = [(r, em[r["response_id"]]) for r in recs if r.get("response_id") in em]
    skew = [r["ttft_ms"] - (e["first_token_ns"] - e["received_ns"]) / 1e6 for r, e in joined]
    srv = [(e["first_token_ns"] - e["received_ns"]) / 1e6 for r, e in joined]
    events = sum(r["token_events"] for r, _ in joined)
    # The split (needs request_arrived_ns): the two clocks are aligned by the smallest
    # (arrived − t0) over all joined requests, warmups included: the fastest way in.
    stamped = [(r, e) for r, e in ((r, em.get(r.get("response_id"))) for r in allrecs)
               if e is not None and e.get("request_arrived_ns") is not None]
    win, wait, wout, wire = [], [], [], []
    if stamped:
        off = min(e["request_arrived_ns"] - r["t0_ns"] for r, e in stamped)
        for r, e in joined:
            if e.get("request_arrived_ns") is None:
                continue
            win.append((e["request_arrived_ns"] - off - r["t0_ns"]) / 1e6)
            wait.append((e["received_ns"] - e["request_arrived_ns"]) / 1e6)
            wout.append((r["t0_ns"] + r["ttft_ms"] * 1e6 - (e["first_token_ns"] - off)) / 1e6)
    for r, e in joined:
        if e.get("first_token_frame_ns") is not None:
            wire.append((e["first_token_ns"] - e["first_token_frame_ns"]) / 1e6)
    client = [a + b for a, b in zip(win, wout)]
    log = open(f"{d}/client.log").read()
    thr = re.search(r"client: (\d+) worker thread", log)
    peak = re.search(r"peak (\d+) in flight", log)
    u, s_, wall = map(float, open(f"{d}/time.txt").read().split()[-3:])
    t0 = min(r["t0_ns"] for r in recs); t1 = max(r["end_ns"] for r in recs)
    verdict = "PASS" if skew and q(skew, .5) < 1 and q(skew, .99) < 5 and len(skew) == len(recs) else "FAIL"
    cv = "n/a" if not client else ("PASS" if q(client, .5) < 1 and q(client, .99) < 5 else "FAIL")
    ok_all &= verdict == "PASS"
    main.append(f"| {c} | {len(skew)}/{len(recs)} | {thr.group(1) if thr else '?'} | {(u + s_) / wall:.2f} | "
                f"{peak.group(1) if peak else '?'} | {events / ((t1 - t0) / 1e9):,.0f} | {q(srv, .5):.1f} | "
                f"{q(skew, .5):.3f} | {q(skew, .99):.3f} | {max(skew):.3f} | {verdict} | "
                f"{q(cold, .5):.3f} / {q(cold, .99):.3f} |")
    split.append(f"| {c} | {len(win)}/{len(joined)} | {pq(win)} | {pq(wait)} | {f(max(wait) if wait else float('nan'))} | {pq(wout)} | "
                 f"{f(max(wout) if wout else float('nan'))} | {pq(client)} | {cv} | {pq(wire)} |")
print("| conc | joined | client threads | client CPU (cores) | peak in flight | token events/s | server TTFT p50 ms | skew p50 ms | skew p99 ms | skew max ms | verdict | cold (warmup) skew p50 / p99 ms |")
print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
print("\n".join(main))
print()
print("skew = way in + server wait + way out (ms, p50 / p99; measured requests):")
print("| conc | with a kernel stamp | way in: client write → server kernel | server wait: kernel → parsed head | server wait max | way out: server socket write → client parsed | way out max | client's part (in + out) | client's part verdict | first token frame → socket |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
print("\n".join(split))
print("all PASS" if ok_all else "some FAIL")
PY
echo "files: $OUT"
