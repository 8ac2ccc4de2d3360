import { loadSettings } from '@meridian/config';
import { describe, expect, it } from 'vitest';
import { ingestOptions } from './options.ts';

describe("the ingest components' options", () => {
  it('auto staging is off on a replicated points table, and on or auto stays as set elsewhere', () => {
    expect(ingestOptions(loadSettings({})).uploads.staging).toBe('auto');
    expect(ingestOptions(loadSettings({ CLICKHOUSE_CLUSTER: 'c' })).uploads.staging).toBe('off');
    expect(ingestOptions(loadSettings({ MERIDIAN_UPLOAD_STAGING: 'on' })).uploads.staging).toBe('on');
  });

  it('the archiver has no options while MERIDIAN_ARCHIVE is off', () => {
    expect(ingestOptions(loadSettings({ MERIDIAN_ARCHIVE: 'false' })).archive).toBeNull();
    expect(ingestOptions(loadSettings({})).archive).toMatchObject({ intervalMs: 60_000 });
    expect(ingestOptions(loadSettings({ MERIDIAN_ARCHIVE: 'true', MERIDIAN_ARCHIVE_INTERVAL_MS: '500' })).archive).toMatchObject({ intervalMs: 500 });
  });

  it('units are converted once: task retention days to milliseconds, the decider buffer to eight batches', () => {
    const options = ingestOptions(loadSettings({ MERIDIAN_TASK_RETENTION_DAYS: '2', MERIDIAN_POINT_BATCH_SIZE: '1000' }));
    expect(options.tasksReadModel.retentionMs).toBe(2 * 86_400_000);
    expect(options.uploads.maxBufferedPoints).toBe(8000);
  });

  it("the projector's heartbeat is a third of the session timeout, at most 3 s", () => {
    expect(ingestOptions(loadSettings({ KAFKA_SESSION_TIMEOUT_MS: '6000' })).projector).toMatchObject({ sessionTimeoutMs: 6000, heartbeatIntervalMs: 2000 });
    expect(ingestOptions(loadSettings({ KAFKA_SESSION_TIMEOUT_MS: '30000', MERIDIAN_PROJECTOR_BATCH_ROWS: '7' })).projector).toMatchObject({
      heartbeatIntervalMs: 3000,
      batchRows: 7,
    });
  });
});
