#!/usr/bin/env bash
# `make run`: starts the local stack (what is not already running), then api and ingest in
# the foreground with readable logs. Ctrl-C or a TERM stops the apps and the services this
# command started, and returns once they are gone; services it found running stay up.
# One `make run` per $MERIDIAN_VAR at a time: a second one waits while the first is stopping.
# After a first one that was killed outright (kill -9: no cleanup), it stops the apps that one
# left and adopts the services that one had started (stopped when this one ends).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
STACK="$REPO_ROOT/deploy/local/stack.sh"
RUN_DIR="$MERIDIAN_VAR/run"
# This command's files in RUN_DIR: make-run.lock (held while it runs), make-run.pid and .start
# (who), make-run.stopping (its cleanup is under way), make-run.services (`name pid` of each
# service it started), api.pid and ingest.pid (its apps). A make-run.pid that outlives its
# process means that run was killed before it could clean up.
mkdir -p "$RUN_DIR"
services_file="$RUN_DIR/make-run.services"
say() { printf '[make run] %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

# The lock is held on fd 8 until this process ends, however it ends (even kill -9). No child
# keeps it (8>&- below), so a service or an app that outlives this script does not hold it.
exec 8>"$RUN_DIR/make-run.lock"
if ! flock -n 8; then
  other=$(alive_pid make-run || echo '?')
  # Just signalled, it may not have marked itself stopping yet: a few seconds to tell.
  for _ in $(seq 1 25); do [ -e "$(stoppingfile make-run)" ] && break; flock -n 8 && break; sleep 0.2; done
  if ! flock -n 8; then
    [ -e "$(stoppingfile make-run)" ] || fail "make run is already running here (pid $other, data in $MERIDIAN_VAR): stop it first"
    say "the previous make run (pid $other) is stopping: waiting until it is done"
    flock -w 120 8 || fail "the previous make run (pid $other) did not finish stopping in 120 s"
  fi
fi

# A previous make run that was killed outright: its apps go, its services are adopted.
adopted=()
if [ -f "$(pidfile make-run)" ]; then
  killed=$(cat "$(pidfile make-run)")
  leftovers=()
  for app in api ingest; do alive_pid "$app" >/dev/null && leftovers+=("$app"); done
  if [ ${#leftovers[@]} -gt 0 ]; then
    say "stopping ${leftovers[*]} left running by a make run that was killed (pid $killed)"
    stop_processes "${leftovers[@]}" || fail "could not stop ${leftovers[*]} of the killed make run"
  fi
  if [ -f "$services_file" ]; then
    while read -r name pid; do
      [ "$(alive_pid "$name")" = "$pid" ] && adopted+=("$name $pid")
    done < "$services_file"
  fi
  [ ${#adopted[@]} -gt 0 ] && say "adopting what the killed make run (pid $killed) had started: $(printf '%s, ' "${adopted[@]%% *}" | sed 's/, $//') (stopped when this run ends)"
fi
printf '%s\n' "${adopted[@]}" | grep . > "$services_file"
forget api; forget ingest
echo $$ > "$(pidfile make-run)"; proc_start $$ > "$(startfile make-run)"; rm -f "$(stoppingfile make-run)"

# Whatever ends this script (an app that stops, a failed start, Ctrl-C, a TERM), the EXIT trap
# stops the apps and the services this command started, and waits until they are gone.
pids=()
cleanup() {
  local status=$? owned=() others=() s
  # The cleanup runs to its end: a second Ctrl-C or TERM does not cut it short, nor a closed
  # output (`make run | tee log`: Ctrl-C ends tee too); kill -9 does, and the next make run
  # copes with what is left. Children started from here inherit this.
  trap '' INT TERM PIPE
  trap - EXIT
  touch "$(stoppingfile make-run)"
  if [ ${#pids[@]} -gt 0 ]; then
    echo
    say "stopping api and ingest (pids ${pids[*]})"
    stop_processes api ingest 2>&1 | sed 's/^\[stack\] /[make run] /' >&2
    wait "${pids[@]}" 2>/dev/null
  fi
  [ -f "$services_file" ] && while read -r s _; do owned+=("$s"); done < "$services_file"
  for s in kafka clickhouse minio; do
    case " ${owned[*]} " in *" $s "*) ;; *) running "$s" && others+=("$s") ;; esac
  done
  if [ ${#owned[@]} -gt 0 ]; then
    say "stopping ${owned[*]} (started by this make run)"
    "$STACK" down "${owned[@]}" || say "error: some services did not stop: see deploy/local/stack.sh status"
  fi
  [ ${#others[@]} -gt 0 ] && say "leaving ${others[*]} running (not started by this make run)"
  rm -f "$services_file"; forget make-run
  say "stopped"
  exit "$status"
}
trap cleanup EXIT
# Ctrl-C or a TERM is a stop that was asked for: a clean exit.
trap 'exit 0' INT TERM

STACK_STARTED_FILE="$services_file" "$STACK" up 8>&- || exit 1
eval "$("$STACK" env)"
export MERIDIAN_DEV_LOGS="${MERIDIAN_DEV_LOGS:-true}"
# One api, named: a restart ends at once a push transaction the previous run left open.
export MERIDIAN_API_INSTANCE="${MERIDIAN_API_INSTANCE:-local}"

record_app() { echo "$2" > "$(pidfile "$1")"; proc_start "$2" > "$(startfile "$1")"; pids+=("$2"); }
node --max-semi-space-size=8 apps/ingest/src/main.ts 8>&- & record_app ingest $! # INGEST_NODE_FLAGS (apps/ingest/src/node-flags.ts)
MALLOC_ARENA_MAX=2 node --max-semi-space-size=1 apps/api/src/main.ts 8>&- & record_app api $! # API_NODE_ENV, API_NODE_FLAGS (apps/api/src/node-flags.ts)
app_of() { case $1 in "${pids[0]}") echo ingest ;; "${pids[1]}") echo api ;; *) echo "an app" ;; esac; }

base="http://${MERIDIAN_API_HOST:-127.0.0.1}:${MERIDIAN_API_PORT:-8088}"
# Until /readyz answers 200 (after 60 s a note says what is still missing); an app that exits
# meanwhile is named and ends the run.
waited=0
until curl -fsS "$base/readyz" >/dev/null 2>&1; do
  for pid in "${pids[@]}"; do
    if [ -z "$(proc_start "$pid")" ]; then
      wait "$pid"; status=$?
      say "$(app_of "$pid") exited (status $status) before Meridian was ready: stopping the rest"
      exit 1
    fi
  done
  sleep 0.5; waited=$((waited + 1))
  [ $waited = 120 ] && say "not ready after 60 s, still waiting: $(curl -sS "$base/readyz" 2>&1 | head -c 500)"
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
died=
wait -n -p died "${pids[@]}"
status=$?
say "$(app_of "$died") stopped (exit status $status): stopping the rest"
exit "$status"
