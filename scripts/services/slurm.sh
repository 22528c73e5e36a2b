#!/usr/bin/env bash
# A real one-node Slurm cluster for `servebench run --executor slurm` tests: Debian slurm-wlm +
# munge, 8 fake GPUs, started by ../shared/tools/slurm/start-slurm.sh (idempotent: ~0.2 s when
# it is already up, ~10-25 s with the apt install the first time). Prints the env exports on
# stdout (scripts/test.sh evals them); logs go to stderr. Stop: ../shared/tools/slurm/stop-slurm.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
shared="${SERVEBENCH_SHARED:-$root/../shared}"
start="$shared/tools/slurm/start-slurm.sh"
if [ ! -f "$start" ]; then
  echo "error: $start not found (set SERVEBENCH_SHARED)" >&2
  exit 1
fi
bash "$start" >&2
# the default partition (marked with * by sinfo) and the GPUs the node advertises
partition="$(sinfo -h -o '%P' | sed -n 's/\*$//p' | head -n1)"
gres="$(sinfo -h -o '%G' | head -n1)"
if [ -z "$partition" ]; then
  echo "error: Slurm started but sinfo lists no default partition" >&2
  exit 1
fi
echo "[slurm.sh] partition $partition, $gres" >&2
echo "export SERVEBENCH_SLURM_PARTITION=$partition"
