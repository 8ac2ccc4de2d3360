import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors.ts';
import { authenticate, canRead, canWrite, canWriteSomeMetric, fileQuotaOf, metricAccess } from './access.ts';
import {
  decideCreateUser,
  decideDisableUser,
  decideIssueKey,
  decideReplaceEntitlements,
  decideRevokeKey,
  decideSetFileQuota,
  MAX_FILE_QUOTA_BYTES,
  parseMetricRules,
} from './decide.ts';
import type { AccountEvent } from './events.ts';
import { composeApiKey, keyIdOf } from './keys.ts';
import { userNameProblem } from './names.ts';
import { accountsCodec } from './codec.ts';
import { applyAccountEvent, foldAccounts, initialAccounts, type AccountsState } from './state.ts';

const bytes = (n: number, fill: number) => Buffer.alloc(n, fill);
const keyA = composeApiKey(bytes(8, 1), bytes(32, 2));
const keyB = composeApiKey(bytes(8, 3), bytes(32, 4));
const meta = (at: number) => ({ at, actor: 'cli' });

/** given(events).when(decide).then(events | error): the decider's whole contract in one line each. */
function given(events: AccountEvent[]) {
  const state = foldAccounts(events);
  return {
    when: (decide: (s: AccountsState) => AccountEvent[]) => {
      let result: AccountEvent[] | DomainError;
      try {
        result = decide(state);
      } catch (e) {
        result = e as DomainError;
      }
      return {
        then: (expected: AccountEvent[]) => expect(result).toEqual(expected),
        thenFails: (code: DomainError['code']) => {
          expect(result).toBeInstanceOf(DomainError);
          expect((result as DomainError).code).toBe(code);
        },
      };
    },
  };
}

const created = (name: string, isAdmin = false, key = keyA, at = 1): AccountEvent[] =>
  decideCreateUser(initialAccounts(), { user_name: name, is_admin: isAdmin, key, ...meta(at) });

describe('API keys', () => {
  it('have a recognisable prefix, a key id and a 32-byte secret; only the digest is kept', () => {
    expect(keyA.api_key).toMatch(/^mrd_0101010101010101_[A-Za-z0-9_-]{43}$/);
    expect(keyIdOf(keyA.api_key)).toBe('0101010101010101');
    expect(keyA.secret_sha256).toHaveLength(32);
    expect(keyA.secret_sha256.toString('hex')).not.toContain(Buffer.from(keyA.api_key).toString('hex'));
  });

  it.each(['', 'Bearer', 'mrd_', 'mrd_0101010101010101_short', `${keyA.api_key}x`, 'ünïcödé'])('rejects the malformed key %j', (k) => {
    expect(keyIdOf(k)).toBeNull();
    expect(authenticate(foldAccounts(created('ada')), k)).toBeNull();
  });
});

describe('user names', () => {
  it.each([
    ['ada', null],
    ['a.b_c-1', null],
    ['x'.repeat(64), null],
  ])('accepts %s', (n, p) => expect(userNameProblem(n)).toBe(p));
  it.each(['', 'x'.repeat(65), 'has space', 'slash/y', 'ünï', 42])('rejects %j', (n) => expect(userNameProblem(n)).not.toBeNull());
});

