import type { ClickHouseClient } from '../client.ts';
import { NO_QUORUM, type InsertQuorum } from '../capabilities.ts';
import { noneRunningWithin } from '../server-work.ts';
import type { PointsSinkOptions } from './sink.ts';

/**
 * Every projector insert is named `points-insert:<table>:<uuid>`, and every staged share's
 * attach (and the catalog insert after it) `points-attach:<table>:<uuid>` (stage.ts), so those
 * still running can be found.
 */
export const INSERT_ID = /^points-(insert|attach):[A-Za-z_][A-Za-z0-9_]*:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What the parts of one points sink share: its table, options, names of its queries, and the helpers every part uses. */
export type SinkContext = ReturnType<typeof sinkContext>;

export function sinkContext(client: ClickHouseClient, table: string, options: PointsSinkOptions) {
  const quorum: InsertQuorum = options.quorum ?? NO_QUORUM;
  const idPrefix = `points-insert:${table}:`;
  const attachPrefix = `points-attach:${table}:`;

  async function rows<T>(query: string, settings: Record<string, number> = {}): Promise<T[]> {
    return (await client.query({ query, format: 'JSONEachRow', clickhouse_settings: settings })).json<T>();
  }

  /** Waits until none of the given inserts is running any more (their outcome is then final). */
  async function awaitGone(ids: readonly string[], timeoutMs: number): Promise<void> {
    const waiting = ids.filter((id) => INSERT_ID.test(id));
    if (waiting.length === 0) return;
    if (!(await noneRunningWithin(client, `query_id IN (${waiting.map((id) => `'${id}'`).join(', ')})`, timeoutMs))) {
      throw new Error(`inserts among ${waiting.join(', ')} still running after ${timeoutMs} ms`);
    }
  }

  return { client, table, options, quorum, idPrefix, attachPrefix, rows, awaitGone };
}
