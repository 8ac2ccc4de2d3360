#!/usr/bin/env bash
# Installs the local stack's software once into the cache (outside the repo), so a
# clean clone reuses it. Idempotent and safe to run concurrently (cache lock).
#   Kafka:      broker jars from Maven Central (deploy/local/kafka/pom.xml)
#   ClickHouse: Debian's clickhouse-server package (18.16.1)
#   MinIO:      built with `go install` from the Go module proxy, pinned
#   Go:         only when the machine's go is missing or too old: the toolchain module from the
#               Go module proxy (golang.org/toolchain), checked against its go.sum hash
#   test tools: chromium (Debian), schemathesis, kubernetes-validate and the Python client's
#               test libraries (PyPI, virtualenvs), helm (`go install`, Go module proxy),
#               VictoriaMetrics (the protocols' conformance test: Debian's, and for OTLP a current one
#               built with `go install` from the Go module proxy, pinned)
# Each step prints one line: what it installs and roughly how long that takes (on 2 cores).
#   VictoriaMetrics (bench-ingest's peer, the protocols' conformance test): Debian's victoria-metrics, unpacked into the cache
#   Prometheus (the PromQL conformance test's reference engine and promtool): Debian's prometheus, unpacked alike
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Copies a pom's runtime jars from Maven Central into HOME/libs (java and maven from Debian when
# missing); HOME/.complete marks a finished copy. Extra arguments go to maven.
maven_jars() { # home pom what extra-mvn-args...
  local home="$1" pom="$2" what="$3"; shift 3
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  command -v mvn >/dev/null || apt_install maven
  log "fetching $what jars from Maven Central into $home (about a minute, once)"
  rm -rf "$home"
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$home/libs" "$@" \
    >&2 || die "maven could not fetch the $what jars"
  touch "$home/.complete"
}

install_kafka() {
  [ -f "$KAFKA_HOME/.complete" ] && return 0
  maven_jars "$KAFKA_HOME" "$REPO_ROOT/deploy/local/kafka/pom.xml" "Kafka $KAFKA_VERSION" -Dkafka.version="$KAFKA_VERSION"
}

# Another apt-get (unattended upgrades, a second install) may hold the dpkg lock: wait for it
# (up to MERIDIAN_APT_LOCK_TIMEOUT seconds, default 600) instead of failing at once.
apt_get() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="${MERIDIAN_APT_LOCK_TIMEOUT:-600}" "$@"
}

apt_install() {
  [ "$(id -u)" = 0 ] || die "please install Debian packages: $* (needs root)"
  log "apt-get install $* (Debian packages: a minute or two)"
  if ! apt_get install -y -qq "$@" >/dev/null 2>&1; then
    apt_get update -qq >/dev/null
    apt_get install -y -qq "$@" >/dev/null || die "apt-get install $* failed"
  fi
}

install_clickhouse() {
  if [ -x /usr/sbin/clickhouse-server ] || command -v clickhouse-server >/dev/null; then return 0; fi
  apt_install clickhouse-server clickhouse-client
}

# The go command for go_install in $GO: the machine's when it is GO_MIN_VERSION or newer, else
# the toolchain in the cache (installed first when missing).
go_new_enough() { # go-command
  local v; v=$("$1" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}; [ "$(printf '%s\n%s\n' "$GO_MIN_VERSION" "$v" | sort -V | head -n 1)" = "$GO_MIN_VERSION" ]
}
find_go() {
  if command -v go >/dev/null && go_new_enough go; then GO=go; return 0; fi
  install_go
  GO="$GO_HOME/bin/go"
}

# Go's dirhash (the h1: of go.sum) of the files under a directory, named relative to it.
h1_of_dir() { # dir
  local hex
  hex=$(cd "$1" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | tr '\n' '\0' | xargs -0 sha256sum | sha256sum | cut -d ' ' -f 1)
  printf 'h1:%s' "$(printf '%b' "$(sed 's/../\\x&/g' <<<"$hex")" | base64)"
}

