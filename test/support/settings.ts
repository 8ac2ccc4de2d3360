import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadSettings, type Settings } from '@meridian/config';

/**
 * Settings for one isolated piece of a test run: its own topic prefix, ClickHouse database
 * and bucket, all under the run id, so tests and runs never see each other's data.
 */
export function isolatedSettings(overrides: Record<string, string> = {}): Settings {
  const stack = inject('stack');
  const scope = `${stack.RUN_ID}${randomBytes(3).toString('hex')}`;
  return loadSettings({
    KAFKA_BROKERS: stack.KAFKA_BROKERS,
    CLICKHOUSE_URL: stack.CLICKHOUSE_URL,
    CLICKHOUSE_USER: stack.CLICKHOUSE_USER,
    CLICKHOUSE_PASSWORD: stack.CLICKHOUSE_PASSWORD,
    S3_ENDPOINT: stack.S3_ENDPOINT,
    S3_ACCESS_KEY: stack.S3_ACCESS_KEY,
    S3_SECRET_KEY: stack.S3_SECRET_KEY,
    MERIDIAN_TOPIC_PREFIX: `${scope}.`,
    CLICKHOUSE_DATABASE: `test_${scope}`,
    S3_BUCKET: `test-${scope}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...stack.TOPOLOGY,
    ...overrides,
  });
}

/** The settings as environment variables, for spawning an app as a child process. */
export function settingsEnv(settings: Settings): Record<string, string> {
  return Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, String(v)]));
}
