#!/usr/bin/env bash
# The whole-catalog coverage run (docs/benchmarks.md §8) on a machine with idle CPUs, e.g. the
# device machine: a stripped release binary in .gpu/servebench.gz, the shared data it reads in
# .gpu/shared/data/{inferencex,agentx-traces,gsm8k} (both ignored, sent with `carry: [".gpu"]`).
# Writes coverage.txt / coverage.err / time.txt / env.txt under $OUT (default ./cov-out).
set -u
OUT=${OUT:-$PWD/cov-out}
JOBS=${JOBS:-12}
here=$PWD
mkdir -p "$OUT" /tmp/cov
# recipes run under bubblewrap; a machine without it gets the copy carried in .gpu/
if ! command -v bwrap >/dev/null && [ -x .gpu/bwrap ]; then
  cp .gpu/bwrap /usr/local/bin/bwrap
  for l in .gpu/lib/*; do [ -e "/lib/x86_64-linux-gnu/$(basename "$l")" ] || cp "$l" /usr/local/lib/; done
  ldconfig 2>/dev/null
fi
gunzip -c .gpu/servebench.gz >/tmp/servebench && chmod +x /tmp/servebench
tar xzf .gpu/shared/data/inferencex/repo-843c6254f.tar.gz -C /tmp/cov
export SERVEBENCH_SHARED=$here/.gpu/shared
{ nproc; uname -a; for t in python3 bash curl jq sed awk bwrap git; do printf '%s: %s\n' "$t" "$(command -v $t)"; done; } >"$OUT/env.txt" 2>&1
cd /tmp/cov
TIMEFORMAT='wall %R s, user %U s, sys %S s'
{ time timeout -s INT 510 /tmp/servebench coverage \
  --catalog InferenceX/configs/nvidia-master.yaml InferenceX/configs/amd-master.yaml \
  --runners InferenceX/configs/runners.yaml --recipes InferenceX --jobs "$JOBS" \
  --out full --db full.db >"$OUT/coverage.txt" 2>"$OUT/coverage.err"; } 2>"$OUT/time.txt"
echo "rc=$?" >>"$OUT/coverage.txt"
cat "$OUT/time.txt"
tail -40 "$OUT/coverage.txt"