# The Go toolchain as the go command itself fetches it for GOTOOLCHAIN: the module
# golang.org/toolchain from the Go module proxy, a zip of a whole Go installation. Debian's
# golang is too old for helm and MinIO. Unpacked beside GO_HOME and moved there whole.
install_go() {
  [ -x "$GO_HOME/bin/go" ] && return 0
  local arch h1 why="no go on PATH" proxy tmp="$GO_HOME.partial"
  case "$(uname -m)" in
    x86_64) arch=amd64; h1=$GO_TOOLCHAIN_H1_AMD64 ;;
    aarch64|arm64) arch=arm64; h1=$GO_TOOLCHAIN_H1_ARM64 ;;
    *) die "no Go toolchain for $(uname -m): install Go $GO_MIN_VERSION or newer" ;;
  esac
  command -v go >/dev/null && why="the machine's $(go env GOVERSION 2>/dev/null || echo go) is older than go$GO_MIN_VERSION"
  local module="golang.org/toolchain@v0.0.1-go$GO_TOOLCHAIN_VERSION.linux-$arch"
  # The first proxy of GOPROXY (as the go command reads it), else the Go module proxy's default.
  proxy=$(tr ',|' '\n\n' <<<"${GOPROXY:-}" | grep -m 1 '^https\?://' || true)
  proxy=${proxy:-https://proxy.golang.org}
  log "installing Go $GO_TOOLCHAIN_VERSION ($why): $module from the Go module proxy, 76 MB, unpacked 230 MB into $GO_HOME (about 10-30 s, once)"
  command -v unzip >/dev/null || apt_install unzip
  rm -rf "$tmp"; mkdir -p "$tmp"
  curl -fsSL --retry 3 -o "$tmp/toolchain.zip" "$proxy/${module%@*}/@v/${module#*@}.zip" \
    || { rm -rf "$tmp"; die "could not download $module from $proxy"; }
  unzip -q "$tmp/toolchain.zip" -d "$tmp/unpacked" || { rm -rf "$tmp"; die "could not unpack $module"; }
  local got; got=$(h1_of_dir "$tmp/unpacked")
  [ "$got" = "$h1" ] || { rm -rf "$tmp"; die "$module: hash $got is not go.sum's $h1"; }
  rm -rf "$GO_HOME"; mv "$tmp/unpacked/$module" "$GO_HOME"; rm -rf "$tmp"
  "$GO_HOME/bin/go" version >&2 || die "the Go toolchain in $GO_HOME does not run"
}

# A Go program built from the Go module proxy into the cache: `go_install BIN MODULE/cmd@VERSION WHAT
# DURATION`. Built beside its final place and moved there whole, so an interrupted build leaves nothing.
go_install() {
  local bin="$1" module="$2" what="$3" duration="$4" bindir; bindir="$(dirname "$1")"
  find_go
  log "building $what with go install $module ($duration, once)"
  rm -rf "$bindir.partial"; mkdir -p "$bindir.partial"
  GOBIN="$bindir.partial" GOFLAGS=-trimpath CGO_ENABLED=0 "$GO" install "$module" || die "go install $module failed"
  rm -rf "$bindir"; mv "$bindir.partial" "$bindir"
  [ -x "$bin" ] || die "go install $module made no $(basename "$bin")"
}

install_minio() {
  [ -x "$MINIO_BIN" ] && return 0
  go_install "$MINIO_BIN" "github.com/minio/minio@$MINIO_VERSION" MinIO "about 6 minutes on 2 cores"
}

# Test tools, used by `make test` only (test/run.sh): Debian's chromium for the browser test
# (driven by playwright-core, never a browser download) and schemathesis in a virtualenv.
install_chromium() {
  [ -x /usr/bin/chromium ] && return 0
  apt_install chromium
}

# A Python tool from PyPI in its own virtualenv in the cache: `pip_venv HOME PACKAGE==VERSION DURATION`
# (or --requirement=FILE in place of PACKAGE==VERSION).
# A failed install leaves no half-made virtualenv behind (the next run starts over).
pip_venv() {
  local home="$1" requirement="$2" duration="$3"
  command -v python3 >/dev/null || apt_install python3 python3-venv
  log "installing $requirement from PyPI into $home ($duration, once)"
  rm -rf "$home"
  python3 -m venv "$home" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$home/bin/pip" install -q --disable-pip-version-check "$requirement" >&2 \
    || { rm -rf "$home"; die "pip install $requirement failed"; }
}

