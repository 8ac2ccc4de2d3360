#!/usr/bin/env bash
# `make test`: provisions and starts the local stack (unless endpoints are given in the
# environment), runs the typecheck, the lint and every test tier (the modern tier against ClickHouse 26.9 too) against the real services, stops
# what it started, and ends with the line `N passed, N failed` from vitest's own results.
set -uo pipefail
cd "$(dirname "$0")/.."
source deploy/local/lib.sh
mkdir -p "$MERIDIAN_VAR"
results="$MERIDIAN_VAR/test-results.json"
e2e_results="$MERIDIAN_VAR/test-results-e2e.json"
hostile_results="$MERIDIAN_VAR/test-results-hostile.json"
fuzz_results="$MERIDIAN_VAR/test-results-fuzz.json"
fault_results="$MERIDIAN_VAR/test-results-fault.json"
modern_results="$MERIDIAN_VAR/test-results-modern.json"
local_results="$MERIDIAN_VAR/test-results-local.json"
rm -f "$results" "$e2e_results" "$hostile_results" "$fuzz_results" "$fault_results" "$modern_results" "$local_results"

# No test ran: CI still ends on the summary line, the setup counted as the one failure.
setup_failed() { echo "$1; no test ran"; echo "0 passed, 1 failed"; exit 1; }

# Only the services this run starts are stopped at the end.
started=""
if [ -z "${KAFKA_BROKERS:-}" ]; then
  rm -f "$MERIDIAN_VAR/test-started"
  STACK_STARTED_FILE="$MERIDIAN_VAR/test-started" deploy/local/stack.sh up || setup_failed "the local stack did not start"
  started=$(awk '{print $1}' "$MERIDIAN_VAR/test-started" 2>/dev/null)
  eval "$(deploy/local/stack.sh env)"
  # Our own local stack: fault tests may stop and start its services.
  export MERIDIAN_STACK_IS_LOCAL=1
fi
# shellcheck disable=SC2086
cleanup() { if [ -n "$started" ]; then deploy/local/stack.sh down $started; started=""; fi; }
trap cleanup EXIT

# The browser test's chromium (Debian), the fuzz step's schemathesis (PyPI, in a virtualenv
# in the cache) and the Helm chart test's helm (Go module proxy) and kubernetes-validate (PyPI):
# installed once, idempotently.
deploy/local/install.sh test-tools || setup_failed "the test tools could not be installed"
# The conformance tier's current ClickHouse: chdb-core (PyPI) in a virtualenv in the cache.
deploy/local/install.sh chdb || setup_failed "chDB could not be installed"

echo "== typecheck"
npx tsc -p tsconfig.json; typecheck_rc=$?

# Lint (make lint: ESLint, then the formatter's check): its failure is one failure in the summary, and the tests still run.
echo "== lint"
npx eslint --max-warnings 0 . && npm run -s format:check; lint_rc=$?

echo "== tests (unit, integration, deploy)"
npx vitest run --project unit --project integration --project deploy --reporter=default --reporter=json --outputFile.json="$results"; tests_rc=$?

# The local deploy scripts themselves: `make run` stopped and started again on a private stack
# (own MERIDIAN_VAR and free ports: the stack above is not touched) and install.sh's Go toolchain
# where go is hidden (Go module proxy). They start services, so they run alone.
echo "== local deploy scripts (make run twice on a private stack, install.sh without Go)"
npx vitest run --project local --reporter=default --reporter=json --outputFile.json="$local_results"; local_rc=$?

# The ClickHouse adapter's tests again on current ClickHouse (26.9, chDB behind a test-only
# HTTP front): tests the front cannot serve are skipped with the reason in their names.
echo "== modern tests (ClickHouse 26.9 over chDB)"
npx vitest run --project modern --reporter=default --reporter=json --outputFile.json="$modern_results"; modern_rc=$?

# e2e tests start whole apps and hold them to time limits (a revoked key refused within one
# second): they run on their own, not beside the integration tests' load.
echo "== e2e tests"
npx vitest run --project e2e --reporter=default --reporter=json --outputFile.json="$e2e_results"; e2e_rc=$?

# Hostile tests send bombs and floods to real api and ingest processes and hold them to time
# limits (/healthz within 100 ms after each case): alone, after e2e. They print a table of case → outcome.
echo "== hostile tests"
npx vitest run --project hostile --reporter=default --reporter=json --outputFile.json="$hostile_results"; hostile_rc=$?

# The request fuzz tier cuts, aborts and mangles a valid request of every route over raw sockets
# against one api process that must outlive them all: alone, after hostile. It prints a table
# of route → cases → outcomes by status → restarts (and any crash's reproduction).
echo "== fuzz tests (requests cut, aborted and mangled)"
npx vitest run --project fuzz --reporter=default --reporter=json --outputFile.json="$fuzz_results"; fuzz_rc=$?

# Fault tests stop services and kill workers, so nothing else may run beside them.
echo "== fault tests"
npx vitest run --project fault --reporter=default --reporter=json --outputFile.json="$fault_results"; fault_rc=$?

# The last line is `N passed, N failed`, summed from vitest's own JSON reports. A tier that
# wrote no report (it could not start) counts as one failure, named above the line.
summary=$(LINT_RC=$lint_rc node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  if (process.env.LINT_RC !== "0") { console.log("FAILED make lint: ESLint or Prettier reported problems (see == lint above)"); failed += 1; }
  for (const f of process.argv.slice(1)) {
    if (!fs.existsSync(f)) { console.log(`no test report ${f}: that tier did not run`); failed += 1; continue; }
    const r = JSON.parse(fs.readFileSync(f, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests + r.numTodoTests;
    // CI shows only the tail of the log: name each failure here, next to the count.
    for (const file of r.testResults) {
      const failures = file.assertionResults.filter((t) => t.status === "failed");
      // A file that failed outside any test (it did not load, a hook threw) counts as one failure.
      if (failures.length === 0 && file.status === "failed") {
        console.log(`FAILED ${file.name}: ${(file.message || "").split("\n")[0]}`);
        failed += 1;
      }
      for (const t of failures) console.log(`FAILED ${file.name} > ${t.fullName}: ${(t.failureMessages[0] || "").split("\n")[0]}`);
      // A skipped test proved nothing: named here, with the reason its name carries.
      for (const t of file.assertionResults.filter((t) => ["pending", "skipped", "todo"].includes(t.status))) console.log(`SKIPPED ${file.name} > ${t.fullName}`);
    }
  }
  if (skipped) console.log(`${skipped} skipped (not counted as passed)`);
  console.log(`${passed} passed, ${failed} failed`);
' "$results" "$local_results" "$modern_results" "$e2e_results" "$hostile_results" "$fuzz_results" "$fault_results")
[ $typecheck_rc -ne 0 ] && echo "typecheck failed"
cleanup; trap - EXIT
echo "$summary"
[ $typecheck_rc -eq 0 ] && [ $lint_rc -eq 0 ] && [ $tests_rc -eq 0 ] && [ $local_rc -eq 0 ] && [ $modern_rc -eq 0 ] && [ $e2e_rc -eq 0 ] && [ $hostile_rc -eq 0 ] && [ $fuzz_rc -eq 0 ] && [ $fault_rc -eq 0 ]
