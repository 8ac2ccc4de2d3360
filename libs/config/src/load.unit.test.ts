import { describe, expect, it } from 'vitest';
import { ConfigError, loadSettings } from './load.ts';
import { settingDefinitions } from './settings.ts';

describe('loadSettings', () => {
  it('fills every setting from its documented default when the environment is empty', () => {
    const settings = loadSettings({});
    expect(Object.keys(settings).sort()).toEqual(Object.keys(settingDefinitions).sort());
    expect(settings.MERIDIAN_API_PORT).toBe(8088);
    expect(settings.KAFKA_BROKERS).toBe('127.0.0.1:19092');
    expect(settings.MERIDIAN_DEV_LOGS).toBe(false);
  });

  it('coerces numbers and booleans from strings', () => {
    const settings = loadSettings({ MERIDIAN_API_PORT: '9999', MERIDIAN_DEV_LOGS: 'true' });
    expect(settings.MERIDIAN_API_PORT).toBe(9999);
    expect(settings.MERIDIAN_DEV_LOGS).toBe(true);
  });

  it('reports every invalid variable at once, by name', () => {
    let error: unknown;
    try {
      loadSettings({ MERIDIAN_API_PORT: '70000', KAFKA_BROKERS: 'no port here', CLICKHOUSE_DATABASE: 'x; DROP' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(3);
    expect(problems.join('\n')).toMatch(/MERIDIAN_API_PORT="70000"/);
    expect(problems.join('\n')).toMatch(/KAFKA_BROKERS/);
    expect(problems.join('\n')).toMatch(/CLICKHOUSE_DATABASE/);
  });

  it('never prints the value of a secret in its error', () => {
    expect(() => loadSettings({ S3_SECRET_KEY: ' ', CLICKHOUSE_PASSWORD: 'ok' })).not.toThrow();
    try {
      loadSettings({ MERIDIAN_API_PORT: 'x', S3_BUCKET: 'UPPER' });
    } catch (e) {
      expect((e as Error).message).not.toMatch(/meridian-local-secret/);
    }
  });

  it('takes a cursor secret of at least 32 characters, or none; refuses a shorter one without printing it', () => {
    expect(loadSettings({}).MERIDIAN_CURSOR_SECRET).toBe('');
    expect(loadSettings({ MERIDIAN_CURSOR_SECRET: 'x'.repeat(32) }).MERIDIAN_CURSOR_SECRET).toBe('x'.repeat(32));
    expect(() => loadSettings({ MERIDIAN_CURSOR_SECRET: 'too-short-secret' })).toThrow(/MERIDIAN_CURSOR_SECRET/);
    expect(() => loadSettings({ MERIDIAN_CURSOR_SECRET: 'too-short-secret' })).not.toThrow(/too-short-secret/);
  });

  it('takes a min.insync.replicas up to the replication factor and refuses one above it, naming both', () => {
    expect(loadSettings({})).toMatchObject({ KAFKA_REPLICATION_FACTOR: 1, KAFKA_MIN_INSYNC_REPLICAS: 1 });
    expect(loadSettings({ KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: '2' })).toMatchObject({
      KAFKA_REPLICATION_FACTOR: 3,
      KAFKA_MIN_INSYNC_REPLICAS: 2,
    });
    expect(loadSettings({ KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: '3' }).KAFKA_MIN_INSYNC_REPLICAS).toBe(3);
    expect(() => loadSettings({ KAFKA_MIN_INSYNC_REPLICAS: '2' })).toThrow(ConfigError);
    expect(() => loadSettings({ KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: '4' })).toThrow(
      /KAFKA_MIN_INSYNC_REPLICAS: at most KAFKA_REPLICATION_FACTOR/,
    );
  });

  it("refuses a request bound below one partition's", () => {
    expect(() => loadSettings({ MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST: '500000' })).toThrow(
      /MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION: at most MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST/,
    );
  });

  it('refuses staged uploads on a cluster (a replicated points table)', () => {
    expect(() => loadSettings({ MERIDIAN_UPLOAD_STAGING: 'on', CLICKHOUSE_CLUSTER: 'c1' })).toThrow(
      /MERIDIAN_UPLOAD_STAGING: not on when CLICKHOUSE_CLUSTER is set/,
    );
    expect(loadSettings({ MERIDIAN_UPLOAD_STAGING: 'on' }).MERIDIAN_UPLOAD_STAGING).toBe('on');
    // auto with a cluster is allowed: the worker then stages nothing (apps/ingest/src/worker.ts).
    expect(loadSettings({ CLICKHOUSE_CLUSTER: 'c1' }).MERIDIAN_UPLOAD_STAGING).toBe('auto');
    expect(loadSettings({}).MERIDIAN_UPLOAD_STAGING).toBe('auto');
  });

  it('refuses a stage ttl below the upload time budget', () => {
    expect(() => loadSettings({ MERIDIAN_STAGE_TTL_MS: '1000' })).toThrow(/MERIDIAN_STAGE_TTL_MS: at least MERIDIAN_UPLOAD_TIME_BUDGET_MS/);
    expect(loadSettings({ MERIDIAN_STAGE_TTL_MS: '1000', MERIDIAN_UPLOAD_TIME_BUDGET_MS: '1000' }).MERIDIAN_STAGE_TTL_MS).toBe(1000);
  });

  it('refuses a blob removal lease under four read-model waits, and a claim TTL under the upload time budget', () => {
    expect(() => loadSettings({ MERIDIAN_BLOB_REMOVAL_LEASE_MS: '39999' })).toThrow(
      /MERIDIAN_BLOB_REMOVAL_LEASE_MS: at least 4 × MERIDIAN_FILES_READ_MODEL_WAIT_MS/,
    );
    expect(loadSettings({ MERIDIAN_BLOB_REMOVAL_LEASE_MS: '40000' }).MERIDIAN_BLOB_REMOVAL_LEASE_MS).toBe(40_000);
    expect(() => loadSettings({ MERIDIAN_BLOB_CLAIM_TTL_MS: '3599999' })).toThrow(/MERIDIAN_BLOB_CLAIM_TTL_MS: at least MERIDIAN_UPLOAD_TIME_BUDGET_MS/);
  });

  it("refuses a storage part size too small for the largest upload in 10,000 parts, or below S3's 5 MiB", () => {
    expect(() => loadSettings({ MERIDIAN_MAX_UPLOAD_BYTES: String(10_000 * 8388608 + 1) })).toThrow(
      /MERIDIAN_STORAGE_PART_BYTES: at least MERIDIAN_MAX_UPLOAD_BYTES \/ 10,000/,
    );
    expect(loadSettings({ MERIDIAN_MAX_UPLOAD_BYTES: String(10_000 * 8388608) }).MERIDIAN_STORAGE_PART_BYTES).toBe(8388608);
    expect(() => loadSettings({ MERIDIAN_STORAGE_PART_BYTES: String(5 * 1024 * 1024 - 1) })).toThrow(/MERIDIAN_STORAGE_PART_BYTES/);
  });

  it('refuses a budget of bodies in flight smaller than a body the routes accept', () => {
    expect(loadSettings({}).MERIDIAN_BODY_BYTES_IN_FLIGHT).toBeGreaterThanOrEqual(loadSettings({}).MERIDIAN_MAX_JSON_BODY_BYTES);
    expect(() => loadSettings({ MERIDIAN_BODY_BYTES_IN_FLIGHT: String(8 * 1024 * 1024) })).toThrow(
      /MERIDIAN_BODY_BYTES_IN_FLIGHT: at least MERIDIAN_MAX_JSON_BODY_BYTES and MERIDIAN_PUSH_MAX_BYTES/,
    );
    expect(() =>
      loadSettings({ MERIDIAN_BODY_BYTES_IN_FLIGHT: '2097152', MERIDIAN_MAX_JSON_BODY_BYTES: '1048576', MERIDIAN_PUSH_MAX_BYTES: '4194304' }),
    ).toThrow(/MERIDIAN_BODY_BYTES_IN_FLIGHT/);
    expect(loadSettings({ MERIDIAN_BODY_BYTES_IN_FLIGHT: '1048576', MERIDIAN_MAX_JSON_BODY_BYTES: '1048576' }).MERIDIAN_BODY_BYTES_IN_FLIGHT).toBe(1048576);
  });

  it('checks the rules between settings only once each setting is valid on its own', () => {
    expect(() => loadSettings({ KAFKA_REPLICATION_FACTOR: '0', KAFKA_MIN_INSYNC_REPLICAS: '2' })).toThrow(/KAFKA_REPLICATION_FACTOR="0"/);
  });

  it('returns a frozen object', () => {
    expect(Object.isFrozen(loadSettings({}))).toBe(true);
  });
});
