import { describe, expect, it } from 'vitest';
import { ConfigError, loadSettings } from '@meridian/config';

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