describe('account decisions', () => {
  it('creates a user with its first key', () => {
    given([])
      .when((s) => decideCreateUser(s, { user_name: 'ada', is_admin: true, key: keyA, ...meta(5) }))
      .then([{ type: 'UserCreated', user_name: 'ada', is_admin: true, key_id: keyA.key_id, secret_sha256: keyA.secret_sha256, at: 5, actor: 'cli' }]);
  });
  it('refuses a duplicate user (409) and a bad name (400)', () => {
    given(created('ada'))
      .when((s) => decideCreateUser(s, { user_name: 'ada', is_admin: false, key: keyB, ...meta(2) }))
      .thenFails('conflict');
    given([])
      .when((s) => decideCreateUser(s, { user_name: 'bad name', is_admin: false, key: keyB, ...meta(2) }))
      .thenFails('validation');
  });
  it('issues further keys only to active users', () => {
    given(created('ada'))
      .when((s) => decideIssueKey(s, { user_name: 'ada', key: keyB, max_keys: 100, ...meta(3) }))
      .then([{ type: 'ApiKeyIssued', user_name: 'ada', key_id: keyB.key_id, secret_sha256: keyB.secret_sha256, at: 3, actor: 'cli' }]);
    given([...created('ada'), { type: 'UserDisabled', user_name: 'ada', ...meta(2) }])
      .when((s) => decideIssueKey(s, { user_name: 'ada', key: keyB, max_keys: 100, ...meta(3) }))
      .thenFails('not_found');
  });
  it('issues no key past the per-user limit; revoked keys do not count', () => {
    const keyC = composeApiKey(bytes(8, 5), bytes(32, 6));
    const two = [...created('ada'), { type: 'ApiKeyIssued' as const, user_name: 'ada', key_id: keyB.key_id, secret_sha256: keyB.secret_sha256, ...meta(2) }];
    given(two)
      .when((s) => decideIssueKey(s, { user_name: 'ada', key: keyC, max_keys: 2, ...meta(3) }))
      .thenFails('limit_reached');
    given(two)
      .when((s) => decideIssueKey(s, { user_name: 'ada', key: keyC, max_keys: 3, ...meta(3) }))
      .then([{ type: 'ApiKeyIssued', user_name: 'ada', key_id: keyC.key_id, secret_sha256: keyC.secret_sha256, at: 3, actor: 'cli' }]);
    given([...two, { type: 'ApiKeyRevoked', user_name: 'ada', key_id: keyA.key_id, ...meta(3) }])
      .when((s) => decideIssueKey(s, { user_name: 'ada', key: keyC, max_keys: 2, ...meta(4) }))
      .then([{ type: 'ApiKeyIssued', user_name: 'ada', key_id: keyC.key_id, secret_sha256: keyC.secret_sha256, at: 4, actor: 'cli' }]);
  });
  it("revokes only the caller's own active keys; anything else is not found", () => {
    const history = [...created('ada'), ...created('bob', false, keyB)];
    given(history)
      .when((s) => decideRevokeKey(s, { user_name: 'ada', key_id: keyA.key_id, ...meta(4) }))
      .then([{ type: 'ApiKeyRevoked', user_name: 'ada', key_id: keyA.key_id, at: 4, actor: 'cli' }]);
    given(history)
      .when((s) => decideRevokeKey(s, { user_name: 'ada', key_id: keyB.key_id, ...meta(4) }))
      .thenFails('not_found');
    given([...history, { type: 'ApiKeyRevoked', user_name: 'ada', key_id: keyA.key_id, ...meta(4) }])
      .when((s) => decideRevokeKey(s, { user_name: 'ada', key_id: keyA.key_id, ...meta(5) }))
      .thenFails('not_found');
  });
  it('disables an active user once', () => {
    given(created('ada'))
      .when((s) => decideDisableUser(s, { user_name: 'ada', ...meta(9) }))
      .then([{ type: 'UserDisabled', user_name: 'ada', at: 9, actor: 'cli' }]);
    given([])
      .when((s) => decideDisableUser(s, { user_name: 'ghost', ...meta(9) }))
      .thenFails('not_found');
  });
  it('replaces entitlements with the smallest set of revocations and grants', () => {
    const history: AccountEvent[] = [
      ...created('ada'),
      { type: 'MetricEntitlementGranted', user_name: 'ada', match: 'prefix', value: 'cpu:', access: 'r', ...meta(2) },
      { type: 'MetricEntitlementGranted', user_name: 'ada', match: 'exact', value: 'mem', access: 'rw', ...meta(2) },
    ];
    given(history)
      .when((s) =>
        decideReplaceEntitlements(s, {
          user_name: 'ada',
          rules: [
            { match: 'prefix', value: 'cpu:', access: 'rw' },
            { match: 'exact', value: 'disk', access: 'r' },
          ],
          ...meta(3),
        }),
      )
      .then([
        { type: 'MetricEntitlementRevoked', user_name: 'ada', match: 'exact', value: 'mem', at: 3, actor: 'cli' },
        { type: 'MetricEntitlementGranted', user_name: 'ada', match: 'prefix', value: 'cpu:', access: 'rw', at: 3, actor: 'cli' },
        { type: 'MetricEntitlementGranted', user_name: 'ada', match: 'exact', value: 'disk', access: 'r', at: 3, actor: 'cli' },
      ]);
  });
  it("sets a user's file quota, or sends it back to the default; the same value again appends nothing", () => {
    given(created('ada'))
      .when((s) => decideSetFileQuota(s, { user_name: 'ada', quota_bytes: 5_000, ...meta(3) }))
      .then([{ type: 'FileQuotaSet', user_name: 'ada', quota_bytes: 5_000, at: 3, actor: 'cli' }]);
    for (const q of [0, MAX_FILE_QUOTA_BYTES]) {
      given(created('ada'))
        .when((s) => decideSetFileQuota(s, { user_name: 'ada', quota_bytes: q, ...meta(3) }))
        .then([{ type: 'FileQuotaSet', user_name: 'ada', quota_bytes: q, at: 3, actor: 'cli' }]);
    }
    const limited: AccountEvent[] = [...created('ada'), { type: 'FileQuotaSet', user_name: 'ada', quota_bytes: 5_000, ...meta(2) }];
    given(limited)
      .when((s) => decideSetFileQuota(s, { user_name: 'ada', quota_bytes: null, ...meta(3) }))
      .then([{ type: 'FileQuotaSet', user_name: 'ada', quota_bytes: null, at: 3, actor: 'cli' }]);
    given(limited)
      .when((s) => decideSetFileQuota(s, { user_name: 'ada', quota_bytes: 5_000, ...meta(3) }))
      .then([]);
    given(created('ada'))
      .when((s) => decideSetFileQuota(s, { user_name: 'ada', quota_bytes: null, ...meta(3) }))
      .then([]);
  });
  it.each([-1, 1.5, Number.NaN, MAX_FILE_QUOTA_BYTES + 1, Number.MAX_SAFE_INTEGER])('refuses the file quota %s (400)', (q) => {
    given(created('ada'))
      .when((s) => decideSetFileQuota(s, { user_name: 'ada', quota_bytes: q, ...meta(3) }))
      .thenFails('validation');
  });
  it('sets a file quota only for an active user', () => {
    given([])
      .when((s) => decideSetFileQuota(s, { user_name: 'ghost', quota_bytes: 1, ...meta(3) }))
      .thenFails('not_found');
    given([...created('ada'), { type: 'UserDisabled', user_name: 'ada', ...meta(2) }])
      .when((s) => decideSetFileQuota(s, { user_name: 'ada', quota_bytes: 1, ...meta(3) }))
      .thenFails('not_found');
  });
  it('validates rule lists and names every bad field', () => {
    expect(() => parseMetricRules('x')).toThrow(DomainError);
    try {
      parseMetricRules([
        { match: 'glob', value: '', access: 'x' },
        { match: 'exact', value: 'a', access: 'r' },
        { match: 'exact', value: 'a', access: 'rw' },
      ]);
      expect.unreachable();
    } catch (e) {
      expect((e as DomainError).errors.map((x) => x.field)).toEqual(['metrics[0].match', 'metrics[0].value', 'metrics[0].access', 'metrics[2]']);
    }
  });
});

