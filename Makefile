# Meridian. The two commands: `make run` and `make test`. See README.md and docs/ (`make docs`).
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Node >= 22: the machine's when new enough, else Node 24 from the npm registry, cached.
NODE_BIN_DIR := $(shell deploy/local/node.sh)
ifneq ($(strip $(NODE_BIN_DIR)),)
export PATH := $(NODE_BIN_DIR):$(PATH)
endif
STACK := deploy/local/stack.sh
CLUSTER := deploy/cluster/cluster.sh

.PHONY: help run test deps typecheck lint docs cli-package stack-up stack-down stack-status stack-logs stack-reset test-unit test-deploy test-local test-modern bench-ingest bench-ingest-json bench-push bench-download bench-replay bench-rollups bench-json-ack bench-receive bench-query bench-history bench-storage cluster-up cluster-down cluster-status test-cluster-seed test-cluster

help:
	@echo "make run          start the local stack, api and ingest in the foreground (Ctrl-C stops them)"
	@echo "make test         provision the stack and run unit, integration, e2e, hostile, fuzz and fault tests"
	@echo "make stack-up | stack-down | stack-status | stack-logs | stack-reset"
	@echo "make cluster-up | cluster-down | cluster-status   the cluster topology on one machine (deploy/cluster/cluster.sh)"
	@echo "make test-cluster-seed   the seed's acceptance (uploads, downloads, files, tasks) against the cluster's services"
	@echo "make test-cluster        kill -9 of each cluster process during a 1M-point ingest; starts and stops the cluster (not in make test)"
	@echo "make test-unit    only the pure unit tests (no services)"
	@echo "make test-deploy  the Helm chart rendered and validated against the Kubernetes schemas (no services)"
	@echo "make test-local   make run stopped and started again on a private stack; install.sh where go is missing"
	@echo "make test-modern  the ClickHouse adapter's tests against ClickHouse 26.9 (chDB, in-process, behind a test-only HTTP front)"
	@echo "make cli-package  the meridian command as an npm package (.var/cli-package/meridian-cli-VERSION.tgz): npm install -g it"
	@echo "make typecheck    tsc over the whole workspace"
	@echo "make lint         ESLint: type-aware checks and the layering (eslint.config.js); part of make test"
	@echo "make docs         the docs site (VitePress) from docs/ into docs/.vitepress/dist; fails on a dead link"
	@echo "make bench-ingest | bench-download | bench-replay | bench-json-ack   benchmarks against the local stack, with their baselines"
	@echo "make bench-receive  the api alone receiving a 10M-point download-layout file and 1 GB: ack time, MB/s, RSS, CPU (BENCH_API_ROOTS=../other-checkout,. compares)"
	@echo "make bench-rollups  10M points over a year: the rollup views' insert cost, every 1m and 1h bucket against the raw points, a year at 1h via the api"
	@echo "make bench-query    PromQL p50/p99 beside VictoriaMetrics on the same 10M points (BENCH_POINTS, BENCH_REPEAT for smaller runs)"
	@echo "make bench-ingest-json  the JSON case of bench-ingest alone (with its ClickHouse baseline of BENCH_POINTS rows)"
	@echo "make bench-push   small pushes from 4 and 64 producers, Meridian beside VictoriaMetrics in one table (BENCH_POINTS BENCH_CASES BENCH_RUNS)"
	@echo "make bench-storage  bytes a point on disk (each Kafka topic, each ClickHouse table, points on ClickHouse 26.9 too) and CPU a million points, before and after compression, beside VictoriaMetrics (BENCH_POINTS BENCH_SERIES BENCH_CODECS)"
	@echo "make bench-history  a new api and ingest on a log of 0, 100k and 1M tasks: ready time, RSS, lookup p99, against the goals"
	@echo "                    (BENCH_HISTORY_SIZES=0,100000,1000000 BENCH_HISTORY_FILES=100000 BENCH_HISTORY_USERS=1000)"

