#!/usr/bin/env bash
# `make run`: starts the local stack (what is not already running), then api and ingest in
# the foreground with readable logs. Ctrl-C stops the apps and the services it started.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

# Whatever ends this script (an app that stops, a failed start, Ctrl-C, a kill), the EXIT trap
# stops the apps and the services this command started: nothing is left running behind it.
pids=()
stopped_before=$("$REPO_ROOT/deploy/local/stack.sh" status | awk '$2 == "stopped" {print $1}')
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ ${#pids[@]} -gt 0 ]; then
    echo; echo "stopping api and ingest"
    kill -TERM "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null
  fi
  # shellcheck disable=SC2086
  [ -n "$stopped_before" ] && "$REPO_ROOT/deploy/local/stack.sh" down $stopped_before
  exit "$status"
}
trap cleanup EXIT
# Ctrl-C or a kill is a stop that was asked for: a clean exit.
trap 'exit 0' INT TERM

"$REPO_ROOT/deploy/local/stack.sh" up || exit 1
eval "$("$REPO_ROOT/deploy/local/stack.sh" env)"
export MERIDIAN_DEV_LOGS="${MERIDIAN_DEV_LOGS:-true}"

node apps/ingest/src/main.ts & pids+=($!)
MALLOC_ARENA_MAX=2 node --max-semi-space-size=1 apps/api/src/main.ts & pids+=($!) # API_NODE_ENV, API_NODE_FLAGS (apps/api/src/node-flags.ts)

base="http://${MERIDIAN_API_HOST:-127.0.0.1}:${MERIDIAN_API_PORT:-8088}"
for _ in $(seq 1 120); do
  curl -fsS "$base/readyz" >/dev/null 2>&1 && break
  kill -0 "${pids[@]}" 2>/dev/null || break # an app stopped: the wait below ends at once
  sleep 0.5
done
cat <<MSG

  Meridian is running at $base
    readiness:      curl $base/readyz
    API contract:   $base/api/v1/openapi.json

  Next: create the first admin and its API key (in another shell, at the repo root):
    npx meridian users add admin --admin
  then:
    curl -H "Authorization: Bearer <API_KEY>" $base/api/v1/users

  Ctrl-C stops api, ingest and the services this command started.

MSG
# The first app to stop ends `make run` with its status; the EXIT trap stops the other.
wait -n "${pids[@]}"
status=$?
echo "an app stopped (exit status $status); stopping the rest" >&2
exit "$status"
