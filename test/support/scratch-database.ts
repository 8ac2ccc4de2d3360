import { beforeAll, afterAll } from 'vitest';
import { createClickHouse, ensureDatabase, migrate, type ClickHouseClient } from '@meridian/clickhouse';
import { isolatedSettings } from './settings.ts';

/** The settings of a database of its own (isolatedSettings), its connection options and a client of it. */
export function scratchConnection() {
  const settings = isolatedSettings();
  const conn = {
    url: settings.CLICKHOUSE_URL,
    username: settings.CLICKHOUSE_USER,
    password: settings.CLICKHOUSE_PASSWORD,
    database: settings.CLICKHOUSE_DATABASE,
  };
  return { settings, conn, client: createClickHouse(conn) };
}

/**
 * A database of its own for one describe, migrated before its tests (then seeded) and dropped
 * after them.
 */
export function scratchDatabase(seed: (client: ClickHouseClient) => Promise<void> = async () => {}) {
  const { settings, conn, client } = scratchConnection();
  beforeAll(async () => {
    await ensureDatabase(conn);
    await migrate(client);
    await seed(client);
  });
  afterAll(async () => {
    await client.command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` });
    await client.close();
  });
  return { conn, client };
}
