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
ZOOKEEPER_HOME="$MERIDIAN_CACHE/zookeeper-$ZOOKEEPER_VERSION"
# The Python client's test virtualenv (clients/python): named by the hash of its pinned
# requirements, so a changed pin makes a new one; wheels/ in it holds what an offline
# `pip install clients/python` needs (the build backend and the runtime dependencies).
PYTHON_CLIENT_REQUIREMENTS="$REPO_ROOT/clients/python/requirements-test.txt"
PYTHON_CLIENT_HOME="$MERIDIAN_CACHE/python-client-$( { sha256sum "$PYTHON_CLIENT_REQUIREMENTS" 2>/dev/null || echo none; } | cut -c1-12)"

log() { printf '[stack] %s\n' "$*" >&2; }
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
# under $RUN_DIR. The script sourcing this sets RUN_DIR and defines `ready NAME` and `logfile NAME`.
pidfile() { echo "$RUN_DIR/$1.pid"; }

spawn() { # name command...: runs in its own session so Ctrl-C of a caller does not reach it
  local name=$1; shift
  : > "$(logfile "$name")"
  setsid nohup "$@" >>"$(logfile "$name")" 2>&1 < /dev/null &
  echo $! > "$(pidfile "$name")"
}

port_busy_check() { # name port...: fail clearly when a port is taken by something else ($PORT_HINT says how to move it)
  local name=$1; shift
  for p in "$@"; do
    port_open "$p" && die "$name: port $p is already in use by another process${PORT_HINT:-}"
  done
  return 0
}
running() { local f; f=$(pidfile "$1"); [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

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

# Stops one process: TERM, then KILL if it is still there after 20 s.
stop_process() { # name
  local name=$1 pid
  running "$name" || { rm -f "$(pidfile "$name")"; return 0; }
  pid=$(cat "$(pidfile "$name")")
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && { log "$name did not stop in 20 s, killing"; kill -KILL "$pid" 2>/dev/null || true; }
  rm -f "$(pidfile "$name")"
}
