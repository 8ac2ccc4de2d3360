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
  /** Writes a deletion into the log (DeletionLog): the projector deletes at its markers; the points partitions they went to. */
  readonly append: (deletion: Omit<MetricsDeleted, 'type' | 'partitions'>) => Promise<readonly number[]>;
  /** For each of these deletions, the points partitions in which the projector has applied its marker (none: absent). */
  readonly appliedIn: (taskIds: readonly string[]) => Promise<Map<string, Set<number>>>;
  /** Whether this process runs retention now: the one projecting points partition 0, so one per deployment. */
  readonly leads: () => boolean;
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
};

/** A deletion a runner has written and the projector has not applied everywhere yet. */
type Pending = { readonly metrics: readonly string[]; readonly partitions: readonly number[]; readonly since: number; warned: boolean };

/** The runner's deletions not applied yet, by task id. */
export type PendingDeletions = Map<string, Pending>;

/** How long a deletion may wait for the projector before the runner says so, once (its metrics wait with it). */
const PENDING_WARN_MS = 600_000;

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
  const now = (deps.now ?? Date.now)();
  await forgetApplied(deps, pending, now);
  const rules = await deps.rules();
  if (rules.length === 0) return 0;
  const firsts = await deps.catalog();
  const waiting = new Set([...pending.values()].flatMap((p) => p.metrics));
  let deletions = 0;
  for (const { rule, cutoff, metrics } of retentionPlan(rules, firsts.keys(), now)) {
    const due = metrics.filter((m) => firsts.get(m)! < cutoff && !waiting.has(m));
    // One deletion per run of names that one deletion's events carry.
    for (const run of nameRuns(due, MAX_DELETION_NAME_BYTES)) {
      const points = await deps.countOlder(run, cutoff);
      if (points === 0) continue;
      const taskId = randomUUID();
      const partitions = await deps.append({
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
      pending.set(taskId, { metrics: run, partitions, since: now, warned: false });
      deps.logger.info({ rule: `${rule.match}:${rule.value}`, metrics: run.length, points, cutoff }, 'retention: points past their rule deleted');
      deletions++;
    }
  }
  return deletions;
}

/** Drops from `pending` the deletions applied in every partition of their markers; says which wait long. */
async function forgetApplied(deps: RetentionDeps, pending: PendingDeletions, now: number): Promise<void> {
  if (pending.size === 0) return;
  const appliedIn = await deps.appliedIn([...pending.keys()]);
  for (const [taskId, p] of pending) {
    const applied = appliedIn.get(taskId);
    if (p.partitions.every((partition) => applied?.has(partition) === true)) pending.delete(taskId);
    else if (!p.warned && now - p.since > PENDING_WARN_MS) {
      p.warned = true;
      deps.logger.warn(
        { task_id: taskId, metrics: p.metrics.length },
        'retention: a deletion is not applied yet; its metrics wait for it (is the projector behind?)',
      );
    }
  }
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
