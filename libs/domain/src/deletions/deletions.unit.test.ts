import { describe, expect, it } from 'vitest';
import type { UserRecord } from '../accounts/state.ts';
import type { DomainError } from '../errors.ts';
import { foldTasks } from '../tasks/state.ts';
import { nameRuns, parseDeletionRequest, resolveDeletionNames } from './select.ts';

const user = (entitlements: UserRecord['entitlements'], is_admin = false): UserRecord => ({
  user_name: 'u',
  is_admin,
  created_at: 0,
  disabled_at: null,
  key_ids: [],
  entitlements,
  file_quota_bytes: null,
});
const writer = user([
  { match: 'prefix', value: 'w.', access: 'rw' },
  { match: 'prefix', value: 'r.', access: 'r' },
]);
const catalog = ['w.a', 'w.b', 'r.c', 'x.d'];
const codeOf = (f: () => unknown) => {
  try {
    f();
    return null;
  } catch (e) {
    return (e as DomainError).code;
  }
};

describe('a deletion request', () => {
  it("reads the download's selection and dates, and needs both bounds and a reason", () => {
    expect(parseDeletionRequest({ metrics: 'w.a', start_date: '2024-01-01', end_date: '2024-01-01', reason: ' garbage ' }, 10)).toEqual({
      pattern: 'single',
      metrics: 'w.a',
      fromMs: Date.UTC(2024, 0, 1),
      toMs: Date.UTC(2024, 0, 2) - 1,
      reason: 'garbage',
    });
    try {
      parseDeletionRequest({ metrics: 'w.a' }, 10);
      expect.unreachable();
    } catch (e) {
      expect((e as DomainError).errors.map((x) => x.field).sort()).toEqual(['end_date', 'reason', 'start_date']);
    }
    expect(codeOf(() => parseDeletionRequest({ metrics: 'w.a', start_date: '2024-01-02', end_date: '2024-01-01', reason: 'r' }, 10))).toBe('validation');
    expect(codeOf(() => parseDeletionRequest({ metrics: 'w.a', start_date: '2024-01-01', end_date: '2024-01-01', reason: 'x'.repeat(1001) }, 10))).toBe(
      'validation',
    );
  });

  it('reaches exact names the caller may write; 404 for what they may not read or what does not exist, 403 for read-only', () => {
    expect(resolveDeletionNames({ pattern: 'list', metrics: 'w.b,w.a' }, catalog, writer)).toEqual(['w.a', 'w.b']);
    expect(codeOf(() => resolveDeletionNames({ pattern: 'single', metrics: 'x.d' }, catalog, writer))).toBe('not_found');
    expect(codeOf(() => resolveDeletionNames({ pattern: 'single', metrics: 'w.zz' }, catalog, writer))).toBe('not_found');
    expect(codeOf(() => resolveDeletionNames({ pattern: 'list', metrics: 'w.a,r.c' }, catalog, writer))).toBe('forbidden');
  });

  it('a substring pattern reaches only the metrics the caller may write; an admin reaches every one', () => {
    expect(resolveDeletionNames({ pattern: 'contains', metrics: '.' }, catalog, writer)).toEqual(['w.a', 'w.b']);
    expect(resolveDeletionNames({ pattern: 'contains', metrics: '.' }, catalog, user([], true))).toEqual(['r.c', 'w.a', 'w.b', 'x.d']);
  });
});

describe("a deletion's task", () => {
  const deleted = {
    type: 'MetricsDeleted',
    task_id: 'd',
    user_name: 'u',
    at: 5,
    reason: 'r',
    pattern: 'single',
    selection: 'w.a',
    from_ms: 0,
    to_ms: 9,
    metrics: ['w.a'],
    points: 4,
  } as const;

  it('arrives decided and succeeds once every partition announced its marker', () => {
    const state = foldTasks([
      { ...deleted, partitions: [0, 2] },
      { type: 'UploadSegmentProjected', task_id: 'd', partition: 2, at: 6 },
    ]);
    expect(state.get('d')).toMatchObject({
      kind: 'points_deletion',
      status: 'running',
      pending_partitions: [0],
      result: { points_selected: 4, metrics: ['w.a'] },
    });
    const done = foldTasks([
      { ...deleted, partitions: [0, 2] },
      { type: 'UploadSegmentProjected', task_id: 'd', partition: 2, at: 6 },
      { type: 'UploadSegmentProjected', task_id: 'd', partition: 0, at: 7 },
    ]);
    expect(done.get('d')).toMatchObject({ status: 'succeeded', updated_at: 7 });
  });

  it('a deletion that reached no metric has no marker and succeeds at once', () => {
    expect(foldTasks([{ ...deleted, metrics: [], points: 0, partitions: [] }]).get('d')).toMatchObject({ status: 'succeeded' });
  });
});

describe('runs of names', () => {
  it('keep the order, stay within the bytes (UTF-8) but for a name longer than them alone', () => {
    expect(nameRuns(['ab', 'cd', 'é', 'efgh', 'i'], 4)).toEqual([['ab', 'cd'], ['é'], ['efgh'], ['i']]);
    expect(nameRuns(['toolong', 'a'], 3)).toEqual([['toolong'], ['a']]);
    expect(nameRuns([], 3)).toEqual([]);
  });
});
