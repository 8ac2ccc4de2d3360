import { quorumReadSettings, type InsertQuorum } from './capabilities.ts';
import { queryText, type ConnOptions } from './download/http.ts';
import type { ExternalTable } from './download/external-data.ts';

/**
 * What the read models (tasks, files) share: small queries answered as JSONEachRow, with the
 * callers' strings as external data, and (on a cluster) only blocks the insert quorum holds.
 */
export type RowsQuery = <T>(sql: string, tables?: readonly ExternalTable[]) => Promise<T[]>;

export function rowsQuery(conn: ConnOptions, quorum: InsertQuorum): RowsQuery {
  const settings = quorumReadSettings(quorum.replicas);
  return async <T>(sql: string, tables: readonly ExternalTable[] = []) => {
    const text = await queryText(conn, { sql: `${sql} FORMAT JSONEachRow`, tables, settings });
    return text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as T);
  };
}

/** One column of strings as an external table (ids, names): data, never SQL text. */
export const stringsTable = (name: string, column: string, values: readonly string[]): ExternalTable => ({ name, structure: `${column} String`, rows: values.map((v) => [v]) });

/** Per partition, the last offset a positions table (kafka_partition, kafka_offset) records. */
export async function readPositions(query: RowsQuery, positionsTable: string): Promise<Map<number, number>> {
  const rows = await query<{ p: number; o: string }>(`SELECT kafka_partition AS p, toString(max(kafka_offset)) AS o FROM ${positionsTable} GROUP BY kafka_partition`);
  return new Map(rows.map((r) => [Number(r.p), Number(r.o)]));
}
