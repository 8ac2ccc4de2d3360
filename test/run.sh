#!/usr/bin/env bash
# `make test`: provisions and starts the local stack (unless endpoints are given in the
# environment), runs the typecheck and every test tier against the real services, stops
# what it started, and ends with the line `N passed, N failed` from vitest's own results.
set -uo pipefail
cd "$(dirname "$0")/.."
source deploy/local/lib.sh
mkdir -p "$MERIDIAN_VAR"
results="$MERIDIAN_VAR/test-results.json"
fault_results="$MERIDIAN_VAR/test-results-fault.json"
rm -f "$results" "$fault_results"

# Only the services this run starts are stopped at the end.
started=""
if [ -z "${KAFKA_BROKERS:-}" ]; then
  started=$(deploy/local/stack.sh status | awk '$2 == "stopped" {print $1}')
  deploy/local/stack.sh up || exit 1
  eval "$(deploy/local/stack.sh env)"
  # Our own local stack: fault tests may stop and start its services.
  export MERIDIAN_STACK_IS_LOCAL=1
fi
# shellcheck disable=SC2086
cleanup() { if [ -n "$started" ]; then deploy/local/stack.sh down $started; started=""; fi; }
trap cleanup EXIT

# The browser test's chromium (Debian) and the fuzz step's schemathesis (PyPI, in a virtualenv
# in the cache): installed once, idempotently.
deploy/local/install.sh test-tools || exit 1

echo "== typecheck"
npx tsc -p tsconfig.json; typecheck_rc=$?

echo "== tests (unit, integration, e2e)"
npx vitest run --project unit --project integration --project e2e --reporter=default --reporter=json --outputFile.json="$results"; tests_rc=$?

# Fault tests stop services and kill workers, so nothing else may run beside them.
echo "== fault tests"
npx vitest run --project fault --reporter=default --reporter=json --outputFile.json="$fault_results"; fault_rc=$?

summary=""
if [ -f "$results" ] && [ -f "$fault_results" ]; then
  summary=$(node -e '
    const fs = require("fs");
    const runs = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
    const sum = (k) => runs.reduce((n, r) => n + r[k], 0);
    const skipped = sum("numPendingTests") + sum("numTodoTests");
    console.log(`${sum("numPassedTests")} passed, ${sum("numFailedTests")} failed` + (skipped ? `, ${skipped} skipped` : ""));
  ' "$results" "$fault_results")
fi
[ $typecheck_rc -ne 0 ] && echo "typecheck failed"
cleanup; trap - EXIT
[ -n "$summary" ] && echo "$summary"
[ $typecheck_rc -eq 0 ] && [ $tests_rc -eq 0 ] && [ $fault_rc -eq 0 ] && [ -n "$summary" ]
