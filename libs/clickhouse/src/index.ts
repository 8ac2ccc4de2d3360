export { createClickHouse, ensureDatabase, pingClickHouse, quoteIdentifier, type ClickHouseClient, type ClickHouseOptions } from './client.ts';
export { migrate, readMigrations, MIGRATIONS_DIR, type Migration } from './migrate.ts';