describe('the accounts fold', () => {
  const history: AccountEvent[] = [
    ...created('ada', false, keyA, 1),
    ...created('root', true, keyB, 2),
    { type: 'MetricEntitlementGranted', user_name: 'ada', match: 'prefix', value: 'cpu:', access: 'r', ...meta(3) },
    { type: 'MetricEntitlementGranted', user_name: 'ada', match: 'exact', value: 'cpu:load', access: 'rw', ...meta(4) },
  ];

  it('authenticates a live key and nothing after revocation or disabling', () => {
    const state = foldAccounts(history);
    expect(authenticate(state, keyA.api_key)?.user_name).toBe('ada');
    applyAccountEvent(state, { type: 'ApiKeyRevoked', user_name: 'ada', key_id: keyA.key_id, ...meta(5) });
    expect(authenticate(state, keyA.api_key)).toBeNull();
    expect(authenticate(state, keyB.api_key)?.user_name).toBe('root');
    applyAccountEvent(state, { type: 'UserDisabled', user_name: 'root', ...meta(6) });
    expect(authenticate(state, keyB.api_key)).toBeNull();
  });

  it('ignores a key presented with the right id and a wrong secret', () => {
    const forged = keyA.api_key.slice(0, -1) + (keyA.api_key.endsWith('A') ? 'B' : 'A');
    expect(authenticate(foldAccounts(history), forged)).toBeNull();
  });

  it('gives metric access by the best matching rule; admins have rw everywhere', () => {
    const state = foldAccounts(history);
    const ada = state.users.get('ada')!;
    expect(metricAccess(ada, 'cpu:idle')).toBe('r');
    expect(metricAccess(ada, 'cpu:load')).toBe('rw');
    expect(metricAccess(ada, 'mem')).toBeNull();
    expect([canRead(ada, 'cpu:x'), canWrite(ada, 'cpu:x')]).toEqual([true, false]);
    expect(metricAccess(state.users.get('root')!, 'anything')).toBe('rw');
  });

  it('tells a caller who may write some metric from one who may write none', () => {
    const state = foldAccounts(history);
    const ada = state.users.get('ada')!;
    expect(canWriteSomeMetric(ada)).toBe(true);
    expect(canWriteSomeMetric({ ...ada, entitlements: ada.entitlements.filter((r) => r.access === 'r') })).toBe(false);
    expect(canWriteSomeMetric({ ...ada, entitlements: [] })).toBe(false);
    expect(canWriteSomeMetric({ ...state.users.get('root')!, entitlements: [] })).toBe(true);
  });

  it('gives each user their own file quota once set, the default otherwise and again after null', () => {
    const state = foldAccounts([...history, { type: 'FileQuotaSet', user_name: 'ada', quota_bytes: 7, ...meta(5) }]);
    expect(fileQuotaOf(state.users.get('ada'), 100)).toBe(7);
    expect(fileQuotaOf(state.users.get('root'), 100)).toBe(100);
    expect(fileQuotaOf(undefined, 100)).toBe(100);
    applyAccountEvent(state, { type: 'FileQuotaSet', user_name: 'ada', quota_bytes: 0, ...meta(6) });
    expect(fileQuotaOf(state.users.get('ada'), 100)).toBe(0);
    applyAccountEvent(state, { type: 'FileQuotaSet', user_name: 'ada', quota_bytes: null, ...meta(7) });
    expect(fileQuotaOf(state.users.get('ada'), 100)).toBe(100);
    applyAccountEvent(state, { type: 'FileQuotaSet', user_name: 'ghost', quota_bytes: 1, ...meta(8) });
    expect(state.users.has('ghost')).toBe(false);
  });

  it('first creation wins: a concurrent second creation gets no key into the first user, on every replay alike', () => {
    const state = foldAccounts([...created('ada', false, keyA, 1), ...created('ada', true, keyB, 2)]);
    expect(state.users.get('ada')!.is_admin).toBe(false);
    expect(state.keys.has(keyB.key_id)).toBe(false);
    expect(authenticate(state, keyB.api_key)).toBeNull();
    const orphan = foldAccounts([{ type: 'ApiKeyIssued', user_name: 'ghost', key_id: keyB.key_id, secret_sha256: keyB.secret_sha256, ...meta(1) }]);
    expect(orphan.keys.size).toBe(0);
  });

  it('replaying the same events gives an identical snapshot', () => {
    expect(JSON.stringify(accountsCodec.toJSON(foldAccounts(history)))).toBe(JSON.stringify(accountsCodec.toJSON(foldAccounts(history))));
  });
});
