import { describe, expect, it } from 'vitest';
import { capabilities, ensureDatabase, migrate, readMigrations, serverCapabilities, statementsFor, type ClickHouseClient } from '@meridian/clickhouse';
import { unmigratedScratchDatabase } from '../support/scratch-database.ts';

describe('ClickHouse adapter against a real server', () => {
  const { conn: options, client } = unmigratedScratchDatabase();

  it('creates the database and applies every migration once', async () => {
    await ensureDatabase(options);
    const first = await migrate(client);
    expect(first).toEqual(readMigrations().map((m) => m.version));
    expect(await migrate(client)).toEqual([]);
    const rows = await (await client.query({ query: 'SELECT count() AS n FROM schema_migrations', format: 'JSONEachRow' })).json<{ n: string }>();
    expect(Number(rows[0]!.n)).toBe(first.length);
  });

  it('the marks migrations run again over what they did (two processes migrating at once), on this server', async () => {
    const marks = readMigrations().filter((m) => m.name === 'rollup_marks' || m.name === 'rollup_mark_counts');
    expect(marks.map((m) => m.version)).toEqual([12, 13]);
    await client.command({
      query:
        "INSERT INTO points_1h_sealed (metric_name, bucket, rows, points, min_value, max_value, sum_value, last_value, marks) VALUES ('m', 0, 1, 1, 0, 0, 0, 0, 0)",
    });
    // Not recorded as done: the statements run again, their columns already there, the counts' table too.
    expect(
      await migrate(
        client,
        marks.map((m) => ({ ...m, version: 1000 + m.version })),
      ),
    ).toEqual([1012, 1013]);
    const columns = await (
      await client.query({
        query: "SELECT table, type FROM system.columns WHERE database = currentDatabase() AND name = 'marks' ORDER BY table",
        format: 'JSONEachRow',
      })
    ).json<Record<string, unknown>>();
    expect(columns).toEqual([
      { table: 'points_1h_sealed', type: 'UInt64' },
      { table: 'points_1m_sealed', type: 'UInt64' },
    ]);
    // 013 leaves the counted marks, no marks of 012, and no seal of before it (they held 012's numbers).
    const tables = await (
      await client.query({
        query: "SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND name LIKE 'rollup_mark%'",
        format: 'JSONEachRow',
      })
    ).json<Record<string, unknown>>();
    expect(tables).toEqual([{ name: 'rollup_mark_counts', engine: 'SummingMergeTree' }]);
    const seals = await (await client.query({ query: 'SELECT count() AS n FROM points_1h_sealed', format: 'JSONEachRow' })).json<{ n: string }>();
    expect(seals).toEqual([{ n: '0' }]);
  });

  it('inserts points and selects them back', async () => {
    await client.insert({
      table: 'points',
      format: 'JSONEachRow',
      values: [
        {
          metric_name: 'cpu:load',
          ts: 1_700_000_000_000,
          value: 0.5,
          updated_at: 1_700_000_001_000,
          task_id: 't1',
          kafka_partition: 0,
          kafka_offset: 7,
          row_in_batch: 0,
        },
        {
          metric_name: 'cpu:load',
          ts: 1_700_000_060_000,
          value: 1.25,
          updated_at: 1_700_000_001_000,
          task_id: 't1',
          kafka_partition: 0,
          kafka_offset: 7,
          row_in_batch: 1,
        },
      ],
    });
    const rows = await (
      await client.query({ query: 'SELECT metric_name, ts, value FROM points ORDER BY ts', format: 'JSONEachRow' })
    ).json<Record<string, unknown>>();
    expect(rows).toEqual([
      { metric_name: 'cpu:load', ts: '1700000000000', value: 0.5 },
      { metric_name: 'cpu:load', ts: '1700000060000', value: 1.25 },
    ]);
  });
});

describe('migrations that need a capability, on a database migrated where the server lacked it', () => {
  const { conn: options, client } = unmigratedScratchDatabase();
  // A database migrated on this server from the start: the layout the upgraded one must reach.
  const { conn: referenceOptions, client: reference } = unmigratedScratchDatabase();
  const tables = "('points', 'metric_catalog', 'points_1m', 'points_1h')";
  /** Each table's definition, its database's name taken out. */
  const definitions = async (of: ClickHouseClient) =>
    (
      await (
        await of.query({
          query: `SELECT name, replaceAll(create_table_query, concat(currentDatabase(), '.'), '') AS query FROM system.tables WHERE database = currentDatabase() AND name IN ${tables} ORDER BY name`,
          format: 'JSONEachRow',
        })
      ).json<{ name: string; query: string }>()
    ).map((t): [string, string] => [t.name, t.query]);
  const points = async (of: ClickHouseClient) => new Map(await definitions(of)).get('points')!;

  it('gets the statements 18.16 left out once the server has their capability, at the next migrate, once', async () => {
    await ensureDatabase(options);
    await ensureDatabase(referenceOptions);
    await migrate(reference);
    // Every migration recorded as 18.16 records it: its capability-gated statements (the windows of
    // 004 and 010, 009's codecs, 014's blocks) left out.
    const ch18 = capabilities('18.16.1', 'Ordinary');
    const as18 = readMigrations().map((m) => ({ ...m, statements: m.statements.filter((s) => statementsFor(s, ch18).length > 0) }));
    expect(await migrate(client, as18)).toEqual(readMigrations().map((m) => m.version));
    expect(await points(client)).not.toMatch(/CODEC|compress_block_size|deduplication_window/);

    const caps = await serverCapabilities(client);
    // Two processes starting at once: the same ALTERs, each harmless after the other.
    const [first, second] = await Promise.all([migrate(client), migrate(client)]);
    const gated = [
      ...(caps.deduplicatedInserts ? [4] : []),
      ...(caps.columnCodecs ? [9] : []),
      ...(caps.deduplicatedInserts ? [10] : []),
      ...(caps.columnSettings ? [14] : []),
    ];
    expect([...new Set([...first, ...second])].sort((a, b) => a - b)).toEqual(gated);
    // The layout of a database migrated on this server from the start.
    expect(await definitions(client)).toEqual(await definitions(reference));
    if (caps.columnCodecs) expect(await points(client)).toMatch(/[`]ts[`] Int64 CODEC\(Delta\(8\), ZSTD\(3\)\)/);
    if (caps.columnSettings)
      expect(await points(client)).toMatch(
        /[`]task_id[`] String CODEC\(ZSTD\(3\)\) SETTINGS \(min_compress_block_size = 4194304, max_compress_block_size = 4194304\)/,
      );
    // Complete now: nothing more to do.
    expect(await migrate(client)).toEqual([]);
  });
});
