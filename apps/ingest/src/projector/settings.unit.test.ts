import { describe, expect, it } from 'vitest';
import { ConfigError, loadSettings } from '@meridian/config';
import { fetchWait } from './options.ts';

describe('MERIDIAN_PROJECTOR_BATCH_ROWS', () => {
  it('defaults to 500000 rows per insert', () => {
    expect(loadSettings({}).MERIDIAN_PROJECTOR_BATCH_ROWS).toBe(500_000);
  });

  it('accepts 1 to 1000000 (one ClickHouse insert block) and nothing else', () => {
    expect(loadSettings({ MERIDIAN_PROJECTOR_BATCH_ROWS: '1' }).MERIDIAN_PROJECTOR_BATCH_ROWS).toBe(1);
    expect(loadSettings({ MERIDIAN_PROJECTOR_BATCH_ROWS: '1000000' }).MERIDIAN_PROJECTOR_BATCH_ROWS).toBe(1_000_000);
    for (const bad of ['0', '-5', '1000001', '2.5', 'many']) {
      expect(() => loadSettings({ MERIDIAN_PROJECTOR_BATCH_ROWS: bad }), bad).toThrow(ConfigError);
    }
  });
});

describe('MERIDIAN_PROJECTOR_FETCH_WAIT_MS', () => {
  it('defaults to 0: a fetch answers at the first record, and waits 500 ms for one when there is none', () => {
    expect(fetchWait(loadSettings({}).MERIDIAN_PROJECTOR_FETCH_WAIT_MS)).toEqual({ maxWaitTimeMs: 500 });
  });

  it('a wait is for 1 MiB of records, up to the wait', () => {
    expect(fetchWait(loadSettings({ MERIDIAN_PROJECTOR_FETCH_WAIT_MS: '100' }).MERIDIAN_PROJECTOR_FETCH_WAIT_MS)).toEqual({
      maxWaitTimeMs: 100,
      minBytes: 1024 * 1024,
    });
  });

  it('accepts 0 to 5000 ms and nothing else', () => {
    expect(loadSettings({ MERIDIAN_PROJECTOR_FETCH_WAIT_MS: '5000' }).MERIDIAN_PROJECTOR_FETCH_WAIT_MS).toBe(5000);
    for (const bad of ['-1', '5001', '2.5', 'soon']) {
      expect(() => loadSettings({ MERIDIAN_PROJECTOR_FETCH_WAIT_MS: bad }), bad).toThrow(ConfigError);
    }
  });
});
