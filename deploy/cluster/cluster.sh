#!/usr/bin/env bash
# The cluster topology on one machine, without Docker: 3 Kafka brokers (KRaft, combined
# broker+controller), ZooKeeper and 2 ClickHouse replicas of one shard, 4 MinIO nodes
# (erasure-coded), haproxy in front of MinIO and the apis, then 2 api and 2 ingest instances.
# Its ports never collide with the local stack's nor the tests' alternative ports, but do not
# run both at once (memory). Data and logs: $MERIDIAN_CLUSTER_VAR (default ~/.cache/meridian/cluster).
#   cluster.sh up [proc...|services|apps]   install if needed, start, wait until ready
#   cluster.sh down [proc...]               stop (SIGTERM, then SIGKILL after 20 s), apps first
#   cluster.sh status                       one line per process: state, pid, RSS
#   cluster.sh logs [proc]                  tail the logs
#   cluster.sh kill proc                    kill -9, for fault tests; `start proc` (= `up proc`) starts it again
#   cluster.sh reset                        stop everything and wipe its data
#   cluster.sh env                          the endpoints and cluster settings as shell exports
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../local/lib.sh"

CLUSTER_VAR="${MERIDIAN_CLUSTER_VAR:-$MERIDIAN_CACHE/cluster}"
RUN_DIR="$CLUSTER_VAR/run"
LOG_DIR="$CLUSTER_VAR/log"
TEMPLATES="$REPO_ROOT/deploy/cluster/templates"
NODE_BIN_DIR=$("$REPO_ROOT/deploy/local/node.sh")
[ -n "$NODE_BIN_DIR" ] && PATH="$NODE_BIN_DIR:$PATH"

# Ports: the 24xxx range (ZooKeeper 22181), below the kernel's ephemeral ports (32768 and up), which any process's
# outgoing connection or a test's free port can hold when the cluster starts; the local stack uses
# 18123/19000/19092/19093/19900/19901, the tests' alternatives 28123/29000/29092/29093/29192/29193/29900/29901.
KAFKA_PORTS=(24092 24093 24094)
KAFKA_CONTROLLER_PORTS=(24192 24193 24194)
CLUSTER_KAFKA_HEAP="${CLUSTER_KAFKA_HEAP:-512m}"
ZK_PORT=22181
CH_HTTP_PORTS=(24123 24124)
CH_TCP_PORTS=(24000 24001)
CH_INTERSERVER_PORTS=(24009 24010)
MINIO_PORTS=(24901 24902 24903 24904)
# In a container (Docker, Podman) MinIO refuses distributed endpoints that resolve to loopback
# ("resolves to localhost in a containerized deployment", cmd/endpoint.go): there the nodes listen
# on the machine's first non-loopback address; the S3 front (haproxy) stays on 127.0.0.1.
if [ -z "${CLUSTER_MINIO_HOST:-}" ]; then
  CLUSTER_MINIO_HOST=127.0.0.1
  if [ -f /.dockerenv ] || [ -f /run/.containerenv ]; then CLUSTER_MINIO_HOST=$(hostname -I | awk '{print $1}'); fi
fi
MINIO_CONSOLE_PORTS=(24911 24912 24913 24914)
S3_FRONT_PORT=24900
API_FRONT_PORT=24080
API_PORTS=(24088 24089)
# Both apis must sign download cursors alike: a cursor from one is followed on the other.
CLUSTER_CURSOR_SECRET="${CLUSTER_CURSOR_SECRET:-meridian-cluster-cursor-secret-not-for-production}"

SERVICES=(zookeeper kafka1 kafka2 kafka3 ch1 ch2 minio1 minio2 minio3 minio4 haproxy)
APPS=(api1 api2 ingest1 ingest2)
ALL=("${SERVICES[@]}" "${APPS[@]}")

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] error: %s\n' "$*" >&2; exit 1; }

logfile() { echo "$LOG_DIR/$1.log"; }
index() { echo "${1//[!0-9]/}"; } # kafka2 -> 2

render() { # template output sed-args...
  sed "${@:3}" "$TEMPLATES/$1" > "$2"
}


