import { describe, expect, it } from 'vitest';
import { capabilities, ensureDatabase, migrate, readMigrations, serverCapabilities, statementsFor, type ClickHouseClient } from '@meridian/clickhouse';
import { createGeneration, readRegistry } from '@meridian/replay';
import { unmigratedScratchDatabase } from '../support/scratch-database.ts';

/**
 * A rebuild's points table has the layout the migrations give `points` on this server (009's
 * codecs, 014's blocks of task ids, 004's window), whether it is made `AS points` or, with no live
 * table, from migration 001, and whatever the live table got: here a database migrated as 18.16
 * migrates (their statements left out) and not started again on this server yet. On 18.16 none of
 * them exists; on 26.9 (the modern tier) all do.
 */
describe("a rebuilt generation's points table", () => {
  const { conn: options, client } = unmigratedScratchDatabase();
  const { conn: referenceOptions, client: reference } = unmigratedScratchDatabase();
  /** A table's definition, without its database and name. */
  const layout = async (of: ClickHouseClient, table: string) => {
    const [found] = await (
      await of.query({
        query: `SELECT create_table_query AS query FROM system.tables WHERE database = currentDatabase() AND name = '${table}'`,
        format: 'JSONEachRow',
      })
    ).json<{ query: string }>();
    return found!.query.replace(/^CREATE TABLE \S+ /, 'CREATE TABLE t ');
  };

  it('has the codecs and settings of points migrated on this server, made AS a live points without them or from the migrations', async () => {
    await ensureDatabase(referenceOptions);
    await migrate(reference);
    await ensureDatabase(options);
    const ch18 = capabilities('18.16.1', 'Ordinary');
    await migrate(
      client,
      readMigrations().map((m) => ({ ...m, statements: m.statements.filter((s) => statementsFor(s, ch18).length > 0) })),
    );
    const migrated = await layout(reference, 'points');
    const caps = await serverCapabilities(client);
    if (caps.columnCodecs) expect(await layout(client, 'points')).not.toBe(migrated);
    if (caps.columnSettings) expect(migrated).toMatch(/SETTINGS \(min_compress_block_size = 4194304, max_compress_block_size = 4194304\)/);

    await readRegistry(client); // creates the registry, as a rebuild does before it creates a generation
    await createGeneration(client, 2, {});
    expect(await layout(client, 'points_g2')).toBe(migrated);
    // No live points (dropped, or put aside): the generation is made from migration 001's DDL.
    await client.command({ query: 'RENAME TABLE points TO points_aside' });
    await createGeneration(client, 3, {});
    expect(await layout(client, 'points_g3')).toBe(migrated);
  });
});
