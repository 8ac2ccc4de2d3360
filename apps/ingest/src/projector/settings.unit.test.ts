import { describe, expect, it } from 'vitest';
import { ConfigError, loadSettings } from '@meridian/config';
import { ingestOptions } from '../options.ts';

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

describe('MERIDIAN_PROJECTOR_FETCH_MIN_BYTES and MERIDIAN_PROJECTOR_FETCH_WAIT_MS', () => {
  it("default to a fetch waiting for 1 MiB or 250 ms, and reach the projector's options", () => {
    expect(ingestOptions(loadSettings({})).projector).toMatchObject({ fetchMinBytes: 1_048_576, fetchWaitMs: 250 });
    expect(ingestOptions(loadSettings({ MERIDIAN_PROJECTOR_FETCH_MIN_BYTES: '1', MERIDIAN_PROJECTOR_FETCH_WAIT_MS: '500' })).projector).toMatchObject({
      fetchMinBytes: 1,
      fetchWaitMs: 500,
    });
  });

  it('refuse bytes past 16 MiB (the fetch holds 24 MiB at most) and waits outside 10 to 5000 ms', () => {
    for (const bad of ['0', '16777217', '1.5']) expect(() => loadSettings({ MERIDIAN_PROJECTOR_FETCH_MIN_BYTES: bad }), bad).toThrow(ConfigError);
    for (const bad of ['9', '5001', 'soon']) expect(() => loadSettings({ MERIDIAN_PROJECTOR_FETCH_WAIT_MS: bad }), bad).toThrow(ConfigError);
  });
});
