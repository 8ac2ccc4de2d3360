# Shared settings for the local stack scripts. Sourced, never run.
# Every value can be overridden from the environment; the defaults avoid the
# usual ports (ClickHouse's native port and MinIO's default are both 9000).

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MERIDIAN_CACHE="${MERIDIAN_CACHE:-$HOME/.cache/meridian}"
MERIDIAN_VAR="${MERIDIAN_VAR:-$REPO_ROOT/.var}"

NODE_VERSION="${NODE_VERSION:-24.21.0}"
KAFKA_VERSION="${KAFKA_VERSION:-3.9.1}"
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
SCHEMATHESIS_VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
CHDB_VERSION="${CHDB_VERSION:-26.9.0}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
KUBERNETES_VALIDATE_VERSION="${KUBERNETES_VALIDATE_VERSION:-1.37.0}"
ZOOKEEPER_VERSION="${ZOOKEEPER_VERSION:-3.9.5}"
# Go for the `go install` steps: the machine's when it is GO_MIN_VERSION or newer (helm's go.mod
# says 1.26.0, MinIO's 1.24.0), else this toolchain from the Go module proxy, checked against its
# go.sum hashes (the checksum database's, one per architecture).
GO_MIN_VERSION="${GO_MIN_VERSION:-1.26.0}"
GO_TOOLCHAIN_VERSION="${GO_TOOLCHAIN_VERSION:-1.27.3}"
GO_TOOLCHAIN_H1_AMD64="${GO_TOOLCHAIN_H1_AMD64:-h1:r0ub+FnqzZxoWm/dSUOI9DcIqYWn/mNYGFJcv7PyBzs=}"
GO_TOOLCHAIN_H1_ARM64="${GO_TOOLCHAIN_H1_ARM64:-h1:VY4gDzfxOrsM17J2qtgZgiAIsWhp7XWK1jMfE3kXV0s=}"

KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
KAFKA_HEAP="${KAFKA_HEAP:-768m}"
CLICKHOUSE_HTTP_PORT="${CLICKHOUSE_HTTP_PORT:-18123}"
CLICKHOUSE_TCP_PORT="${CLICKHOUSE_TCP_PORT:-19000}"
MINIO_PORT="${MINIO_PORT:-19900}"
MINIO_CONSOLE_PORT="${MINIO_CONSOLE_PORT:-19901}"
MINIO_ROOT_USER="${MINIO_ROOT_USER:-meridian}"
MINIO_ROOT_PASSWORD="${MINIO_ROOT_PASSWORD:-meridian-local-secret}"

KAFKA_HOME="$MERIDIAN_CACHE/kafka-$KAFKA_VERSION"
MINIO_BIN="$MERIDIAN_CACHE/minio/$MINIO_VERSION/bin/minio"
NODE_HOME="$MERIDIAN_CACHE/node-$NODE_VERSION"
SCHEMATHESIS_HOME="$MERIDIAN_CACHE/schemathesis-$SCHEMATHESIS_VERSION"
CHDB_HOME="$MERIDIAN_CACHE/chdb-$CHDB_VERSION"
HELM_BIN="$MERIDIAN_CACHE/helm-$HELM_VERSION/bin/helm"
KUBERNETES_VALIDATE_HOME="$MERIDIAN_CACHE/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
VICTORIA_METRICS_HOME="$MERIDIAN_CACHE/victoria-metrics"
VICTORIA_METRICS_BIN="$VICTORIA_METRICS_HOME/usr/bin/victoria-metrics"
# The OTLP conformance test's peer: Debian's 1.79 predates OpenTelemetry ingestion (1.92), so a
# current VictoriaMetrics is built from the Go module proxy (newer than 1.153 needs Go 1.27).
VICTORIA_METRICS_OTLP_VERSION="${VICTORIA_METRICS_OTLP_VERSION:-v1.151.0}"
VICTORIA_METRICS_OTLP_BIN="$MERIDIAN_CACHE/victoria-metrics-otlp/$VICTORIA_METRICS_OTLP_VERSION/bin/victoria-metrics"
# The reference engine of the PromQL conformance test: Debian's prometheus (2.42), prometheus and promtool.
PROMETHEUS_HOME="$MERIDIAN_CACHE/prometheus"
PROMETHEUS_BIN="$PROMETHEUS_HOME/usr/bin/prometheus"
PROMTOOL_BIN="$PROMETHEUS_HOME/usr/bin/promtool"
ZOOKEEPER_HOME="$MERIDIAN_CACHE/zookeeper-$ZOOKEEPER_VERSION"
GO_HOME="$MERIDIAN_CACHE/go-$GO_TOOLCHAIN_VERSION"
# The Python client's test virtualenv (clients/python): named by the hash of its pinned
# requirements, so a changed pin makes a new one; wheels/ in it holds what an offline
# `pip install clients/python` needs (the build backend and the runtime dependencies).
PYTHON_CLIENT_REQUIREMENTS="$REPO_ROOT/clients/python/requirements-test.txt"
PYTHON_CLIENT_HOME="$MERIDIAN_CACHE/python-client-$( { sha256sum "$PYTHON_CLIENT_REQUIREMENTS" 2>/dev/null || echo none; } | cut -c1-12)"

# `|| true`: a closed stderr (the reader of `make run | tee` gone with Ctrl-C) must not end a
# script under `set -e` half-way through stopping something.
log() { printf '[stack] %s\n' "$*" >&2 || true; }
die() { printf '[stack] error: %s\n' "$*" >&2; exit 1; }

