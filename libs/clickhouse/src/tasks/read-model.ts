import type { Task, TaskListQuery, TaskReadModel, TaskReadModelWriter, TaskRow } from '@meridian/domain';
import { quoteIdentifier, type ClickHouseClient } from '../client.ts';
import { NO_QUORUM, quorumInsertSettings, quorumReadSettings, serverCapabilities, synchronousInsertSettings, type InsertQuorum } from '../capabilities.ts';
import type { ConnOptions } from '../download/http.ts';
import { int } from '../download/filter-sql.ts';
import type { ExternalTable } from '../download/external-data.ts';
import { untilMutationsDone } from '../server-work.ts';
import { readPositions, rowsQuery, stringsTable } from '../read-model-queries.ts';

/**
 * The tasks read model in ClickHouse (migration 003): `tasks` (latest state per task, ordered
 * for per-user listing), `tasks_by_id` (task_id → that order's key) and `tasks_positions`.
 * Strings from callers (ids, user names, filters) travel as external data, never as SQL text.
 * On a cluster (`quorum`), as for the points sink: every insert waits for the quorum and every
 * read (positions, rows) sees only blocks the quorum holds, so no process resumes or prunes
 * past a block a replica lacks.
 */

/** The three tables of one tasks read model: the live one, or one a rebuild writes beside it. */
export type TaskTables = { readonly tasks: string; readonly byId: string; readonly positions: string };
export const LIVE_TASK_TABLES: TaskTables = { tasks: 'tasks', byId: 'tasks_by_id', positions: 'tasks_positions' };

const quoted = (t: TaskTables) => ({ tasks: quoteIdentifier(t.tasks), byId: quoteIdentifier(t.byId), positions: quoteIdentifier(t.positions) });

const FINISHED = `('succeeded', 'failed')`;
/** How long one expiry waits for tasks_by_id's deletion before it gives up (the next expiry starts it again). */
const EXPIRY_MUTATION_TIMEOUT_MS = 600_000;
const UNFINISHED = `('queued', 'running')`;

const idsTable = (ids: readonly string[]): ExternalTable => stringsTable('wanted', 'task_id', ids);
/** Rows of `tasks` whose key tasks_by_id gives for the wanted ids: a point read on both tables. */
const byIdOf = (byId: string) =>
  `(user_name, created_at, task_id) IN (SELECT user_name, created_at, task_id FROM ${byId} WHERE task_id IN (SELECT task_id FROM wanted))`;

export function clickhouseTaskReadModel(conn: ConnOptions, tables: TaskTables = LIVE_TASK_TABLES, quorum: InsertQuorum = NO_QUORUM): TaskReadModel {
  const t = quoted(tables);
  const BY_ID = byIdOf(t.byId);
  const query = rowsQuery(conn, quorum);
  return {
    async get(taskId) {
      const [row] = await query<{ state: string }>(`SELECT state FROM ${t.tasks} FINAL WHERE ${BY_ID}`, [idsTable([taskId])]);
      return row ? (JSON.parse(row.state) as Task) : undefined;
    },

    async list(q: TaskListQuery) {
      // One row of arguments; each is read back as a scalar, so none is SQL text.
      const args: ExternalTable = {
        name: 'arg',
        structure: 'user_name String, after_id String, status String, kind String',
        rows: [[q.user_name, q.before?.task_id ?? '', q.status ?? '', q.kind ?? '']],
      };
      const arg = (column: string) => `(SELECT any(${column}) FROM arg)`;
      const before = q.before
        ? ` AND (created_at < ${int(q.before.created_at)} OR (created_at = ${int(q.before.created_at)} AND task_id < ${arg('after_id')}))`
        : '';
      // FINAL first, filters on status and kind after: rows of one task not merged yet differ in status.
      const rows = await query<{ state: string }>(
        `SELECT state FROM (SELECT state, status, kind, created_at, task_id FROM ${t.tasks} FINAL WHERE user_name = ${arg('user_name')}${before})` +
          ` WHERE (${arg('status')} = '' OR status = ${arg('status')}) AND (${arg('kind')} = '' OR kind = ${arg('kind')})` +
          ` ORDER BY created_at DESC, task_id DESC LIMIT ${int(q.limit)}`,
        [args],
      );
      return rows.map((r) => JSON.parse(r.state) as Task);
    },

    async finishedAmong(taskIds) {
      if (taskIds.length === 0) return new Set();
      // A finished status is final, so any finished row of a task means the task is finished.
      const rows = await query<{ task_id: string }>(`SELECT DISTINCT task_id FROM ${t.tasks} WHERE ${BY_ID} AND status IN ${FINISHED}`, [idsTable(taskIds)]);
      return new Set(rows.map((r) => r.task_id));
    },

    positions: () => readPositions(query, t.positions),

    async unfinished(partitions) {
      const only = partitions ? ` AND kafka_partition IN (${partitions.length > 0 ? partitions.map(int).join(', ') : '-1'})` : '';
      // argMax rather than FINAL: the candidates are found by a scan of two small columns, and only
      // their rows' states are read.
      const rows = await query<{ state: string; p: number; o: string }>(
        `SELECT argMax(state, kafka_offset) AS state, any(kafka_partition) AS p, toString(max(kafka_offset)) AS o, argMax(status, kafka_offset) AS s FROM ${t.tasks}` +
          ` WHERE task_id IN (SELECT task_id FROM ${t.tasks} WHERE status IN ${UNFINISHED}${only}) GROUP BY task_id HAVING s IN ${UNFINISHED}`,
      );
      return rows.map((r) => ({ task: JSON.parse(r.state) as Task, partition: Number(r.p), offset: Number(r.o) }));
    },
  };
}

