import { describe, expect, it } from 'vitest';
import { createPointsSink, serverCapabilities } from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { scratchDatabase } from '../support/scratch-database.ts';

/**
 * What the adapter does differently on current ClickHouse, proven on the chDB front (26.9) whose
 * profile buffers inserts by default (`async_insert=1`, as every release from 26.2 does).
 */
describe('the adapter on current ClickHouse (chDB front)', () => {
  const { settings, client } = scratchDatabase();
  const segments: Segment[] = [0, 1].map((partition) => ({
    partition,
    offset: 40 + partition,
    batch: {
      type: 'PointBatch',
      task_id: `sync-${partition}`,
      metric_name: `m${partition}`,
      updated_at: 5,
      timestamps: Array.from({ length: 500 }, (_, i) => i),
      values: Array.from({ length: 500 }, (_, i) => i / 3),
    },
  }));

  /** The value of async_insert each INSERT of this database ran with, as the front recorded it (the engine itself has no insert queue). */
  async function insertsRanWith(queryIdPrefix: string): Promise<string[]> {
    const all = (await (await fetch(new URL('/chdb-front/inserts', settings.CLICKHOUSE_URL))).json()) as {
      query_id: string;
      database: string;
      async_insert: string;
    }[];
    return all.filter((i) => i.database === settings.CLICKHOUSE_DATABASE && i.query_id.startsWith(queryIdPrefix)).map((i) => i.async_insert);
  }

  it('detects the version and the Atomic database at start: EXCHANGE TABLES, async_insert known', async () => {
    const caps = await serverCapabilities(client);
    expect(caps.version).toMatch(/^26\./);
    expect(caps).toMatchObject({
      databaseEngine: 'Atomic',
      atomicDatabase: true,
      exchangeTables: true,
      knowsAsyncInsert: true,
      insertDeduplicationToken: true,
    });
  });

  it("the server buffers inserts by default, and the sink's inserts turn that off: each is one block, visible when it returns", async () => {
    // Control: an insert that does not ask runs with the profile's async_insert=1.
    await client.command({ query: 'CREATE TABLE control (n UInt8) ENGINE = MergeTree ORDER BY n' });
    await client.insert({ table: 'control', format: 'JSONEachRow', values: [{ n: 1 }], query_id: 'control-insert' });
    expect(await insertsRanWith('control-insert')).toEqual(['true']);

    const sink = createPointsSink(client);
    await sink.insert(segments);
    expect(await insertsRanWith('points-insert:points:')).toEqual(['false']);
    const rows = await (await client.query({ query: 'SELECT count() AS n FROM points', format: 'JSONEachRow' })).json<{ n: string }>();
    expect(Number(rows[0]!.n)).toBe(1000);
    expect(await sink.maxOffsets([0, 1, 2])).toEqual(
      new Map([
        [0, 40],
        [1, 41],
        [2, -1],
      ]),
    );
  });

  it("JSON answers quote 64-bit integers as on 18.16, although 26.9's default is not to", async () => {
    const rows = await (
      await client.query({
        query: "SELECT toInt64(9007199254740993) AS big, getSetting('output_format_json_quote_64bit_integers') AS pinned",
        format: 'JSONEachRow',
      })
    ).json<{ big: unknown; pinned: unknown }>();
    expect(rows).toEqual([{ big: '9007199254740993', pinned: true }]);
  });
});
