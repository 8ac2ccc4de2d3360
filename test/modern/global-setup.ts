import type { TestProject } from 'vitest/node';
import stackSetup from '../support/global-setup.ts';
import type { StackEndpoints } from '../support/endpoints.ts';
import { startChdbFront } from './chdb-process.ts';

/**
 * The conformance tier's setup: Kafka and MinIO as for the integration tier (environment or
 * local stack), ClickHouse replaced by the test-only HTTP front over chDB (ClickHouse 26.9
 * in-process, test/modern/chdb-front.py) on a free loopback port, with its own data directory.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const front = await startChdbFront();
  const stop = await stackSetup({
    provide: (key: 'stack', value: StackEndpoints) =>
      project.provide(key, {
        ...value,
        CLICKHOUSE_URL: front.url,
        CLICKHOUSE_USER: 'default',
        CLICKHOUSE_PASSWORD: '',
        CLICKHOUSE_FRONT: 'chdb',
      }),
  } as unknown as TestProject);
  return async () => {
    await front.stop();
    await stop();
  };
}
