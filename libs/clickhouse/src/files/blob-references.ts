import type { BlobReferences } from '@meridian/domain';
import { quoteIdentifier, type ClickHouseClient } from '../client.ts';
import { NO_QUORUM, quorumInsertSettings, serverCapabilities, synchronousInsertSettings, type InsertQuorum } from '../capabilities.ts';
import type { ConnOptions } from '../download/http.ts';
import { int } from '../download/filter-sql.ts';
import { readPositions, rowsQuery, stringsTable } from '../read-model-queries.ts';
import { LIVE_FILE_TABLES, type FileTables } from './read-model.ts';

/** Where the blob collectors record how far they have handled deletions (migration 006). */
const SWEEPS_TABLE = 'blob_sweeps';

/**
 * The blob collector's questions to the files read model (migration 006's `file_blobs`, written
 * by the files projector) and its sweep position (`blob_sweeps`). Blob hashes travel as external
 * data, never as SQL text.
 */
export function clickhouseBlobReferences(
  conn: ConnOptions,
  client: ClickHouseClient,
  tables: FileTables = LIVE_FILE_TABLES,
  quorum: InsertQuorum = NO_QUORUM,
): BlobReferences {
  const blobs = quoteIdentifier(tables.blobs);
  const query = rowsQuery(conn, quorum);
  return {
    positions: () => readPositions(query, quoteIdentifier(tables.positions)),

    async referenced(sha256s) {
      if (sha256s.length === 0) return new Set();
      // FINAL first (a file's newest row decides), then live: one range of the key per blob.
      const found = await query<{ sha256: string }>(
        `SELECT DISTINCT sha256 FROM (SELECT sha256, live FROM ${blobs} FINAL WHERE sha256 IN (SELECT sha256 FROM wanted)) WHERE live = 1`,
        [stringsTable('wanted', 'sha256', sha256s)],
      );
      return new Set(found.map((r) => r.sha256));
    },

    async released(partition, after, upTo, limit) {
      // Only a deletion writes live = 0, at its own offset: no FINAL needed. Not in the key's
      // order: it reads the three narrow columns of the table (once per collection that has
      // deletions to handle, never at a lookup).
      const found = await query<{ sha256: string; o: string }>(
        `SELECT sha256, toString(kafka_offset) AS o FROM ${blobs} WHERE live = 0 AND kafka_partition = ${int(partition)}` +
          `${after < 0 ? '' : ` AND kafka_offset > ${int(after)}`} AND kafka_offset <= ${int(upTo)} ORDER BY kafka_offset LIMIT ${int(limit)}`,
      );
      return found.map((r) => ({ sha256: r.sha256, offset: Number(r.o) }));
    },

    swept: () => readPositions(query, SWEEPS_TABLE),

    async recordSwept(positions) {
      if (positions.size === 0) return;
      const settings = { ...synchronousInsertSettings(await serverCapabilities(client)), ...quorumInsertSettings(quorum.replicas, quorum.timeoutMs) };
      await client.insert({
        table: SWEEPS_TABLE,
        values: [...positions].map(([kafka_partition, kafka_offset]) => ({ kafka_partition, kafka_offset })),
        format: 'JSONEachRow',
        clickhouse_settings: settings,
      });
    },
  };
}