export function clickhouseTaskReadModelWriter(
  client: ClickHouseClient,
  tables: TaskTables = LIVE_TASK_TABLES,
  quorum: InsertQuorum = NO_QUORUM,
): TaskReadModelWriter {
  const t = quoted(tables);
  return {
    async write(rows: readonly TaskRow[], positions) {
      const settings = { ...synchronousInsertSettings(await serverCapabilities(client)), ...quorumInsertSettings(quorum.replicas, quorum.timeoutMs) };
      if (rows.length > 0) {
        // The key first: a task in `tasks` is always findable by id.
        await client.insert({
          table: tables.byId,
          values: rows.map(({ task }) => ({ task_id: task.task_id, user_name: task.user_name, created_at: task.created_at })),
          format: 'JSONEachRow',
          clickhouse_settings: settings,
        });
        await client.insert({
          table: tables.tasks,
          values: rows.map(({ task, partition, offset }) => ({
            task_id: task.task_id,
            user_name: task.user_name,
            kind: task.kind,
            status: task.status,
            created_at: task.created_at,
            updated_at: task.updated_at,
            state: JSON.stringify(task),
            kafka_partition: partition,
            kafka_offset: offset,
          })),
          format: 'JSONEachRow',
          clickhouse_settings: settings,
        });
      }
      if (positions.size > 0) {
        await client.insert({
          table: tables.positions,
          values: [...positions].map(([kafka_partition, kafka_offset]) => ({ kafka_partition, kafka_offset })),
          format: 'JSONEachRow',
          clickhouse_settings: settings,
        });
      }
    },

    async expire(beforeMs) {
      // Every row of the task goes (not only its finished one), or an older row would reappear.
      // One mutation per table, both on the same (stable: finished is final) set; 18.16 has no
      // TTL, and a mutation works the same on every version.
      const due = `status IN ${FINISHED} AND updated_at < ${int(beforeMs)}`;
      // A mutation rewrites parts: none is started when nothing is due.
      const [found] = await (
        await client.query({
          query: `SELECT toString(count()) AS n FROM ${t.tasks} WHERE ${due}`,
          format: 'JSONEachRow',
          clickhouse_settings: quorumReadSettings(quorum.replicas),
        })
      ).json<{ n: string }>();
      if (Number(found?.n ?? 0) === 0) return;
      const expired = `task_id IN (SELECT task_id FROM ${t.tasks} WHERE ${due})`;
      // tasks_by_id's set is read from tasks as its parts are rewritten: tasks is mutated only
      // once that is done, or some rows of tasks_by_id would find their task gone and stay.
      await client.command({ query: `ALTER TABLE ${t.byId} DELETE WHERE ${expired}` });
      await untilMutationsDone(client, tables.byId, EXPIRY_MUTATION_TIMEOUT_MS);
      await client.command({ query: `ALTER TABLE ${t.tasks} DELETE WHERE ${expired}` });
    },
  };
}
