import { describe, expect, it } from 'vitest';
import type { MetricsDeleted } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { applyRetention, type PendingDeletions, type RetentionDeps } from './runner.ts';

const NOW = 1_800_000_000_000;

/** A world of two metrics past a 5 s rule whose deletions the projector applies when `applies` says so. */
function world() {
  const appended: Array<Omit<MetricsDeleted, 'type' | 'partitions'>> = [];
  const applies = new Set<string>();
  const deps: RetentionDeps = {
    rules: () => Promise.resolve([{ match: 'prefix', value: 'ret_', keep_ms: 5_000, set_at: 0, actor: 'root' }]),
    // The catalog and points still hold the old points: a deletion not applied yet leaves them.
    catalog: () =>
      Promise.resolve(
        new Map([
          ['ret_a', NOW - 60_000],
          ['ret_b', NOW - 60_000],
          ['other', NOW - 60_000],
        ]),
      ),
    countOlder: (metrics) => Promise.resolve(3 * metrics.length),
    append: (deletion) => {
      appended.push(deletion);
      return Promise.resolve([0, 1]);
    },
    // The projector applies a deletion in partition 0 at once, in partition 1 when `applies` says so.
    appliedIn: (taskIds) => Promise.resolve(new Map(taskIds.map((taskId) => [taskId, new Set(applies.has(taskId) ? [0, 1] : [0])]))),
    leads: () => true,
    intervalMs: 500,
    logger: createLogger({ name: 'test', level: 'silent' }),
    now: () => NOW,
  };
  return { deps, appended, applies };
}

describe('a retention pass', () => {
  it("deletes what a rule's metrics hold before its cutoff, once, until the projector has applied that deletion", async () => {
    const { deps, appended, applies } = world();
    const pending: PendingDeletions = new Map();
    expect(await applyRetention(deps, pending)).toBe(1);
    expect(appended).toEqual([
      expect.objectContaining({ user_name: 'retention', metrics: ['ret_a', 'ret_b'], points: 6, from_ms: expect.any(Number), to_ms: NOW - 5_001 }),
    ]);
    expect([...pending.values()].map((p) => [p.metrics, p.partitions])).toEqual([
      [
        ['ret_a', 'ret_b'],
        [0, 1],
      ],
    ]);

    // Not applied in every partition yet: the catalog still says the old points are there, and no second deletion goes.
    expect(await applyRetention(deps, pending)).toBe(0);
    expect(appended).toHaveLength(1);

    // Applied: its metrics are the rule's again (here the fake store still holds old points, so a new deletion goes).
    applies.add(appended[0]!.task_id);
    expect(await applyRetention(deps, pending)).toBe(1);
    expect(appended).toHaveLength(2);
    expect([...pending.keys()]).toEqual([appended[1]!.task_id]);
  });
});
