#!/usr/bin/env bash
# Headless Chromium for the HTML report test (crates/report/tests/chromium.rs): Debian's
# `chromium` package, plus a Latin and a CJK font so the English and the Chinese text render on
# a bare machine. Nothing to start: the test runs `chromium --headless` itself. Prints the
# export on stdout; logs go to stderr.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi wqy; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends chromium fonts-dejavu-core fonts-wqy-microhei >&2; then
    apt-get update -qq >&2
    apt-get install -y --no-install-recommends chromium fonts-dejavu-core fonts-wqy-microhei >&2
  fi
fi
bin="$(command -v chromium)"
"$bin" --version >&2 2>/dev/null || true
echo "export SERVEBENCH_CHROMIUM=$bin"
