#!/usr/bin/env bash
# `make test`: provisions and starts the local stack (unless endpoints are given in the
# environment), runs the typecheck and every test tier against the real services, stops
# what it started, and ends with the line `N passed, N failed` from vitest's own results.
set -uo pipefail
cd "$(dirname "$0")/.."
source deploy/local/lib.sh
mkdir -p "$MERIDIAN_VAR"
results="$MERIDIAN_VAR/test-results.json"
rm -f "$results"

# Only the services this run starts are stopped at the end.
started=""
if [ -z "${KAFKA_BROKERS:-}" ]; then
  started=$(deploy/local/stack.sh status | awk '$2 == "stopped" {print $1}')
  deploy/local/stack.sh up || exit 1
  eval "$(deploy/local/stack.sh env)"
fi
# shellcheck disable=SC2086
cleanup() { if [ -n "$started" ]; then deploy/local/stack.sh down $started; started=""; fi; }
trap cleanup EXIT

echo "== typecheck"
npx tsc -p tsconfig.json; typecheck_rc=$?

echo "== tests (unit, integration, e2e)"
npx vitest run --reporter=default --reporter=json --outputFile.json="$results"; tests_rc=$?

summary=""
if [ -f "$results" ]; then
  summary=$(node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const skipped = r.numPendingTests + r.numTodoTests;
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (skipped ? `, ${skipped} skipped` : ""));
  ' "$results")
fi
[ $typecheck_rc -ne 0 ] && echo "typecheck failed"
cleanup; trap - EXIT
[ -n "$summary" ] && echo "$summary"
[ $typecheck_rc -eq 0 ] && [ $tests_rc -eq 0 ] && [ -n "$summary" ]