# Runs "$@" holding an exclusive lock on the cache, so two concurrent runs
# (a developer's `make run` and `make test`) never install into the same place at once.
with_cache_lock() {
  mkdir -p "$MERIDIAN_CACHE"
  exec 9>"$MERIDIAN_CACHE/.install.lock"
  flock 9
  "$@"
  local rc=$?
  flock -u 9
  return $rc
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Background processes of deploy/local/stack.sh and deploy/cluster/cluster.sh, one pid file each
# under $RUN_DIR. The script sourcing this sets RUN_DIR and defines `ready NAME` and `logfile NAME`;
# it may define `ports_of NAME` (the ports the process listens on): a stop then also waits for them.
# Beside NAME.pid: NAME.start, the process's start time (so a pid reused after a reboot is not taken
# for it), and NAME.stopping while a stop is under way (a stopping process is not a live one).
pidfile() { echo "$RUN_DIR/$1.pid"; }
startfile() { echo "$RUN_DIR/$1.start"; }
stoppingfile() { echo "$RUN_DIR/$1.stopping"; }

# The start time of a process (clock ticks since boot, /proc/PID/stat field 22); empty when it is
# gone or a zombie (dead, not yet reaped: its ports are closed).
proc_start() { # pid
  local stat rest f
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  rest=${stat##*) }; read -ra f <<<"$rest"
  [ "${f[0]}" = Z ] || echo "${f[19]}"
}

# The previous run's log is kept as NAME.log.1 (one generation): after a kill and a restart it is
# the evidence of what happened. NAME.log starts empty, so a readiness check that greps it reads
# only this run's lines.
spawn() { # name command...: runs in its own session so Ctrl-C of a caller does not reach it
  local name=$1 log; shift
  log=$(logfile "$name")
  if [ -s "$log" ]; then mv -f "$log" "$log.1"; fi
  : > "$log"
  rm -f "$(stoppingfile "$name")"
  setsid nohup "$@" >>"$log" 2>&1 < /dev/null &
  echo $! > "$(pidfile "$name")"
  proc_start $! > "$(startfile "$name")"
}

port_busy_check() { # name port...: fail clearly when a port is taken by something else ($PORT_HINT says how to move it)
  local name=$1; shift
  for p in "$@"; do
    port_open "$p" && die "$name: port $p is already in use by another process${PORT_HINT:-}"
  done
  return 0
}

# The pid of NAME's process while that very process exists (same pid and start time), else fails.
alive_pid() { # name
  local f pid start
  f=$(pidfile "$1"); [ -f "$f" ] || return 1
  pid=$(cat "$f"); [[ $pid =~ ^[0-9]+$ ]] || return 1
  start=$(proc_start "$pid"); [ -n "$start" ] || return 1
  if [ -s "$(startfile "$1")" ]; then [ "$start" = "$(cat "$(startfile "$1")")" ] || return 1; fi
  echo "$pid"
}
# Live: its process exists and no stop of it is under way.
running() { [ ! -e "$(stoppingfile "$1")" ] && alive_pid "$1" >/dev/null; }
# A stop was sent and the process is not gone yet.
stopping() { [ -e "$(stoppingfile "$1")" ] && alive_pid "$1" >/dev/null; }

wait_ready() { # name timeout_seconds
  local name=$1 deadline=$((SECONDS + $2))
  until ready "$name"; do
    if ! running "$name"; then
      tail -n 30 "$(logfile "$name")" >&2 || true
      die "$name exited during start (log: $(logfile "$name"))"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 30 "$(logfile "$name")" >&2 || true
      die "$name not ready after $2 s (log: $(logfile "$name"))"
    fi
    sleep 0.3
  done
}

# Waits until NAME's process is gone and its ports (ports_of) answer no more; fails after SECONDS.
wait_gone() { # name seconds
  local name=$1 deadline=$((SECONDS + $2)) p ports=""
  declare -F ports_of >/dev/null && ports=$(ports_of "$name")
  while alive_pid "$name" >/dev/null; do [ "$SECONDS" -ge "$deadline" ] && return 1; sleep 0.2; done
  for p in $ports; do
    while port_open "$p"; do [ "$SECONDS" -ge "$deadline" ] && return 1; sleep 0.2; done
  done
}

# The files of a process that is gone.
forget() { rm -f "$(pidfile "$1")" "$(startfile "$1")" "$(stoppingfile "$1")"; }

# Stops processes together: marks each as stopping and sends TERM, then waits for each to be gone
# (KILL if it is still there after 20 s) and its ports free. Returns only when all are gone, so a
# start right after it never meets a process that is still shutting down.
stop_processes() { # name...
  local name pid rc=0
  for name in "$@"; do
    pid=$(alive_pid "$name") || { forget "$name"; continue; }
    touch "$(stoppingfile "$name")"
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
  done
  for name in "$@"; do
    [ -e "$(stoppingfile "$name")" ] || continue
    if ! wait_gone "$name" 20; then
      pid=$(alive_pid "$name") && { log "$name did not stop in 20 s, killing"; kill -KILL "$pid" 2>/dev/null || true; }
      wait_gone "$name" 10 || { log "error: $name (pid ${pid:-?}) is still there or its port still answers"; rc=1; continue; }
    fi
    forget "$name"
    log "$name stopped"
  done
  return $rc
}
stop_process() { stop_processes "$1"; }
