#!/usr/bin/env bash
# The local stack without Docker: real Kafka (KRaft), ClickHouse and MinIO processes
# with data and logs under $MERIDIAN_VAR.
#   stack.sh up [service...]      install if needed, start, wait until ready ($STACK_STARTED_FILE,
#                                 when set, gets a line `name pid` for each service this call started)
#   stack.sh down [service...]    stop (SIGTERM, then SIGKILL after 20 s) and wait until each is gone
#   stack.sh status               one line per service: ready, starting, stopping or stopped
#   stack.sh logs [service]       tail the logs
#   stack.sh reset                stop everything and wipe its data
#   stack.sh env                  print the endpoints as shell exports
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SERVICES=(kafka clickhouse minio)
RUN_DIR="$MERIDIAN_VAR/run"
LOG_DIR="$MERIDIAN_VAR/log"

logfile() { echo "$LOG_DIR/$1.log"; }

render() { # template output: substitutes @VAR@ and the ports
  sed -e "s|@VAR@|$MERIDIAN_VAR|g" -e "s|@PORT@|$KAFKA_PORT|g" -e "s|@CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" \
      -e "s|@HTTP_PORT@|$CLICKHOUSE_HTTP_PORT|g" -e "s|@TCP_PORT@|$CLICKHOUSE_TCP_PORT|g" \
      "$REPO_ROOT/deploy/local/templates/$1" > "$2"
}

# A taken port is moved with the port variables (see the header).
PORT_HINT=' (set the port variables to move it)'

start_kafka() {
  port_busy_check kafka "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"
  local dir="$MERIDIAN_VAR/kafka"; mkdir -p "$dir/data"
  render kafka-server.properties "$dir/server.properties"
  render kafka-log4j.properties "$dir/log4j.properties"
  local cp="$KAFKA_HOME/libs/*"
  if [ ! -f "$dir/data/meta.properties" ]; then
    local cluster_id; cluster_id=$(java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)
    java -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$cp" kafka.tools.StorageTool format \
      -t "$cluster_id" -c "$dir/server.properties" >"$LOG_DIR/kafka-format.log" 2>&1 \
      || { tail -n 20 "$LOG_DIR/kafka-format.log" >&2; die "kafka storage format failed"; }
  fi
  spawn kafka java -Xms256m "-Xmx$KAFKA_HEAP" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$cp" kafka.Kafka "$dir/server.properties"
}
ready_kafka() { port_open "$KAFKA_PORT" && grep -q "Kafka Server started" "$(logfile kafka)"; }

start_clickhouse() {
  port_busy_check clickhouse "$CLICKHOUSE_HTTP_PORT" "$CLICKHOUSE_TCP_PORT"
  local dir="$MERIDIAN_VAR/clickhouse"; mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/format_schemas"
  render clickhouse-config.xml "$dir/config.xml"
  render clickhouse-users.xml "$dir/users.xml"
  local bin=/usr/sbin/clickhouse-server; [ -x "$bin" ] || bin=$(command -v clickhouse-server)
  spawn clickhouse "$bin" --config-file="$dir/config.xml"
}
ready_clickhouse() { curl -fsS "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/ping" >/dev/null 2>&1; }

start_minio() {
  port_busy_check minio "$MINIO_PORT" "$MINIO_CONSOLE_PORT"
  mkdir -p "$MERIDIAN_VAR/minio/data"
  MINIO_ROOT_USER="$MINIO_ROOT_USER" MINIO_ROOT_PASSWORD="$MINIO_ROOT_PASSWORD" MINIO_BROWSER=off \
    spawn minio "$MINIO_BIN" server "$MERIDIAN_VAR/minio/data" \
      --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" --quiet
}
ready_minio() { curl -fsS "http://127.0.0.1:$MINIO_PORT/minio/health/ready" >/dev/null 2>&1; }

ready() { "ready_$1"; }
ports_of() {
  case $1 in
    kafka) echo "$KAFKA_PORT $KAFKA_CONTROLLER_PORT" ;;
    clickhouse) echo "$CLICKHOUSE_HTTP_PORT $CLICKHOUSE_TCP_PORT" ;;
    minio) echo "$MINIO_PORT $MINIO_CONSOLE_PORT" ;;
  esac
}

up() {
  "$REPO_ROOT/deploy/local/install.sh" all
  mkdir -p "$RUN_DIR" "$LOG_DIR"
  local waiting=() s pid
  for s in "$@"; do
    # A service another command is stopping is not reused: wait until it is gone, then start it.
    if stopping "$s"; then
      pid=$(alive_pid "$s")
      log "$s (pid $pid) is stopping: waiting until it is gone"
      wait_gone "$s" 40 || { log "$s still there after 40 s, killing it"; kill -KILL "$pid" 2>/dev/null || true; wait_gone "$s" 10 || die "$s (pid $pid) does not go away"; }
    fi
    if running "$s"; then
      # Started by someone else: used once it is ready (it may be starting right now).
      ready "$s" || { log "$s (pid $(alive_pid "$s")) is running but not ready yet: waiting for it"; waiting+=("$s"); }
      continue
    fi
    forget "$s"
    log "starting $s"; "start_$s"; waiting+=("$s")
    if [ -n "${STACK_STARTED_FILE:-}" ]; then echo "$s $(cat "$(pidfile "$s")")" >> "$STACK_STARTED_FILE"; fi
  done
  for s in "${waiting[@]}"; do
    case $s in kafka) wait_ready kafka 90 ;; *) wait_ready "$s" 45 ;; esac
    log "$s ready"
  done
}

down() {
  stop_processes "$@"
}

status() {
  local s state
  for s in "${SERVICES[@]}"; do
    if stopping "$s"; then
      printf '%-11s %-9s pid %s\n' "$s" stopping "$(alive_pid "$s")"
    elif running "$s"; then
      if ready "$s"; then state=ready; else state=starting; fi
      printf '%-11s %-9s pid %s\n' "$s" "$state" "$(alive_pid "$s")"
    else
      printf '%-11s %-9s\n' "$s" stopped
    fi
  done
}

print_env() {
  cat <<ENV
export KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT
export CLICKHOUSE_URL=http://127.0.0.1:$CLICKHOUSE_HTTP_PORT
export S3_ENDPOINT=http://127.0.0.1:$MINIO_PORT
export S3_ACCESS_KEY=$MINIO_ROOT_USER
export S3_SECRET_KEY=$MINIO_ROOT_PASSWORD
ENV
}

cmd=${1:-status}; shift || true
targets=("$@"); [ ${#targets[@]} -eq 0 ] && targets=("${SERVICES[@]}")
for t in "${targets[@]}"; do
  case " ${SERVICES[*]} " in *" $t "*) ;; *) [ "$cmd" = logs ] || die "unknown service: $t" ;; esac
done
case $cmd in
  up) up "${targets[@]}" ;;
  down) down "${targets[@]}" ;;
  status) status ;;
  logs) for t in "${targets[@]}"; do echo "==> $(logfile "$t") <=="; tail -n "${LINES:-50}" "$(logfile "$t")" 2>/dev/null || true; done ;;
  reset) down "${SERVICES[@]}"; rm -rf "$MERIDIAN_VAR/kafka" "$MERIDIAN_VAR/clickhouse" "$MERIDIAN_VAR/minio"; log "data wiped" ;;
  env) print_env ;;
  *) die "usage: stack.sh up|down|status|logs|reset|env [service...]" ;;
esac
