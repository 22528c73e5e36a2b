#!/usr/bin/env bash
# bubblewrap (`bwrap`) for `servebench run`/`coverage` on real InferenceX recipes: each point's
# recipe runs in a private mount namespace with its own copy of the checkout at /workspace
# (crates/runner/src/workspace.rs), as InferenceX's launchers mount it in the container. Never
# writes the host's /workspace. Works as root, and as another user where unprivileged user
# namespaces are allowed. Nothing to start. Prints the export on stdout; logs go to stderr.
set -euo pipefail
if ! command -v bwrap >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends bubblewrap >&2; then
    apt-get update -qq >&2
    apt-get install -y --no-install-recommends bubblewrap >&2
  fi
fi
bin="$(command -v bwrap)"
# the namespace must work here, not only be installed
probe="$(mktemp -d)"
if ! "$bin" --dev-bind / / --bind "$probe" /mnt -- true >&2; then
  rm -rf "$probe"
  echo "error: bwrap cannot make a mount namespace on this machine (user namespaces disabled?)" >&2
  exit 1
fi
rm -rf "$probe"
"$bin" --version >&2
echo "export SERVEBENCH_BWRAP=$bin"
