#!/usr/bin/env bash
# issue 29 speed targets, one quiet measurement on the device machine (16 idle CPUs):
# B (whole bench process, 8k vs 128k tokenizer, scripts/bench-client-process.sh), the one AgentX
# point (900 s, conc 64, pinned to CPU 0), then A (the 33-point real config, run --simulate
# --recipes --jobs 2, pinned to CPUs 0,1). Runs in the repo root; inputs from .perfdev (carried):
#   .perfdev/servebench.gz  a stripped release build (gzip)
#   .perfdev/data.tgz       ix/ (the InferenceX checkout), traces/ (the AgentX traces), tok8k/ and tok128k/
#                           (optional: B is skipped without them)
#   .perfdev/bin/bwrap      bubblewrap (a wrapper setting LD_LIBRARY_PATH to .perfdev/lib, which holds
#                           bwrap.real and its libraries: the device image has none)
#   .perfdev/device.sh      this script; run there as `bash .perfdev/device.sh` (docs/benchmarks.md §9.4)
set -uo pipefail
P=$PWD/.perfdev; R=$OUT; REPO=$PWD; mkdir -p /tmp/pd
exec > >(tee "$R/device.log") 2>&1
echo "== env: $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
cd /tmp/pd && gunzip -c "$P/servebench.gz" > sb && chmod +x sb && tar xzf "$P/data.tgz" && ./sb --version | head -1
python3 - <<'PY'
import subprocess, time
t=time.time(); ps=[subprocess.Popen(["taskset","-c","0","python3","-c","import time\nt=time.process_time()\nwhile time.process_time()-t<1: pass"]) for _ in range(2)]
[p.wait() for p in ps]; print(f"== pinning check: two 1-CPU-s loops pinned to CPU 0 took {time.time()-t:.2f} s wall (2 s: taskset honoured)")
PY
measure() { # NAME CMD...: wall, CPU-s of the tree (cgroup v2 if writable, else rusage of waited children)
  local name=$1; shift; local cg=/sys/fs/cgroup/sbperf-$name t0 t1 cpu how
  t0=$(date +%s.%N)
  if mkdir "$cg" 2>/dev/null && [[ -f $cg/cpu.stat ]]; then
    ( echo $BASHPID > "$cg/cgroup.procs"; exec "$@" ) > "$R/$name.log" 2>&1
    cpu=$(awk '/usage_usec/{printf "%.2f", $2/1e6}' "$cg/cpu.stat"); how=cgroup-v2
  else
    python3 -c 'import resource,subprocess,sys; subprocess.run(sys.argv[1:]); r=resource.getrusage(resource.RUSAGE_CHILDREN); print(f"CPU {r.ru_utime+r.ru_stime:.2f}")' "$@" > "$R/$name.log" 2>&1
    cpu=$(tail -1 "$R/$name.log" | sed 's/CPU //'); how="rusage of waited descendants"
  fi
  t1=$(date +%s.%N)
  python3 -c "print(f'== $name: wall {$t1-$t0:.1f} s, CPU {$cpu} s ($how), load after $(cut -d' ' -f1-3 /proc/loadavg)')"
}
echo "== B: whole bench process, 8k vs 128k tokenizer, 2 rounds"
if [[ -d /tmp/pd/tok8k && -d /tmp/pd/tok128k ]]; then
  cd "$REPO" && BP_BIN=/tmp/pd/sb BP_OUT=/tmp/pd/bp BP_TOKENIZERS="8k=/tmp/pd/tok8k 128k=/tmp/pd/tok128k" timeout 170 bash scripts/bench-client-process.sh 2
else
  echo "   skipped: data.tgz holds no tok8k/ and tok128k/"
fi
cd /tmp/pd
echo "== one AgentX point: 900 s window, conc 64, 20 shared traces, pinned to CPU 0"
measure point900 taskset -c 0 ./sb sweep --scenario agentx --traces /tmp/pd/traces --conc 64 --duration 900 --no-store --out /tmp/pd/point900
grep -E "ok, .* failed in" "$R/point900.log"
echo "== A: the real config qwen3.5-fp8-b200-sglang-agentic-mtp, its recipes' 3,600 s window, run --jobs 2 pinned to CPUs 0,1"
export PATH=$P/bin:$PATH
if bwrap --dev-bind / / true; then echo "bwrap works"; else echo "bwrap FAILS here: the run refuses recipes of a checkout"; fi
cd /tmp/pd/ix && measure config timeout "${A_LIMIT:-300}" taskset -c 0,1 /tmp/pd/sb run qwen3.5-fp8-b200-sglang-agentic-mtp \
  --catalog configs/nvidia-master.yaml --runners configs/runners.yaml --recipes . --executor local --simulate --no-evals \
  --traces /tmp/pd/traces --jobs 2 --out /tmp/pd/run --db /tmp/pd/run.db
echo "points stored: $(grep -c ': stored' "$R/config.log")"; grep -E "^status|stored|error" "$R/config.log" | tail -4
