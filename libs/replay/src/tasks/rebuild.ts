import { randomBytes } from 'node:crypto';
import { clickhouseTaskReadModel, clickhouseTaskReadModelWriter, LIVE_TASK_TABLES, quoteIdentifier, type TaskTables } from '@meridian/clickhouse';
import { LiveTasks, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import type { ReplayDeps } from '../deps.ts';
import { retry, RETRY_POLICIES } from '@meridian/retry';
import { topicOffsets, type Offsets } from '../bounds.ts';
import { readRanges } from '../log-reader.ts';
import { projectTaskBatch, taskEventsAfter } from '@meridian/projection';
import { tableEngines } from '../generations.ts';
import { refuseReplicated } from '../swap.ts';

/** Where a rebuild of the tasks read model is written: beside the live tables, never over them. */
export const REBUILT_TASK_TABLES: TaskTables = { tasks: 'tasks_rebuilt', byId: 'tasks_by_id_rebuilt', positions: 'tasks_positions_rebuilt' };

export type TaskVerification = {
  /** Live rows compared: those whose last event is inside the rebuilt range (later changes are the live projector's). */
  readonly compared: number;
  /** Of those, rows the rebuild holds differently or not at all. */
  readonly differing: number;
  readonly verified: boolean;
};

export type RebuildTasksResult = {
  readonly tables: TaskTables;
  readonly events: number;
  readonly rows: number;
  readonly ends: Offsets;
  readonly ms: number;
  readonly verification: TaskVerification;
};

/**
 * `meridian replay rebuild tasks`: the tasks topic, from its start to its end now, projected by
 * the live projector's own step into fresh tables beside the live read model (REBUILT_TASK_TABLES),
 * then verified against the live tables. A rebuild has no retention: it restores tasks the live
 * read model has already let go of. Swapping it in is not implemented (see the report of issue 13).
 */
export async function rebuildTasks(platform: ReplayDeps, onProgress?: (events: number) => void): Promise<RebuildTasksResult> {
  const started = performance.now();
  const { clickhouse, topics } = platform;
  const t = REBUILT_TASK_TABLES;
  // A copy of a replicated table would share its ZooKeeper path: a replica of the live tasks, not a rebuild.
  refuseReplicated((await tableEngines(clickhouse)).get(LIVE_TASK_TABLES.tasks), LIVE_TASK_TABLES.tasks);
  for (const [name, live] of [[t.tasks, LIVE_TASK_TABLES.tasks], [t.byId, LIVE_TASK_TABLES.byId], [t.positions, LIVE_TASK_TABLES.positions]] as const) {
    await clickhouse.command({ query: `DROP TABLE IF EXISTS ${quoteIdentifier(name)}` });
    await clickhouse.command({ query: `CREATE TABLE ${quoteIdentifier(name)} AS ${quoteIdentifier(live)}` });
  }
  const readModel = clickhouseTaskReadModel(platform.clickhouseOptions, t);
  const writer = clickhouseTaskReadModelWriter(clickhouse, t);
  const live = new LiveTasks();
  const codec = createEventCodec<TaskEvent>();
  const persist = <T>(what: string, attempt: () => Promise<T>) => retry(attempt, {
    ...RETRY_POLICIES.rebuildInsert,
    onRetry: (error, n, delay) => platform.logger.warn({ err: error, attempt: n, retry_in_ms: delay }, `${what} failed; retrying`),
  });
  const { low, end } = await topicOffsets(platform.log.admin, topics.tasks);
  let events = 0;
  let rows = 0;
  for await (const batch of readRanges([...end].map(([partition, e]) => ({ topic: topics.tasks, partition, start: low.get(partition) ?? 0, end: e })), {
    kafka: platform.log.kafka,
    admin: platform.log.admin,
    groupId: `${platform.topicPrefix}replay-tasks-${randomBytes(4).toString('hex')}`,
    sequential: false,
  })) {
    if (batch.messages.length === 0 && !batch.done) continue;
    const last = batch.done ? end.get(batch.partition)! - 1 : Number(batch.messages[batch.messages.length - 1]!.offset);
    const decoded = taskEventsAfter(codec, batch.partition, batch.messages, -1);
    events += batch.messages.length;
    rows += await projectTaskBatch({ live, readModel, writer, persist }, batch.partition, decoded, last);
    onProgress?.(events);
  }
  const verification = await verifyTasks(platform, t, end);
  return { tables: t, events, rows, ends: end, ms: performance.now() - started, verification };
}

/**
 * Compares the live read model with a rebuilt one: every live row whose last event lies inside
 * the rebuilt range must be in the rebuild with the same state. (The live read model may hold
 * fewer tasks, past retention, and newer rows, past the range: neither is a difference.)
 */
export async function verifyTasks(platform: Pick<ReplayDeps, 'clickhouse'>, rebuilt: TaskTables, ends: Offsets): Promise<TaskVerification> {
  const inRange = [...ends].map(([p, e]) => `(kafka_partition = ${Math.trunc(p)} AND kafka_offset < ${Math.trunc(e)})`).join(' OR ') || '0';
  const live = quoteIdentifier(LIVE_TASK_TABLES.tasks);
  const copy = quoteIdentifier(rebuilt.tasks);
  const query = `SELECT toString(count()) AS compared, toString(countIf(r.rebuilt_state != l.state)) AS differing FROM `
    + `(SELECT task_id, state FROM ${live} FINAL WHERE ${inRange}) AS l `
    + `ANY LEFT JOIN (SELECT task_id, state AS rebuilt_state FROM ${copy} FINAL) AS r USING task_id`;
  const [row] = await (await platform.clickhouse.query({ query, format: 'JSONEachRow' })).json<{ compared: string; differing: string }>();
  const compared = Number(row?.compared ?? 0);
  const differing = Number(row?.differing ?? 0);
  return { compared, differing, verified: differing === 0 };
}
