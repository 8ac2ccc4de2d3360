import { describe, expect, it } from 'vitest';
import { ConfigError, loadSettings } from '@meridian/config';

describe('the archive settings', () => {
  it('default to on, a 7-day window, 64 MiB segments and a pass a minute of at most 15', () => {
    const s = loadSettings({});
    expect(s.MERIDIAN_ARCHIVE).toBe(true);
    expect(s.MERIDIAN_ARCHIVE_RETENTION_MS).toBe(7 * 86_400_000);
    expect(s.MERIDIAN_ARCHIVE_SEGMENT_BYTES).toBe(64 * 1024 * 1024);
    expect(s.MERIDIAN_ARCHIVE_INTERVAL_MS).toBe(60_000);
    expect(s.MERIDIAN_ARCHIVE_PASS_TIMEOUT_MS).toBe(15 * 60_000);
  });

  it.each([
    ['MERIDIAN_ARCHIVE_RETENTION_MS', ['1000', String(3650 * 86_400_000)], ['999', String(3650 * 86_400_000 + 1), '0', '1.5']],
    ['MERIDIAN_ARCHIVE_SEGMENT_BYTES', ['1024', String(512 * 1024 * 1024)], ['1023', String(512 * 1024 * 1024 + 1), '-1']],
    ['MERIDIAN_ARCHIVE_INTERVAL_MS', ['100', '86400000'], ['99', '86400001', 'soon']],
    ['MERIDIAN_ARCHIVE_PASS_TIMEOUT_MS', ['1000', '86400000'], ['999', '86400001', '1.5']],
    ['MERIDIAN_ARCHIVE', ['true', 'false'], ['on', 'yes']],
  ])('%s takes its bounds and nothing past them', (name, good, bad) => {
    for (const v of good) expect(() => loadSettings({ [name]: v }), v).not.toThrow();
    for (const v of bad) expect(() => loadSettings({ [name]: v }), v).toThrow(ConfigError);
  });
});