# npm ci only when the lockfile or a patch of a dependency changed since the last install.
node_modules/.installed: package-lock.json $(wildcard patches/*.patch)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@
deps: node_modules/.installed

# The meridian command as an npm package that installs without this repository (apps/cli/package/build.ts).
cli-package: deps
	@node apps/cli/package/build.ts .var/cli-package

typecheck: deps
	npx tsc -p tsconfig.json

# The same commands test/run.sh runs before the tests: ESLint, then Prettier's check (npm run format rewrites).
lint: deps
	npx eslint --max-warnings 0 .
	npm run -s format:check

run: deps
	@deploy/local/run.sh

# The docs site: the API reference's routes rendered from the OpenAPI document (built from the
# routes, no service needed), then VitePress, which fails the build on a link to a missing page.
docs: deps
	node docs/.vitepress/api-reference.ts
	npx vitepress build docs

test: deps
	@test/run.sh

test-unit: deps
	npx vitest run --project unit

# The Helm chart (deploy/helm): rendered with helm and validated offline with kubernetes-validate.
test-deploy: deps
	@deploy/local/install.sh helm && deploy/local/install.sh kubernetes-validate
	npx vitest run --project deploy

# deploy/local's scripts on their own private stack and a temporary cache (test/local).
test-local: deps
	@deploy/local/install.sh all
	npx vitest run --project local

# Conformance to current ClickHouse: Kafka and MinIO from the local stack, ClickHouse replaced by
# chDB (chdb-core from PyPI, installed once into the cache) behind test/modern/chdb-front.py.
test-modern: deps stack-up
	@deploy/local/install.sh chdb
	@eval "$$($(STACK) env)" && npx vitest run --project modern --reporter=verbose

stack-up:
	@$(STACK) up
stack-down:
	@$(STACK) down
stack-status:
	@$(STACK) status
stack-logs:
	@$(STACK) logs
stack-reset:
	@$(STACK) reset

# The cluster topology (3 Kafka brokers, ZooKeeper + 2 ClickHouse replicas, 4 MinIO nodes, haproxy,
# 2 api, 2 ingest). `deploy/cluster/cluster.sh up services` starts it without the apps (tests start their own).
cluster-up: deps
	@$(CLUSTER) up
cluster-down:
	@$(CLUSTER) down
cluster-status:
	@$(CLUSTER) status

# The seed's acceptance against the cluster: the tests start their own api and ingest on the
# cluster's services and settings (cluster.sh env). The cluster stays up: `make cluster-down`.
test-cluster-seed: deps
	@$(CLUSTER) up services
	@eval "$$($(CLUSTER) env)" && npx vitest run --project e2e test/e2e/uploads.e2e.test.ts test/e2e/downloads.e2e.test.ts \
	  test/e2e/files.e2e.test.ts test/e2e/catalog.e2e.test.ts test/e2e/contract.e2e.test.ts test/e2e/task-wait.e2e.test.ts

# The fault tier on the cluster: brings the whole topology up (apps included), kills one process
# at a time during a 1M-point ingest (test/cluster), prints the table, and stops the cluster
# whatever the outcome. Not part of `make test`: on CI's 2 cores it takes longer than the rest together.
test-cluster: deps
	@$(CLUSTER) up || { echo "test-cluster needs the cluster topology: see $(CLUSTER) logs"; $(CLUSTER) down; exit 1; }
	@eval "$$($(CLUSTER) env)" && npx vitest run --project cluster --reporter=verbose; rc=$$?; $(CLUSTER) down; exit $$rc

# Benchmarks: figures and ratios against a baseline measured in the same run (not tests).
bench-ingest: deps stack-up
	@deploy/local/install.sh victoria-metrics
	@eval "$$($(STACK) env)" && VICTORIA_METRICS_BIN="$$(. deploy/local/lib.sh && echo "$$VICTORIA_METRICS_BIN")" node test/bench/ingest.ts

bench-ingest-json: deps stack-up
	@eval "$$($(STACK) env)" && BENCH_ONLY=json node test/bench/ingest.ts

bench-push: deps stack-up
	@deploy/local/install.sh victoria-metrics
	@eval "$$($(STACK) env)" && VICTORIA_METRICS_BIN="$$(. deploy/local/lib.sh && echo "$$VICTORIA_METRICS_BIN")" node test/bench/push.ts

bench-download: deps stack-up
	@deploy/local/install.sh python-client
	@eval "$$($(STACK) env)" && BENCH_PYTHON="$$(. deploy/local/lib.sh && echo "$$PYTHON_CLIENT_HOME")/bin/python" node test/bench/download.ts

bench-replay: deps stack-up
	@eval "$$($(STACK) env)" && node test/bench/replay.ts

# Rollups: insert cost of their views, every bucket against the raw points, a year at 1h through the api.
bench-rollups: deps stack-up
	@eval "$$($(STACK) env)" && node test/bench/rollups.ts

bench-json-ack: deps stack-up
	@eval "$$($(STACK) env)" && node test/bench/json-ack.ts

bench-receive: deps stack-up
	@eval "$$($(STACK) env)" && node test/bench/receive.ts

bench-query: deps stack-up
	@deploy/local/install.sh victoria-metrics
	@eval "$$($(STACK) env)" && VICTORIA_METRICS_BIN="$$(. deploy/local/lib.sh && echo "$$VICTORIA_METRICS_BIN")" node test/bench/query.ts

# Whether a process gets slower or bigger with the log's age: N tasks written straight to the log.
bench-storage: deps stack-up
	@deploy/local/install.sh victoria-metrics
	@deploy/local/install.sh chdb
	@eval "$$($(STACK) env)" && VICTORIA_METRICS_BIN="$$(. deploy/local/lib.sh && echo "$$VICTORIA_METRICS_BIN")" node test/bench/storage.ts

bench-history: deps stack-up
	@eval "$$($(STACK) env)" && node test/bench/history.ts