start_zookeeper() {
  port_busy_check zookeeper "$ZK_PORT"
  local dir="$CLUSTER_VAR/zookeeper"; mkdir -p "$dir/data"
  render zoo.cfg "$dir/zoo.cfg" -e "s|@DIR@|$dir|g" -e "s|@ZK_PORT@|$ZK_PORT|g"
  cp "$TEMPLATES/zookeeper-logback.xml" "$dir/logback.xml"
  spawn zookeeper java -Xms64m -Xmx256m -XX:+UseG1GC -Djava.awt.headless=true -Dzookeeper.admin.enableServer=false \
    -Dlogback.configurationFile="$dir/logback.xml" -cp "$ZOOKEEPER_HOME/libs/*" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg"
}
ready_zookeeper() { { exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT" && printf srvr >&3 && grep -q '^Mode: standalone' <&3; } 2>/dev/null; }

kafka_voters() {
  local v=() i
  for i in 0 1 2; do v+=("$((i + 1))@127.0.0.1:${KAFKA_CONTROLLER_PORTS[$i]}"); done
  (IFS=,; echo "${v[*]}")
}

start_kafka() { # N
  local n=$1 name="kafka$1" i=$(($1 - 1))
  port_busy_check "$name" "${KAFKA_PORTS[$i]}" "${KAFKA_CONTROLLER_PORTS[$i]}"
  local dir="$CLUSTER_VAR/$name"; mkdir -p "$dir/data"
  render kafka-server.properties "$dir/server.properties" -e "s|@N@|$n|g" -e "s|@DIR@|$dir|g" \
    -e "s|@VOTERS@|$(kafka_voters)|g" -e "s|@PORT@|${KAFKA_PORTS[$i]}|g" -e "s|@CONTROLLER_PORT@|${KAFKA_CONTROLLER_PORTS[$i]}|g"
  cp "$REPO_ROOT/deploy/local/templates/kafka-log4j.properties" "$dir/log4j.properties"
  local cp="$KAFKA_HOME/libs/*"
  if [ ! -f "$dir/data/meta.properties" ]; then
    # One cluster id for the three brokers, made by the first to be formatted.
    [ -f "$CLUSTER_VAR/kafka-cluster-id" ] \
      || java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1 > "$CLUSTER_VAR/kafka-cluster-id"
    java -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$cp" kafka.tools.StorageTool format \
      -t "$(cat "$CLUSTER_VAR/kafka-cluster-id")" -c "$dir/server.properties" >"$LOG_DIR/$name-format.log" 2>&1 \
      || { tail -n 20 "$LOG_DIR/$name-format.log" >&2; die "$name storage format failed"; }
  fi
  spawn "$name" java -Xms256m "-Xmx$CLUSTER_KAFKA_HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$cp" kafka.Kafka "$dir/server.properties"
}
ready_kafka() { local i=$(($1 - 1)); port_open "${KAFKA_PORTS[$i]}" && grep -q "Kafka Server started" "$(logfile "kafka$1")"; }

start_ch() { # N
  local n=$1 name="ch$1" i=$(($1 - 1))
  port_busy_check "$name" "${CH_HTTP_PORTS[$i]}" "${CH_TCP_PORTS[$i]}" "${CH_INTERSERVER_PORTS[$i]}"
  local dir="$CLUSTER_VAR/$name"; mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas"
  render clickhouse-config.xml "$dir/config.xml" -e "s|@NAME@|$name|g" -e "s|@DIR@|$dir|g" \
    -e "s|@HTTP_PORT@|${CH_HTTP_PORTS[$i]}|g" -e "s|@TCP_PORT@|${CH_TCP_PORTS[$i]}|g" \
    -e "s|@INTERSERVER_PORT@|${CH_INTERSERVER_PORTS[$i]}|g" -e "s|@ZK_PORT@|$ZK_PORT|g" \
    -e "s|@TCP_PORT_1@|${CH_TCP_PORTS[0]}|g" -e "s|@TCP_PORT_2@|${CH_TCP_PORTS[1]}|g"
  cp "$TEMPLATES/clickhouse-users.xml" "$dir/users.xml"
  local bin=/usr/sbin/clickhouse-server; [ -x "$bin" ] || bin=$(command -v clickhouse-server)
  spawn "$name" "$bin" --config-file="$dir/config.xml"
}
ready_ch() { curl -fsS "http://127.0.0.1:${CH_HTTP_PORTS[$(($1 - 1))]}/ping" >/dev/null 2>&1; }

start_minio() { # N: one node of four, each with its own drive directory
  local name="minio$1" i=$(($1 - 1)) nodes=() j
  port_busy_check "$name" "${MINIO_PORTS[$i]}" "${MINIO_CONSOLE_PORTS[$i]}"
  for j in 0 1 2 3; do
    mkdir -p "$CLUSTER_VAR/minio$((j + 1))/d"
    nodes+=("http://$CLUSTER_MINIO_HOST:${MINIO_PORTS[$j]}$CLUSTER_VAR/minio$((j + 1))/d")
  done
  # MINIO_CI_CD: the drives are on the root filesystem, which erasure mode otherwise refuses.
  MINIO_CI_CD=1 MINIO_ROOT_USER="$MINIO_ROOT_USER" MINIO_ROOT_PASSWORD="$MINIO_ROOT_PASSWORD" MINIO_BROWSER=off \
    spawn "$name" "$MINIO_BIN" server "${nodes[@]}" \
      --address "$CLUSTER_MINIO_HOST:${MINIO_PORTS[$i]}" --console-address "$CLUSTER_MINIO_HOST:${MINIO_CONSOLE_PORTS[$i]}" --quiet
}
# A node is ready when the erasure set has write quorum (3 of 4 nodes up).
ready_minio() { curl -fsS "http://$CLUSTER_MINIO_HOST:${MINIO_PORTS[$(($1 - 1))]}/minio/health/cluster" >/dev/null 2>&1; }

start_haproxy() {
  port_busy_check haproxy "$S3_FRONT_PORT" "$API_FRONT_PORT"
  local dir="$CLUSTER_VAR/haproxy" minio="" api="" j; mkdir -p "$dir"
  for j in 0 1 2 3; do minio+="  server minio$((j + 1)) $CLUSTER_MINIO_HOST:${MINIO_PORTS[$j]} check\n"; done
  for j in 0 1; do api+="  server api$((j + 1)) 127.0.0.1:${API_PORTS[$j]} check\n"; done
  render haproxy.cfg "$dir/haproxy.cfg" -e "s|@S3_PORT@|$S3_FRONT_PORT|g" -e "s|@API_FRONT_PORT@|$API_FRONT_PORT|g" \
    -e "s|@MINIO_SERVERS@|$minio|" -e "s|@API_SERVERS@|$api|"
  haproxy -c -q -f "$dir/haproxy.cfg" || die "haproxy: invalid $dir/haproxy.cfg"
  spawn haproxy haproxy -db -f "$dir/haproxy.cfg"
}
ready_haproxy() { curl -fsS "http://127.0.0.1:$S3_FRONT_PORT/minio/health/cluster" >/dev/null 2>&1; }

app_env() { # the settings every app instance of the cluster runs with
  print_env | sed -e 's/^export //'
  echo "MERIDIAN_CURSOR_SECRET=$CLUSTER_CURSOR_SECRET"
}

start_api() { # N
  local name="api$1" i=$(($1 - 1))
  port_busy_check "$name" "${API_PORTS[$i]}"
  cd "$REPO_ROOT"
  # shellcheck disable=SC2046
  # Named per instance, so a restarted api ends at once a push transaction its killed predecessor left open.
  spawn "$name" env $(app_env) MERIDIAN_API_PORT="${API_PORTS[$i]}" MERIDIAN_API_INSTANCE="$name" MALLOC_ARENA_MAX=2 \
    node --max-semi-space-size=1 apps/api/src/main.ts # API_NODE_ENV, API_NODE_FLAGS (apps/api/src/node-flags.ts)
}
ready_api() { curl -fsS "http://127.0.0.1:${API_PORTS[$(($1 - 1))]}/readyz" >/dev/null 2>&1; }

start_ingest() { # N
  cd "$REPO_ROOT"
  # shellcheck disable=SC2046
  spawn "ingest$1" env $(app_env) node --max-semi-space-size=8 apps/ingest/src/main.ts # INGEST_NODE_FLAGS (apps/ingest/src/node-flags.ts)
}
# The ingest worker has no port: ready once its projector has started (after its topics, tables and groups).
ready_ingest() { grep -q '"msg":"projector started"' "$(logfile "ingest$1")" 2>/dev/null; }

start() { local p=$1; case $p in kafka* | ch* | minio* | api* | ingest*) "start_${p%%[0-9]*}" "$(index "$p")" ;; *) "start_$p" ;; esac; }
ready() { local p=$1; case $p in kafka* | ch* | minio* | api* | ingest*) "ready_${p%%[0-9]*}" "$(index "$p")" ;; *) "ready_$p" ;; esac; }


