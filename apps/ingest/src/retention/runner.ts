import { randomUUID } from 'node:crypto';
import { MAX_DELETION_NAME_BYTES, MIN_TIMESTAMP_MS, nameRuns, retentionPlan, type MetricsDeleted, type RetentionRule } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import { startPeriodic } from '../periodic.ts';

export type RetentionDeps = {
  /** The rules now (the accounts fold read to its end). */
  readonly rules: () => Promise<readonly RetentionRule[]>;
  /** Every metric of the catalog with its first timestamp. */
  readonly catalog: () => Promise<Map<string, number>>;
  readonly countOlder: (metrics: readonly string[], cutoff: number) => Promise<number>;
  /** Writes a deletion into the log (DeletionLog): the projector deletes at its markers. */
  readonly append: (deletion: Omit<MetricsDeleted, 'type' | 'partitions'>) => Promise<unknown>;
  /** Whether the projector has applied every marker of this deletion of these metrics. */
  readonly applied: (taskId: string, metrics: readonly string[]) => Promise<boolean>;
  /** Whether this process runs retention now: the one projecting points partition 0, so one per deployment. */
  readonly leads: () => boolean;
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
};

/** The deletions a runner has written and the projector has not applied yet: task id → its metrics. */
export type PendingDeletions = Map<string, readonly string[]>;

/**
 * One pass: for each rule, its metrics whose first point is older than it keeps get one deletion of
 * everything before the cutoff, written to the log like a user's (user "retention"). The deletion
 * machinery does the rest: in log order, the catalog following, replayed by rebuilds, crash-safe.
 *
 * A metric whose last deletion (in `pending`) is not applied yet is left to a later pass: until
 * then its catalog and points still hold what that deletion removes, and a second deletion of it
 * would cost the server another mutation of every part of points (18.16) for nothing.
 */
export async function applyRetention(deps: RetentionDeps, pending: PendingDeletions = new Map()): Promise<number> {
  for (const [taskId, metrics] of pending) if (await deps.applied(taskId, metrics)) pending.delete(taskId);
  const rules = await deps.rules();
  if (rules.length === 0) return 0;
  const now = (deps.now ?? Date.now)();
  const firsts = await deps.catalog();
  const waiting = new Set([...pending.values()].flat());
  let deletions = 0;
  for (const { rule, cutoff, metrics } of retentionPlan(rules, firsts.keys(), now)) {
    const due = metrics.filter((m) => firsts.get(m)! < cutoff && !waiting.has(m));
    // One deletion per run of names that one deletion's events carry.
    for (const run of nameRuns(due, MAX_DELETION_NAME_BYTES)) {
      const points = await deps.countOlder(run, cutoff);
      if (points === 0) continue;
      const taskId = randomUUID();
      await deps.append({
        task_id: taskId,
        user_name: 'retention',
        at: now,
        reason: `retention rule ${rule.match} ${JSON.stringify(rule.value)}: raw points are kept ${rule.keep_ms / 1000} s`,
        pattern: rule.match === 'exact' ? 'single' : 'starts_with',
        selection: rule.value,
        from_ms: MIN_TIMESTAMP_MS,
        to_ms: cutoff - 1,
        metrics: run,
        points,
      });
      pending.set(taskId, run);
      deps.logger.info({ rule: `${rule.match}:${rule.value}`, metrics: run.length, points, cutoff }, 'retention: points past their rule deleted');
      deletions++;
    }
  }
  return deletions;
}

/** Runs applyRetention every intervalMs while this process leads; a failed pass is logged and tried again next time. */
export function startRetention(deps: RetentionDeps): { stop(): Promise<void> } {
  const pending: PendingDeletions = new Map();
  return startPeriodic(async () => {
    try {
      if (deps.leads()) await applyRetention(deps, pending);
    } catch (error) {
      deps.logger.warn({ err: error }, 'applying the retention rules failed; trying again at the next interval');
    }
  }, deps.intervalMs);
}
