#!/usr/bin/env bash
# Benchmark: `servebench triage` on a 200 MB synthetic job log (CI-timestamped noise — INFO,
# WARNING, DEBUG, NCCL INFO, progress bars, set -x echoes, plain prints — plus one real error at
# 99 % of the file and an exit-code wrapper after it). Prints wall time, throughput and peak RSS.
#
#   bash scripts/bench-triage.sh [SIZE_MB]      # default 200
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
size="${1:-200}"
cargo build --release -q -p servebench-triage --example triage_bench
bin="${CARGO_TARGET_DIR:-$root/target}/release/examples/triage_bench"
log="$(mktemp -d)/synthetic-${size}mb.log"
"$bin" gen "$log" "$size"
# Warm the page cache once, then measure (the triage process alone).
cat "$log" > /dev/null
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f "time: %e s wall, %U s user, peak RSS %M kB" "$bin" run "$log"
else
  "$bin" run "$log"
fi
rm -f "$log"
