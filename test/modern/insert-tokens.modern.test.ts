import { describe, expect, it } from 'vitest';
import { createClickHouse, createPointsSink, ensureDatabase, migrate, readMigrations } from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { scratchDatabase } from '../support/scratch-database.ts';

/**
 * The sink's second guard on current ClickHouse (26.9 on the chDB front, an Atomic database):
 * each insert carries a token of its table and Kafka range, and points and its catalog keep
 * the tokens of their last blocks (migration 004), so a block sent again after it was stored
 * is dropped by the server, even when the positions did not show it (here: sent twice
 * directly, without asking the positions in between).
 */
describe('insert tokens on current ClickHouse (chDB front)', () => {
  const { settings, conn: options, client } = scratchDatabase();
  const sink = createPointsSink(client);

  /** One upload's batch per partition, the same points whatever the offset. */
  const block = (offset: number): Segment[] =>
    [0, 2].map((partition) => ({
      partition,
      offset: offset + partition,
      batch: {
        type: 'PointBatch',
        task_id: 'tokens',
        metric_name: `tok${partition}`,
        updated_at: 5,
        timestamps: Array.from({ length: 300 }, (_, i) => 1000 + i),
        values: Array.from({ length: 300 }, (_, i) => i / 7),
      },
    }));

  const rowsOf = async <T>(sql: string): Promise<T[]> => (await client.query({ query: sql, format: 'JSONEachRow' })).json<T>();
  const pointsPerMetric = () =>
    rowsOf(
      'SELECT metric_name, toString(count()) AS n, toString(min(ts)) AS first_ts, toString(max(ts)) AS last_ts FROM points GROUP BY metric_name ORDER BY metric_name',
    );
  const catalog = () =>
    rowsOf(
      'SELECT metric_name, toString(countMerge(points)) AS n, toString(minMerge(first_ts)) AS first_ts, toString(maxMerge(last_ts)) AS last_ts FROM metric_catalog GROUP BY metric_name ORDER BY metric_name',
    );
  /** The token each of the sink's inserts into this database ran with, as the front recorded it. */
  async function tokensSent(): Promise<string[]> {
    const all = (await (await fetch(new URL('/chdb-front/inserts', settings.CLICKHOUSE_URL))).json()) as {
      query_id: string;
      database: string;
      insert_deduplication_token: string;
    }[];
    return all.filter((i) => i.database === settings.CLICKHOUSE_DATABASE && i.query_id.startsWith('points-insert:')).map((i) => i.insert_deduplication_token);
  }
  const count = async () => Number((await rowsOf<{ n: string }>('SELECT toString(count()) AS n FROM points'))[0]!.n);

  it('migration 004 gives points and its catalog a deduplication window of 1000 blocks', async () => {
    const tables = await rowsOf<{ name: string; window: string }>(
      "SELECT name, extract(engine_full, 'non_replicated_deduplication_window = (\\\\d+)') AS window FROM system.tables WHERE database = currentDatabase() AND name IN ('points', 'metric_catalog') ORDER BY name",
    );
    expect(tables).toEqual([
      { name: 'metric_catalog', window: '1000' },
      { name: 'points', window: '1000' },
    ]);
  });

  it('the same block sent twice is stored once, in points and in the catalog', async () => {
    await sink.insert(block(10));
    expect(await count()).toBe(600);
    await sink.insert(block(10));
    expect(await count()).toBe(600);
    expect(await catalog()).toEqual(await pointsPerMetric());
    expect(await sink.maxOffsets([0, 2])).toEqual(
      new Map([
        [0, 10],
        [2, 12],
      ]),
    );
    // Dropped by its token (the table and the range), which both attempts carried.
    expect(await tokensSent()).toEqual(['points:0=10-10,2=12-12', 'points:0=10-10,2=12-12']);
  });

  it("the same points from another range of the log are stored again (a user's duplicate upload is kept), and the catalog counts both", async () => {
    await sink.insert(block(20));
    expect(await count()).toBe(1200);
    const perMetric = await pointsPerMetric();
    expect(perMetric).toEqual([
      { metric_name: 'tok0', n: '600', first_ts: '1000', last_ts: '1299' },
      { metric_name: 'tok2', n: '600', first_ts: '1000', last_ts: '1299' },
    ]);
    expect(await catalog()).toEqual(perMetric);
    // And the block of the second range, sent again, is dropped too.
    await sink.insert(block(20));
    expect(await count()).toBe(1200);
  });

  it('an Atomic database whose catalog is still a view with an inner table stops at migration 004, saying so; converted as docs/operating/clickhouse-versions.md says, it migrates', async () => {
    const legacyOptions = { ...options, database: `${settings.CLICKHOUSE_DATABASE}_legacy` };
    await ensureDatabase(legacyOptions);
    const legacy = createClickHouse(legacyOptions);
    try {
      // Migrations 001 and 002 as written and recorded, as a deployment migrated on Atomic before the explicit-table catalog has them.
      await migrate(legacy, []);
      for (const m of readMigrations().filter((m) => m.version <= 2)) {
        for (const statement of m.statements) await legacy.command({ query: statement });
        await legacy.insert({ table: 'schema_migrations', values: [{ version: m.version, name: m.name, applied_at: 0 }], format: 'JSONEachRow' });
      }
      await expect(migrate(legacy)).rejects.toThrow(/^migration 004_deduplication_window failed: .*MaterializedView/);
      // The conversion of docs/operating/clickhouse-versions.md, with ingestion stopped.
      for (const statement of [
        'CREATE TABLE metric_catalog_new ENGINE = AggregatingMergeTree() ORDER BY metric_name AS SELECT metric_name, countState() AS points, minState(ts) AS first_ts, maxState(ts) AS last_ts FROM points GROUP BY metric_name',
        'DROP TABLE metric_catalog',
        'RENAME TABLE metric_catalog_new TO metric_catalog',
        'CREATE MATERIALIZED VIEW metric_catalog_feed TO metric_catalog AS SELECT metric_name, countState() AS points, minState(ts) AS first_ts, maxState(ts) AS last_ts FROM points GROUP BY metric_name',
      ])
        await legacy.command({ query: statement });
      // 004 and every migration after it.
      expect(await migrate(legacy)).toEqual(
        readMigrations()
          .filter((m) => m.version >= 4)
          .map((m) => m.version),
      );
      const windows = await (
        await legacy.query({
          query:
            "SELECT name, extract(engine_full, 'non_replicated_deduplication_window = (\\d+)') AS window FROM system.tables WHERE database = currentDatabase() AND name IN ('points', 'metric_catalog') ORDER BY name",
          format: 'JSONEachRow',
        })
      ).json();
      expect(windows).toEqual([
        { name: 'metric_catalog', window: '1000' },
        { name: 'points', window: '1000' },
      ]);
    } finally {
      await legacy.command({ query: `DROP DATABASE IF EXISTS ${legacyOptions.database}` });
      await legacy.close();
    }
  });
});