up() {
  local begin=$SECONDS
  "$REPO_ROOT/deploy/local/install.sh" cluster
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  # Started in this order, in waves: a wave's processes start together and are awaited together
  # (the Kafka voters and the MinIO nodes need each other to become ready).
  local waves=("zookeeper kafka1 kafka2 kafka3 minio1 minio2 minio3 minio4" "ch1 ch2 haproxy" "ingest1 ingest2 api1 api2")
  for wave in "${waves[@]}"; do
    local started=() p
    for p in $wave; do
      case " $* " in *" $p "*) ;; *) continue ;; esac
      running "$p" && continue
      log "starting $p"; start "$p"; started+=("$p")
    done
    for p in "${started[@]}"; do
      case $p in kafka* | api* | ingest*) wait_ready "$p" 180 ;; *) wait_ready "$p" 90 ;; esac
      log "$p ready"
    done
  done
  log "up in $((SECONDS - begin)) s"
}

down() {
  local p
  # Apps first (they drain into the services), then the services in reverse start order.
  for p in $(printf '%s\n' "$@" | tac); do stop_process "$p"; done
}

status() {
  local p pid rss total=0 state
  for p in "${ALL[@]}"; do
    if running "$p"; then
      pid=$(cat "$(pidfile "$p")")
      # `env` execs node, so an app's pid is node's own.
      rss=$(ps -o rss= -p "$pid" | tr -d ' '); total=$((total + ${rss:-0}))
      if ready "$p"; then state=ready; else state=unhealthy; fi
      printf '%-10s %-10s pid %-8s rss %5d MB\n' "$p" "$state" "$pid" "$(( ${rss:-0} / 1024 ))"
    else
      printf '%-10s %-10s\n' "$p" stopped
    fi
  done
  printf '%-10s %-10s %-12s rss %5d MB\n' total "" "" "$((total / 1024))"
}

