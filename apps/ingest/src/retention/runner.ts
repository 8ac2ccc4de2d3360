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
  /** Whether this process runs retention now: the one projecting points partition 0, so one per deployment. */
  readonly leads: () => boolean;
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
};

/**
 * One pass: for each rule, its metrics whose first point is older than it keeps get one deletion of
 * everything before the cutoff, written to the log like a user's (user "retention"). The deletion
 * machinery does the rest: in log order, the catalog following, replayed by rebuilds, crash-safe.
 */
export async function applyRetention(deps: RetentionDeps): Promise<number> {
  const rules = await deps.rules();
  if (rules.length === 0) return 0;
  const now = (deps.now ?? Date.now)();
  const firsts = await deps.catalog();
  let deletions = 0;
  for (const { rule, cutoff, metrics } of retentionPlan(rules, firsts.keys(), now)) {
    const due = metrics.filter((m) => firsts.get(m)! < cutoff);
    // One deletion per run of names that one deletion's events carry.
    for (const run of nameRuns(due, MAX_DELETION_NAME_BYTES)) {
      const points = await deps.countOlder(run, cutoff);
      if (points === 0) continue;
      await deps.append({
        task_id: randomUUID(),
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
      deps.logger.info({ rule: `${rule.match}:${rule.value}`, metrics: run.length, points, cutoff }, 'retention: points past their rule deleted');
      deletions++;
    }
  }
  return deletions;
}

/** Runs applyRetention every intervalMs while this process leads; a failed pass is logged and tried again next time. */
export function startRetention(deps: RetentionDeps): { stop(): Promise<void> } {
  return startPeriodic(async () => {
    try {
      if (deps.leads()) await applyRetention(deps);
    } catch (error) {
      deps.logger.warn({ err: error }, 'applying the retention rules failed; trying again at the next interval');
    }
  }, deps.intervalMs);
}
