#!/usr/bin/env bash
# Prints the directory that must come first on PATH so the project runs on Node >= 22.18.
# Uses the machine's node when it is new enough; otherwise installs Node from the
# npm registry (the platform package that the npm package `node@24` itself installs)
# into the cache, once, and prints its bin directory. Prints nothing when no change is needed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# 22.18 is the first 22.x that runs .ts sources without a flag (type stripping), as the apps do.
machine_ok=0
if command -v node >/dev/null 2>&1; then
  machine_ok=$(node -p 'const [a, b] = process.versions.node.split(".").map(Number); +(a > 22 || (a === 22 && b >= 18))' 2>/dev/null || echo 0)
fi
if [ "$machine_ok" = 1 ] && [ -z "${MERIDIAN_FORCE_NODE:-}" ]; then exit 0; fi

install_node() {
  [ -x "$NODE_HOME/bin/node" ] && return 0
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) die "no Node build for $(uname -m)" ;;
  esac
  command -v npm >/dev/null || die "npm is needed to fetch Node $NODE_VERSION from the npm registry"
  log "installing Node $NODE_VERSION (node-linux-$arch) from the npm registry into $NODE_HOME (under a minute, once)"
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$NODE_VERSION" >/dev/null 2>"$tmp/err") \
    || die "npm pack node-linux-$arch@$NODE_VERSION failed: $(cat "$tmp/err")"
  rm -rf "$NODE_HOME.partial"; mkdir -p "$NODE_HOME.partial"
  tar -xzf "$tmp"/node-linux-*.tgz -C "$NODE_HOME.partial" --strip-components=1
  mv "$NODE_HOME.partial" "$NODE_HOME"
  rm -rf "$tmp"
}
with_cache_lock install_node
echo "$NODE_HOME/bin"
