import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';

export const MIGRATIONS_DIR = new URL('../migrations/', import.meta.url).pathname;

export type Migration = { readonly version: number; readonly name: string; readonly statements: readonly string[] };

/** Reads NNN_name.sql files in order; statements are separated by lines holding only `;`. */
export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .map((file) => ({ file, match: /^(\d+)_([\w-]+)\.sql$/.exec(file) }))
    .filter((f): f is { file: string; match: RegExpExecArray } => f.match !== null)
    .map(({ file, match }) => ({
      version: Number(match[1]),
      name: match[2]!,
      statements: readFileSync(join(dir, file), 'utf8')
        .split(/^;\s*$/m)
        .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
        .filter((s) => s.length > 0),
    }))
    .sort((a, b) => a.version - b.version);
}

/**
 * Applies every migration not yet recorded, in order, and records it. Statements are
 * idempotent (IF NOT EXISTS), so two processes migrating at once at start are harmless.
 */
export async function migrate(client: ClickHouseClient, migrations: readonly Migration[] = readMigrations()): Promise<number[]> {
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, applied_at DateTime)
            ENGINE = MergeTree() ORDER BY version`,
  });
  const rows = await (await client.query({ query: 'SELECT DISTINCT version FROM schema_migrations', format: 'JSONEachRow' })).json<{ version: number }>();
  const applied = new Set(rows.map((r) => Number(r.version)));
  const done: number[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    for (const statement of m.statements) await client.command({ query: statement });
    await client.insert({
      table: 'schema_migrations',
      values: [{ version: m.version, name: m.name, applied_at: Math.floor(Date.now() / 1000) }],
      format: 'JSONEachRow',
    });
    done.push(m.version);
  }
  return done;
}