install_schemathesis() {
  [ -x "$SCHEMATHESIS_HOME/bin/schemathesis" ] && return 0
  pip_venv "$SCHEMATHESIS_HOME" "schemathesis==$SCHEMATHESIS_VERSION" "about 30 s"
}

# The conformance tier's current ClickHouse (`make test-modern`): no server package of a
# current release is served here, so the in-process engine chDB (PyPI chdb-core, ClickHouse
# 26.9) in a virtualenv, driven by test/modern/chdb-front.py.
install_chdb() {
  [ -x "$CHDB_HOME/bin/python" ] && "$CHDB_HOME/bin/python" -c 'import chdb' 2>/dev/null && return 0
  pip_venv "$CHDB_HOME" "chdb-core==$CHDB_VERSION" "about a minute"
}

# The Python client's tests (clients/python, run by test/e2e/python-client.e2e.test.ts): pytest and
# the pinned libraries in a virtualenv; the client itself is installed into it at test time from the
# work tree, since it changes with the repo. wheels/ gets the build backend and the runtime
# dependencies (from pip's cache, already fetched), so a fresh `pip install clients/python` is
# tested without the registry. .complete marks a finished install.
install_python_client() {
  [ -f "$PYTHON_CLIENT_HOME/.complete" ] && return 0
  pip_venv "$PYTHON_CLIENT_HOME" "--requirement=$PYTHON_CLIENT_REQUIREMENTS" "about 2 minutes"
  local offline
  offline=$(grep -E '^(hatchling|httpx|pyarrow)==' "$PYTHON_CLIENT_REQUIREMENTS")
  # shellcheck disable=SC2086
  "$PYTHON_CLIENT_HOME/bin/pip" download -q --disable-pip-version-check -d "$PYTHON_CLIENT_HOME/wheels" $offline >&2 \
    || { rm -rf "$PYTHON_CLIENT_HOME"; die "pip download of the client's wheels failed"; }
  touch "$PYTHON_CLIENT_HOME/.complete"
}

# The Helm chart's test (test/deploy): helm from the Go module proxy, and kubernetes-validate
# (PyPI), which ships the Kubernetes JSON schemas, so manifests are validated offline.
install_helm() {
  [ -x "$HELM_BIN" ] && return 0
  go_install "$HELM_BIN" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" helm "1 to 3 minutes on 2 cores"
}

install_kubernetes_validate() {
  [ -x "$KUBERNETES_VALIDATE_HOME/bin/kubernetes-validate" ] && return 0
  pip_venv "$KUBERNETES_VALIDATE_HOME" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" "about 30 s"
}

# The peer `make bench-ingest` compares against: Debian's victoria-metrics package, downloaded
# with `apt-get download` and unpacked with `dpkg-deb -x` into the cache (no root, nothing
# installed system-wide; only its single-node binary is used).
install_victoria_metrics() {
  [ -x "$VICTORIA_METRICS_BIN" ] && return 0
  log "fetching Debian's victoria-metrics package into $VICTORIA_METRICS_HOME (a few seconds, once)"
  local tmp; tmp="$(mktemp -d)"
  # A machine whose package lists were never fetched has no candidate yet: fetch them once and retry.
  if ! (cd "$tmp" && apt-get download -qq victoria-metrics >&2); then
    apt_get update -qq >/dev/null
    (cd "$tmp" && apt-get download -qq victoria-metrics >&2) || { rm -rf "$tmp"; die "apt-get download victoria-metrics failed"; }
  fi
  rm -rf "$VICTORIA_METRICS_HOME.partial"
  dpkg-deb -x "$tmp"/victoria-metrics_*.deb "$VICTORIA_METRICS_HOME.partial" || { rm -rf "$tmp"; die "dpkg-deb -x failed"; }
  rm -rf "$tmp" "$VICTORIA_METRICS_HOME"
  mv "$VICTORIA_METRICS_HOME.partial" "$VICTORIA_METRICS_HOME"
}

