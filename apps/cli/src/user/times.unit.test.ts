import { describe, expect, it } from 'vitest';
import { resolveTime } from './times.ts';

describe('resolveTime', () => {
  const now = Date.UTC(2024, 5, 15, 12, 0, 0);

  it('resolves times relative to now into UTC date-times the api takes', () => {
    expect(resolveTime('now', now)).toEqual({ ok: true, value: '2024-06-15T12:00:00+0000' });
    expect(resolveTime('-1h', now)).toEqual({ ok: true, value: '2024-06-15T11:00:00+0000' });
    expect(resolveTime('now-7d', now)).toEqual({ ok: true, value: '2024-06-08T12:00:00+0000' });
    expect(resolveTime('now+30m', now)).toEqual({ ok: true, value: '2024-06-15T12:30:00+0000' });
    expect(resolveTime('-2w', now)).toEqual({ ok: true, value: '2024-06-01T12:00:00+0000' });
  });

  it('passes what the api takes as it is, and says what is expected of anything else', () => {
    expect(resolveTime('2024-01-02', now)).toEqual({ ok: true, value: '2024-01-02' });
    expect(resolveTime('2024-01-02T03:04:05+01:00', now)).toEqual({ ok: true, value: '2024-01-02T03:04:05+01:00' });
    for (const bad of ['yesterday', '1h', '-1y', 'now-', '2024-13-01', '2024-01-02T03:04']) {
      const result = resolveTime(bad, now);
      expect(result.ok, bad).toBe(false);
    }
    expect(resolveTime('yesterday', now)).toMatchObject({ reason: expect.stringContaining('-1h') });
    expect(resolveTime('now+99999999w', now)).toMatchObject({ ok: false });
  });
});
