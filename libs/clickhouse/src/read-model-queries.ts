import { unavailable } from '@meridian/domain';
import { quorumReadSettings, type InsertQuorum } from './capabilities.ts';
import { queryText, type ConnOptions } from './download/http.ts';
import type { ExternalTable } from './download/external-data.ts';

/**
 * What the read models (tasks, files) share: small queries answered as JSONEachRow, with the
 * callers' strings as external data, and (on a cluster) only blocks the insert quorum holds.
 * Each is bounded (MERIDIAN_READ_MODEL_QUERY_TIMEOUT_MS): a ClickHouse that accepts a query and
 * never answers must not hold a lookup, or a projector's position read, for minutes. Past the
 * bound the query is abandoned and fails as `unavailable` (503 at the api; a projector retries).
 */
export type RowsQuery = <T>(sql: string, tables?: readonly ExternalTable[]) => Promise<T[]>;

export function rowsQuery(conn: ConnOptions, quorum: InsertQuorum): RowsQuery {
  const settings = quorumReadSettings(quorum.replicas);
  const timeoutMs = conn.readModelQueryTimeoutMs ?? READ_MODEL_QUERY_TIMEOUT_MS;
  return async <T>(sql: string, tables: readonly ExternalTable[] = []) => {
    const signal = AbortSignal.timeout(timeoutMs);
    let text: string;
    try {
      text = await queryText(conn, { sql: `${sql} FORMAT JSONEachRow`, tables, settings, signal, reuseConnection: true });
    } catch (cause) {
      if (signal.aborted) throw unavailable('clickhouse', `ClickHouse did not answer a read-model query within ${timeoutMs} ms; retry later`, cause);
      throw cause;
    }
    return text
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as T);
  };
}

/** MERIDIAN_READ_MODEL_QUERY_TIMEOUT_MS's default, for options built without the settings (tests, tools). */
const READ_MODEL_QUERY_TIMEOUT_MS = 5000;

/** One column of strings as an external table (ids, names): data, never SQL text. */
export const stringsTable = (name: string, column: string, values: readonly string[]): ExternalTable => ({
  name,
  structure: `${column} String`,
  rows: values.map((v) => [v]),
});

/** Per partition, the last offset a positions table (kafka_partition, kafka_offset) records. */
export async function readPositions(query: RowsQuery, positionsTable: string): Promise<Map<number, number>> {
  const rows = await query<{ p: number; o: string }>(
    `SELECT kafka_partition AS p, toString(max(kafka_offset)) AS o FROM ${positionsTable} GROUP BY kafka_partition`,
  );
  return new Map(rows.map((r) => [Number(r.p), Number(r.o)]));
}