# The OTLP conformance test's peer (test/integration/protocols-victoria-metrics.int.test.ts):
# VictoriaMetrics built with `go install` from the Go module proxy, pinned, like MinIO.
install_victoria_metrics_otlp() {
  [ -x "$VICTORIA_METRICS_OTLP_BIN" ] && return 0
  go_install "$VICTORIA_METRICS_OTLP_BIN" \
    "github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@$VICTORIA_METRICS_OTLP_VERSION" \
    "VictoriaMetrics $VICTORIA_METRICS_OTLP_VERSION" "about a minute on 2 cores"
}

# The reference the PromQL conformance test compares Meridian with, and promtool, its client:
# Debian's prometheus package (2.42), unpacked into the cache the same way (no service started).
install_prometheus() {
  [ -x "$PROMETHEUS_BIN" ] && [ -x "$PROMTOOL_BIN" ] && return 0
  log "fetching Debian's prometheus package into $PROMETHEUS_HOME (a few seconds, once)"
  local tmp; tmp="$(mktemp -d)"
  # A machine whose package lists were never fetched knows no prometheus yet: fetch them once (root).
  if ! (cd "$tmp" && apt-get download -qq prometheus >&2 2>/dev/null); then
    [ "$(id -u)" = 0 ] && apt_get update -qq >/dev/null
    (cd "$tmp" && apt-get download -qq prometheus >&2) || { rm -rf "$tmp"; die "apt-get download prometheus failed (apt-get update first?)"; }
  fi
  rm -rf "$PROMETHEUS_HOME.partial"
  dpkg-deb -x "$tmp"/prometheus_*.deb "$PROMETHEUS_HOME.partial" || { rm -rf "$tmp"; die "dpkg-deb -x failed"; }
  rm -rf "$tmp" "$PROMETHEUS_HOME"
  mv "$PROMETHEUS_HOME.partial" "$PROMETHEUS_HOME"
}

# The cluster topology (deploy/cluster): ZooKeeper's jars from Maven Central for the ClickHouse
# replicas (own directory: Kafka's libs carry an older ZooKeeper), and Debian's haproxy in front
# of the MinIO nodes and the api instances.
install_zookeeper() {
  [ -f "$ZOOKEEPER_HOME/.complete" ] && return 0
  maven_jars "$ZOOKEEPER_HOME" "$REPO_ROOT/deploy/cluster/zookeeper/pom.xml" "ZooKeeper $ZOOKEEPER_VERSION" \
    -Dzookeeper.version="$ZOOKEEPER_VERSION" -DexcludeClassifiers=linux-aarch_64,osx-x86_64,osx-aarch_64,windows-x86_64
}

install_haproxy() {
  command -v haproxy >/dev/null && return 0
  apt_install haproxy
}

install_cluster() {
  install_all
  install_zookeeper
  install_haproxy
}

install_test_tools() {
  install_chromium
  install_schemathesis
  install_helm
  install_kubernetes_validate
  install_python_client
  install_victoria_metrics
  install_victoria_metrics_otlp
  install_prometheus
}

install_all() {
  install_kafka
  install_clickhouse
  install_minio
}

# Sourced (a test calls go_install itself): the functions only.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-all}" in
  all) with_cache_lock install_all ;;
  go) with_cache_lock find_go ;;
  kafka|clickhouse|minio|chromium|schemathesis|chdb|helm|kubernetes-validate|python-client|victoria-metrics|victoria-metrics-otlp|prometheus|zookeeper|haproxy|cluster) with_cache_lock "install_${1//-/_}" ;;
  test-tools) with_cache_lock install_test_tools ;;
  *) die "usage: install.sh [all|cluster|zookeeper|haproxy|kafka|clickhouse|minio|go|chromium|schemathesis|chdb|helm|kubernetes-validate|python-client|victoria-metrics|victoria-metrics-otlp|prometheus|test-tools]" ;;
esac
