import { clickhouseTaskReadModel, clickhouseTaskReadModelWriter, LIVE_TASK_TABLES, quoteIdentifier, type TaskTables } from '@meridian/clickhouse';
import { LiveTasks, type Offsets, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { consumerGroupsFor } from '@meridian/kafka';
import type { ReplayDeps } from '../deps.ts';
import { inRange, suffixed, type ReadModelKind, type ReadModelVerification } from '../read-models/rebuild.ts';
import { eventsAfter, projectTaskBatch } from '@meridian/projection';

/** The tasks read model (migration 003) as a rebuild sees it: `meridian replay rebuild tasks`. */
export const TASKS_READ_MODEL: ReadModelKind = {
  name: 'tasks',
  topic: (deps) => deps.topics.tasks,
  live: LIVE_TASK_TABLES,
  rebuilt: suffixed(LIVE_TASK_TABLES, '_rebuilt'),
  retired: suffixed(LIVE_TASK_TABLES, '_retired'),
  frozen: suffixed(LIVE_TASK_TABLES, '_frozen'),
  groupId: (deps) => consumerGroupsFor(deps.topicPrefix).tasksProjector,
  start(deps, persist) {
    const live = new LiveTasks();
    const codec = createEventCodec<TaskEvent>();
    return async (tables, partition, messages, last) => {
      const t = tables as TaskTables;
      const step = { live, readModel: clickhouseTaskReadModel(deps.clickhouseOptions, t), writer: clickhouseTaskReadModelWriter(deps.clickhouse, t), persist };
      return projectTaskBatch(step, partition, eventsAfter(codec, partition, messages, -1), last);
    };
  },
  positions: (deps, tables) => clickhouseTaskReadModel(deps.clickhouseOptions, tables as TaskTables).positions(),
  verify: (deps, rebuilt, ends) => verifyTasks(deps, rebuilt as TaskTables, ends),
};

/**
 * Compares the live read model with a rebuilt one: every live row whose last event lies inside
 * the rebuilt range must be in the rebuild with the same state. (The live read model may hold
 * fewer tasks, past retention, and newer rows, past the range: neither is a difference.)
 */
export async function verifyTasks(deps: Pick<ReplayDeps, 'clickhouse'>, rebuilt: TaskTables, ends: Offsets): Promise<ReadModelVerification> {
  const live = quoteIdentifier(LIVE_TASK_TABLES.tasks);
  const copy = quoteIdentifier(rebuilt.tasks);
  const query =
    `SELECT toString(count()) AS compared, toString(countIf(r.rebuilt_state != l.state)) AS differing FROM ` +
    // The range is applied after FINAL: a task's newest row decides whether it is compared.
    `(SELECT task_id, state FROM (SELECT task_id, state, kafka_partition, kafka_offset FROM ${live} FINAL) WHERE ${inRange(ends)}) AS l ` +
    `ANY LEFT JOIN (SELECT task_id, state AS rebuilt_state FROM ${copy} FINAL) AS r USING task_id`;
  const [row] = await (await deps.clickhouse.query({ query, format: 'JSONEachRow' })).json<{ compared: string; differing: string }>();
  const compared = Number(row?.compared ?? 0);
  const differing = Number(row?.differing ?? 0);
  return { compared, differing, verified: differing === 0 };
}
