import { defineConfig } from 'vitest/config';

/**
 * Three tiers, told apart by file name:
 *   *.unit.test.ts  pure code, no I/O, next to the code it tests
 *   *.int.test.ts   one adapter against its real service (test/integration)
 *   *.e2e.test.ts   the apps together against the real stack (test/e2e)
 *   *.hostile.test.ts hostile and runaway input against the whole stack (test/hostile), run alone
 *   *.fuzz.test.ts  every route's requests cut, aborted and mangled at the byte level (test/fuzz), run alone
 *   *.fault.test.ts crashes and outages (test/fault), run alone after the others
 *   *.deploy.test.ts the Helm chart rendered and validated offline (test/deploy), helm and kubernetes-validate
 *   *.local.test.ts the local deploy scripts themselves (test/local): `make run` on a private stack, install.sh's Go
 *   *.cluster.test.ts kill -9 of each process of the cluster topology (test/cluster, `make test-cluster`)
 * The `modern` project runs the ClickHouse adapter's integration tests again against current
 * ClickHouse (26.9, the chDB front of test/modern) instead of the local 18.16 server.
 * Integration, e2e, hostile, fuzz and fault share a global setup that finds or starts the stack.
 */
const stackSetup = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    reporters: ['default'],
    projects: [
      { test: { name: 'unit', include: ['libs/**/*.unit.test.ts', 'apps/**/*.unit.test.ts', 'test/unit/**/*.unit.test.ts'] } },
      // The Helm chart rendered and validated offline: needs helm and kubernetes-validate
      // (deploy/local/install.sh test-tools), no service.
      { test: { name: 'deploy', include: ['test/deploy/**/*.deploy.test.ts'], testTimeout: 60_000 } },
      // deploy/local's scripts on a private stack and a temporary cache (own MERIDIAN_VAR, free
      // ports): they start Kafka, ClickHouse and MinIO themselves, so test/run.sh runs them alone.
      { test: { name: 'local', include: ['test/local/**/*.local.test.ts'], testTimeout: 300_000, hookTimeout: 900_000, fileParallelism: false } },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.int.test.ts'],
          globalSetup: stackSetup,
          setupFiles: ['test/support/setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.e2e.test.ts'],
          globalSetup: stackSetup,
          setupFiles: ['test/support/setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          // e2e files start whole apps: one file at a time keeps the 2-core machine honest.
          fileParallelism: false,
        },
      },
      {
        test: {
          // Bombs, floods and slow clients against real api and ingest processes: test/run.sh runs
          // them alone, after e2e, so their loads and time checks meet no other test's.
          name: 'hostile',
          include: ['test/hostile/**/*.hostile.test.ts'],
          globalSetup: stackSetup,
          setupFiles: ['test/support/setup.ts'],
          // A case is cut at 150 s (test/hostile/report.ts); its checks after it may restart a dead app.
          testTimeout: 240_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // Every route of the OpenAPI document sent cut, aborted and mangled over raw sockets to
          // one api process that must outlive them all: test/run.sh runs it alone, after hostile.
          name: 'fuzz',
          include: ['test/fuzz/**/*.fuzz.test.ts'],
          globalSetup: stackSetup,
          setupFiles: ['test/support/setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // Conformance to current ClickHouse: the adapter's tests on the chDB front (`make test-modern`).
          // One front serves one query at a time, so the files run one after another.
          name: 'modern',
          include: [
            'test/integration/attach-partition.int.test.ts',
            'test/integration/catalog-families.int.test.ts',
            'test/integration/points-stages.int.test.ts',
            'test/integration/clickhouse.int.test.ts',
            'test/integration/deletions.int.test.ts',
            'test/integration/generation-layout.int.test.ts',
            'test/integration/rollup-deletions.int.test.ts',
            'test/integration/rollup-seals.int.test.ts',
            'test/integration/rollup-seal-marks.int.test.ts',
            'test/integration/download.int.test.ts',
            'test/integration/projector.int.test.ts',
            'test/integration/promql.int.test.ts',
            'test/integration/rollups.int.test.ts',
            'test/integration/tasks-read-model.int.test.ts',
            'test/modern/**/*.modern.test.ts',
          ],
          globalSetup: ['test/modern/global-setup.ts'],
          setupFiles: ['test/support/setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // The cluster's fault tier (`make test-cluster`, never part of `make test`): it needs the
          // whole topology of deploy/cluster up (the make target starts and stops it) and its env.
          name: 'cluster',
          include: ['test/cluster/**/*.cluster.test.ts'],
          testTimeout: 3_600_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          // Fault tests kill workers and stop services: test/run.sh runs them alone, after the rest.
          name: 'fault',
          include: ['test/fault/**/*.fault.test.ts'],
          globalSetup: stackSetup,
          setupFiles: ['test/support/setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
