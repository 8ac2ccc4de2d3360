import { beforeAll, afterAll } from 'vitest';
import { createClickHouse, ensureDatabase, migrate, type ClickHouseClient } from '@meridian/clickhouse';
import { adapterOptions } from '@meridian/config';
import { isolatedSettings } from './settings.ts';

/** The settings of a database of its own (isolatedSettings), its connection options and a client of it. */
export function scratchConnection() {
  const settings = isolatedSettings();
  const conn = adapterOptions(settings, 'test').clickhouse;
  return { settings, conn, client: createClickHouse(conn) };
}

/**
 * A database of its own for one describe that its tests create themselves (the migrations' own
 * test does), dropped after them.
 */
export function unmigratedScratchDatabase() {
  const scratch = scratchConnection();
  afterAll(async () => {
    await scratch.client.command({ query: `DROP DATABASE IF EXISTS ${scratch.settings.CLICKHOUSE_DATABASE}` });
    await scratch.client.close();
  });
  return scratch;
}

/**
 * A database of its own for one describe, migrated before its tests (then seeded) and dropped
 * after them.
 */
export function scratchDatabase(seed: (client: ClickHouseClient) => Promise<void> = async () => {}) {
  const scratch = unmigratedScratchDatabase();
  beforeAll(async () => {
    await ensureDatabase(scratch.conn);
    await migrate(scratch.client);
    await seed(scratch.client);
  });
  return scratch;
}
