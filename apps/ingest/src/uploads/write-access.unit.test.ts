import { describe, expect, it } from 'vitest';
import type { MetricRule, UserRecord } from '@meridian/domain';
import { WriteAccess } from './write-access.ts';

const user = (entitlements: MetricRule[], disabled_at: number | null = null): UserRecord => ({ user_name: 'ada', is_admin: false, created_at: 0, disabled_at, key_ids: [], entitlements, file_quota_bytes: null });

describe('WriteAccess', () => {
  it('allows the metrics an rw rule covers, and no others', () => {
    const access = new WriteAccess('ada', () => user([{ match: 'prefix', value: 'up.', access: 'rw' }, { match: 'exact', value: 'ro', access: 'r' }]));
    expect(access.mayWrite('up.a')).toBe(true);
    expect(access.mayWrite('ro')).toBe(false);
    expect(access.mayWrite('other')).toBe(false);
  });

  it('refuses everything to an unknown or disabled user', () => {
    const rw: MetricRule[] = [{ match: 'prefix', value: '', access: 'rw' }];
    expect(new WriteAccess('ada', () => undefined).mayWrite('a')).toBe(false);
    expect(new WriteAccess('ada', () => user(rw, 5)).mayWrite('a')).toBe(false);
  });

  it('decides each metric once: a change during the upload does not split its rows', () => {
    let current = user([{ match: 'exact', value: 'a', access: 'rw' }]);
    const access = new WriteAccess('ada', () => current);
    expect(access.mayWrite('a')).toBe(true);
    current = user([]);
    expect(access.mayWrite('a')).toBe(true);
  });

  it('lists the metrics it allowed, sorted', () => {
    const access = new WriteAccess('ada', () => user([{ match: 'prefix', value: 'up.', access: 'rw' }]));
    for (const m of ['up.z', 'other', 'up.b']) access.mayWrite(m);
    expect(access.writtenMetrics()).toEqual(['up.b', 'up.z']);
  });
});
