#!/usr/bin/env bash
# OCI registry for the image-resolution tests: Debian's reference registry (`docker-registry`,
# distribution v2) on 127.0.0.1, plain HTTP, no auth, storage in a temp dir; plus `skopeo`, which
# the tests use to push a multi-platform OCI index they build. Idempotent: reuses a registry that
# already answers on the port. Prints the env export on stdout; logs go to stderr.
#
#   SERVEBENCH_REGISTRY_PORT   port (default 5055)
#   SERVEBENCH_REGISTRY_ROOT   state dir (default /tmp/servebench-registry)
set -euo pipefail
port="${SERVEBENCH_REGISTRY_PORT:-5055}"
root="${SERVEBENCH_REGISTRY_ROOT:-/tmp/servebench-registry}"

need=()
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
command -v skopeo >/dev/null 2>&1 || need+=(skopeo)
if [ "${#need[@]}" -gt 0 ]; then
  echo "[registry] installing ${need[*]}" >&2
  sudo_=""
  [ "$(id -u)" -ne 0 ] && sudo_="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

up() { curl -sf -o /dev/null "http://127.0.0.1:$port/v2/"; }

if ! up; then
  mkdir -p "$root/data"
  cat > "$root/config.yml" <<YAML
version: 0.1
log:
  level: warn
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: $root/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
YAML
  echo "[registry] starting docker-registry on 127.0.0.1:$port (state in $root)" >&2
  nohup docker-registry serve "$root/config.yml" >"$root/registry.log" 2>&1 &
  echo $! > "$root/registry.pid"
  for _ in $(seq 1 50); do
    up && break
    sleep 0.2
  done
  if ! up; then
    echo "[registry] docker-registry did not answer on 127.0.0.1:$port; log:" >&2
    tail -20 "$root/registry.log" >&2 || true
    exit 1
  fi
fi
echo "[registry] ready: http://127.0.0.1:$port/v2/" >&2
echo "export SERVEBENCH_REGISTRY=127.0.0.1:$port"