print_env() {
  local brokers=() ch=() j
  for j in 0 1 2; do brokers+=("127.0.0.1:${KAFKA_PORTS[$j]}"); done
  for j in 0 1; do ch+=("http://127.0.0.1:${CH_HTTP_PORTS[$j]}"); done
  cat <<ENV
export KAFKA_BROKERS=$(IFS=,; echo "${brokers[*]}")
export KAFKA_REPLICATION_FACTOR=3
export KAFKA_MIN_INSYNC_REPLICAS=2
export CLICKHOUSE_URL=${ch[0]}
export CLICKHOUSE_URLS=$(IFS=,; echo "${ch[*]}")
export CLICKHOUSE_CLUSTER=meridian
export CLICKHOUSE_INSERT_QUORUM=2
export S3_ENDPOINT=http://127.0.0.1:$S3_FRONT_PORT
export S3_ACCESS_KEY=$MINIO_ROOT_USER
export S3_SECRET_KEY=$MINIO_ROOT_PASSWORD
ENV
}

cmd=${1:-status}; shift || true
targets=()
for t in "$@"; do
  case $t in
    services) targets+=("${SERVICES[@]}") ;;
    apps) targets+=("${APPS[@]}") ;;
    *) case " ${ALL[*]} " in *" $t "*) targets+=("$t") ;; *) die "unknown process: $t (one of: ${ALL[*]}, services, apps)" ;; esac ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${ALL[@]}")
case $cmd in
  up | start) up "${targets[@]}" ;;
  down) down "${targets[@]}" ;;
  status) status ;;
  logs) for t in "${targets[@]}"; do echo "==> $(logfile "$t") <=="; tail -n "${LINES:-50}" "$(logfile "$t")" 2>/dev/null || true; done ;;
  kill) [ $# -eq 1 ] || die "usage: cluster.sh kill <proc>"
        running "$1" && kill -KILL "$(cat "$(pidfile "$1")")" && log "killed $1 (kill -9)"; rm -f "$(pidfile "$1")" ;;
  reset) down "${ALL[@]}"; rm -rf "$CLUSTER_VAR"; log "data wiped ($CLUSTER_VAR)" ;;
  env) print_env ;;
  *) die "usage: cluster.sh up|start|down|status|logs|kill|reset|env [proc...|services|apps]" ;;
esac
