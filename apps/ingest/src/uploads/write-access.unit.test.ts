import { describe, expect, it } from 'vitest';
import type { MetricRule, UserRecord } from '@meridian/domain';
import { WriteAccess } from './write-access.ts';

const user = (entitlements: MetricRule[]): UserRecord => ({ user_name: 'ada', is_admin: false, created_at: 0, disabled_at: null, key_ids: [], entitlements, file_quota_bytes: null });

/** An accounts fold that lags: `latest` becomes visible only when the log is read to its end. */
function laggingFold(seen: UserRecord | undefined, latest: UserRecord | undefined) {
  let current = seen;
  let syncs = 0;
  return {
    user: (name: string) => (name === 'ada' ? current : undefined),
    sync: async () => {
      syncs++;
      current = latest;
    },
    syncs: () => syncs,
  };
}

describe('WriteAccess', () => {
  it('decides from the local fold without reading the log when the fold allows the write', async () => {
    const fold = laggingFold(user([{ match: 'prefix', value: 'up.', access: 'rw' }]), undefined);
    const access = new WriteAccess('ada', fold.user, fold.sync);
    expect(access.known('up.a')).toBeUndefined();
    expect(await access.decide('up.a')).toBe(true);
    expect(access.known('up.a')).toBe(true);
    expect(fold.syncs()).toBe(0);
  });

  it('reads the log to its end when the fold refuses, so a grant made just before counts', async () => {
    const fold = laggingFold(undefined, user([{ match: 'exact', value: 'up.a', access: 'rw' }]));
    const access = new WriteAccess('ada', fold.user, fold.sync);
    expect(await access.decide('up.a')).toBe(true);
    expect(fold.syncs()).toBe(1);
  });

  it('reads the log at most once per upload, and remembers refusals', async () => {
    const fold = laggingFold(user([{ match: 'prefix', value: 'up.', access: 'r' }]), user([{ match: 'prefix', value: 'up.', access: 'r' }]));
    const access = new WriteAccess('ada', fold.user, fold.sync);
    expect(await access.decide('up.a')).toBe(false);
    expect(await access.decide('up.b')).toBe(false);
    expect(access.known('up.a')).toBe(false);
    expect(fold.syncs()).toBe(1);
  });

  it('lists the metrics it allowed, sorted', async () => {
    const rw = user([{ match: 'prefix', value: 'up.', access: 'rw' }]);
    const fold = laggingFold(rw, rw);
    const access = new WriteAccess('ada', fold.user, fold.sync);
    for (const m of ['up.z', 'other', 'up.b']) await access.decide(m);
    expect(access.writtenMetrics()).toEqual(['up.b', 'up.z']);
  });
});
