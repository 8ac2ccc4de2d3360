import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { serverCapabilities, type Capabilities } from './capabilities.ts';
import { settingNames, tableDefinition } from './table-definition.ts';

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
 * Table settings only some servers know, and the capability that says this one does: a
 * migration setting one (`ALTER TABLE t MODIFY SETTING name = ...`) runs only there, as an
 * older server would refuse the name.
 */
const TABLE_SETTINGS_NEEDING: Readonly<Record<string, (caps: MigrationCapabilities, replication: Replication | null) => boolean>> = {
  // Replicated tables keep insert tokens of their own (replicated_deduplication_window).
  non_replicated_deduplication_window: (caps, replication) => caps.deduplicatedInserts && replication === null,
};

/**
 * Where a cluster's replicated tables keep their state: ZooKeeper path `<path>/<table>` (path
 * already holds the database; `{shard}` and `{replica}` are each server's macros).
 */
export type Replication = { readonly path: string };

/** The replication of a database's tables: CLICKHOUSE_REPLICA_PATH/<database>. */
export function replicationOf(replicaPath: string, database: string): Replication {
  if (!/^\/[A-Za-z0-9_{}./-]*$/.test(replicaPath) || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(database)) {
    throw new Error(`not a replica path and database: ${replicaPath} ${database}`);
  }
  return { path: `${replicaPath}/${database}` };
}

/**
 * A CREATE statement's MergeTree-family engine made replicated: `ENGINE = XMergeTree(args)`
 * becomes `ENGINE = ReplicatedXMergeTree('<path>/<table>', '{replica}', args)`, for every
 * member of the family (MergeTree, AggregatingMergeTree, ReplacingMergeTree(version), ...), so
 * a migration is written once, for one server. Other statements are kept as they are.
 */
export function replicated(statement: string, replication: Replication): string {
  const table = /^CREATE (?:TABLE|MATERIALIZED VIEW) IF NOT EXISTS (\w+)/.exec(statement)?.[1];
  if (table === undefined) return statement;
  return statement.replace(
    /\bENGINE\s*=\s*(?!Replicated)(\w*MergeTree)\(([^)]*)\)/,
    (_, engine: string, args: string) =>
      `ENGINE = Replicated${engine}('${replication.path}/${table}', '{replica}'${args.trim() === '' ? '' : `, ${args.trim()}`})`,
  );
}

/**
 * `ALTER TABLE t ADD COLUMN IF NOT EXISTS c ...`: 18.16 does not know the IF NOT EXISTS of a
 * column, so the statement is run without it on every server, and migrate() takes the server's
 * refusal of a column that exists (another process migrating at once, or a replica of a
 * replicated table) as done: the same statement either way, whatever the version.
 */
const ADD_COLUMN_IF_NOT_EXISTS = /^(ALTER TABLE \S+ ADD COLUMN) IF NOT EXISTS\b/;
const COLUMN_EXISTS = /column with this name already exists/i;

type MigrationCapabilities = Pick<Capabilities, 'atomicDatabase' | 'deduplicatedInserts' | 'columnCodecs' | 'columnSettings'>;

type Gate = (caps: MigrationCapabilities, replication: Replication | null) => boolean;

/**
 * The capability a statement needs, for a statement only some servers can run: a table setting
 * the server may not know (TABLE_SETTINGS_NEEDING), a column's own settings (before 24.1 none),
 * a column's codec (18.16 has none: it compresses as its server config says). Elsewhere the
 * statement is left out, and a later start on a server that has the capability runs it
 * (completeMigrations). Undefined for a statement every server runs.
 */
function gateOf(statement: string): Gate | undefined {
  const setting = /^ALTER TABLE \S+ MODIFY SETTING (\w+)\s*=/.exec(statement)?.[1];
  if (setting !== undefined) return TABLE_SETTINGS_NEEDING[setting];
  if (/^ALTER TABLE \S+ MODIFY COLUMN \w+ MODIFY SETTING /.test(statement)) return (caps) => caps.columnSettings;
  if (/^ALTER TABLE \S+ MODIFY COLUMN [\s\S]*\bCODEC\(/.test(statement)) return (caps) => caps.columnCodecs;
  return undefined;
}

/**
 * A statement in the form this server and database need; the one place where migrations
 * differ by capability.
 *
 * A materialized view with an engine of its own (an inner table, migration 002's catalog) is
 * written for Ordinary databases (18.16), where the replay swap moves its inner table by name.
 * On an Atomic database the inner table has a UUID-derived name no RENAME or EXCHANGE can
 * address, so the same view becomes an explicit table of that name plus a view `<name>_feed`
 * writing TO it: readers keep reading `<name>`, and the swap exchanges it like any table.
 *
 * A statement whose capability the server lacks (gateOf) is left out: no statement.
 *
 * On a cluster (`replication`), every table's engine becomes its replicated form (replicated()).
 */
export function statementsFor(statement: string, caps: MigrationCapabilities, replication: Replication | null = null): string[] {
  return forServer(statement, caps, replication).map((s) => (replication === null ? s : replicated(s, replication)));
}

function forServer(statement: string, caps: MigrationCapabilities, replication: Replication | null): string[] {
  if (ADD_COLUMN_IF_NOT_EXISTS.test(statement)) return [statement.replace(ADD_COLUMN_IF_NOT_EXISTS, '$1')];
  const gate = gateOf(statement);
  if (gate && !gate(caps, replication)) return [];
  const view = /^CREATE MATERIALIZED VIEW IF NOT EXISTS (\w+)\s+(ENGINE[\s\S]*?)\s+AS\s+(SELECT[\s\S]*\bGROUP BY\b[\s\S]*)$/.exec(statement);
  if (!caps.atomicDatabase || !view) return [statement];
  const [, name, engine, select] = view as unknown as [string, string, string, string];
  return [
    // The SELECT gives the columns and their aggregate-state types; WHERE 0 keeps the table empty.
    `CREATE TABLE IF NOT EXISTS ${name} ${engine} AS ${select.replace(/\bGROUP BY\b/, 'WHERE 0 GROUP BY')}`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS ${name}_feed TO ${name} AS ${select}`,
  ];
}

/**
 * The statements of recorded migrations that a server without their capability left out and
 * this one can run (gateOf), with the table each alters: the candidates for completeMigrations.
 */
export function deferredStatements(
  migrations: readonly Migration[],
  caps: MigrationCapabilities,
  replication: Replication | null = null,
): { migration: Migration; statement: string; table: string }[] {
  return migrations.flatMap((migration) =>
    migration.statements
      .filter((s) => gateOf(s) !== undefined && statementsFor(s, caps, replication).length > 0)
      .map((statement) => ({ migration, statement, table: /^ALTER TABLE (\w+) /.exec(statement)![1]! })),
  );
}

/**
 * Whether a table still lacks what a capability-gated statement (gateOf) gives it, read from the
 * table's definition (`create_table_query` of system.tables): the setting among the table's
 * SETTINGS, a CODEC on the column, each named setting among the column's own SETTINGS. Anything
 * there counts as done, whatever its value: a later migration or an operator may have chosen
 * another, and completing only fills in what a server without the capability left out. A column
 * no longer there lacks nothing.
 */
export function lacks(statement: string, createTableQuery: string): boolean {
  const { columns, settings } = tableDefinition(createTableQuery);
  const tableSetting = /^ALTER TABLE \S+ MODIFY SETTING (\w+)\s*=/.exec(statement)?.[1];
  if (tableSetting !== undefined) return !settings.has(tableSetting);
  const modified = /^ALTER TABLE \S+ MODIFY COLUMN (\w+) ([\s\S]*)$/.exec(statement);
  if (!modified) throw new Error(`not a statement of a capability: ${statement}`);
  const column = columns.get(modified[1]!);
  if (column === undefined) return false;
  const wanted = /^MODIFY SETTING ([\s\S]*)$/.exec(modified[2]!)?.[1];
  if (wanted === undefined) return !column.codec;
  return [...settingNames(wanted)].some((name) => !column.settings.has(name));
}

/**
 * What decides a server's migration statements: its own capabilities, but on a cluster those that
 * gate a statement (gateOf) only where every server of `cluster` has them, as an ALTER of a
 * replicated table reaches every replica, and one without the capability could not apply it.
 */
export function migrationCapabilities(
  own: MigrationCapabilities,
  cluster: readonly MigrationCapabilities[],
  replication: Replication | null,
): MigrationCapabilities {
  const everywhere = (name: 'deduplicatedInserts' | 'columnCodecs' | 'columnSettings') =>
    replication === null ? own[name] : own[name] && cluster.every((caps) => caps[name]);
  return {
    atomicDatabase: own.atomicDatabase,
    deduplicatedInserts: everywhere('deduplicatedInserts'),
    columnCodecs: everywhere('columnCodecs'),
    columnSettings: everywhere('columnSettings'),
  };
}

/**
 * Applies every migration not yet recorded, in order, and records it, then completes the
 * recorded ones (completeMigrations). Statements are idempotent (IF NOT EXISTS), so two processes
 * migrating one server at once are harmless (on a cluster, see migrateServers).
 */
export async function migrate(
  client: ClickHouseClient,
  migrations: readonly Migration[] = readMigrations(),
  replication: Replication | null = null,
): Promise<number[]> {
  return (await migrateServers([client], migrations, replication))[0]!;
}

/**
 * migrate() on every server of a cluster, migration by migration: each migration on every server
 * before the next on any. A replicated table is created per server, and its ALTERs reach the
 * replicas that have it: a server that created it only after another had altered it would create
 * it with the columns before the ALTER, which ZooKeeper refuses ("table structure ... too
 * different"). Each server keeps its own record: schema_migrations stays an unreplicated table.
 * Processes migrating at once are harmless too: each has created a table on every server before
 * it alters it on any, so no CREATE can come after an ALTER of its table. A server added to a
 * cluster later would still create old columns: it needs the tables' present structure instead.
 * On a cluster a statement that needs a capability runs only once every server has it
 * (migrationCapabilities). Returns the versions applied on each server, in the order of `clients`: recorded now, or
 * completed now.
 */
export async function migrateServers(
  clients: readonly ClickHouseClient[],
  migrations: readonly Migration[] = readMigrations(),
  replication: Replication | null = null,
): Promise<number[][]> {
  const servers = await Promise.all(
    clients.map(async (client) => ({ client, applied: await appliedVersions(client), caps: await serverCapabilities(client), done: new Set<number>() })),
  );
  const capsOf = (server: (typeof servers)[number]) =>
    migrationCapabilities(
      server.caps,
      servers.map((s) => s.caps),
      replication,
    );
  for (const m of migrations) {
    for (const server of servers) {
      if (server.applied.has(m.version)) continue;
      await apply(server.client, m, capsOf(server), replication);
      server.done.add(m.version);
    }
  }
  for (const server of servers) {
    const recorded = migrations.filter((m) => server.applied.has(m.version));
    for (const version of await completeMigrations(server.client, recorded, capsOf(server), replication)) server.done.add(version);
  }
  return servers.map((s) => [...s.done].sort((a, b) => a - b));
}

/**
 * Runs the statements of recorded migrations that a server without their capability left out
 * (deferredStatements), where this server has the capability now and the table still lacks what
 * the statement gives it (lacks): a database migrated on 18.16 gets migration 009's codecs on its
 * first start on 20.1+, and 014's blocks on 24.1+. Read from the tables themselves, so it is the
 * same whether the record is old or new, a second process at once runs the same idempotent ALTER,
 * and a points table swapped in by a rebuild is checked as the migrated one. The read-only
 * stand-in of a replay swap's freeze (a Merge table under the live name) is left alone: the swap
 * puts a generation made with the migrations' layout in its place. So is a catalog or rollup still
 * a view with an inner table (an Ordinary database converted to Atomic): a view takes no table
 * setting, and refusing the start over a window it never had would stop a database that ran
 * before; it gets the window once converted (docs/operating/clickhouse-versions.md). Returns the
 * versions it completed.
 */
async function completeMigrations(
  client: ClickHouseClient,
  recorded: readonly Migration[],
  caps: MigrationCapabilities,
  replication: Replication | null = null,
): Promise<number[]> {
  const deferred = deferredStatements(recorded, caps, replication);
  if (deferred.length === 0) return [];
  // Table names as the migrations write them (\w+): safe to quote.
  const names = [...new Set(deferred.map((d) => `'${d.table}'`))].join(', ');
  const found = await (
    await client.query({
      query: `SELECT name, create_table_query FROM system.tables WHERE database = currentDatabase() AND engine NOT IN ('Merge', 'MaterializedView') AND name IN (${names})`,
      format: 'JSONEachRow',
    })
  ).json<{ name: string; create_table_query: string }>();
  const definitions = new Map(found.map((t) => [t.name, t.create_table_query]));
  const completed = new Set<number>();
  for (const { migration, statement, table } of deferred) {
    const definition = definitions.get(table);
    if (definition === undefined || !lacks(statement, definition)) continue;
    for (const s of statementsFor(statement, caps, replication)) await run(client, migration, s, false);
    completed.add(migration.version);
  }
  return [...completed];
}

async function appliedVersions(client: ClickHouseClient): Promise<Set<number>> {
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, applied_at DateTime)
            ENGINE = MergeTree() ORDER BY version`,
  });
  const rows = await (await client.query({ query: 'SELECT DISTINCT version FROM schema_migrations', format: 'JSONEachRow' })).json<{ version: number }>();
  return new Set(rows.map((r) => Number(r.version)));
}

/** One migration's statements in this server's form, then its record. */
async function apply(client: ClickHouseClient, m: Migration, caps: MigrationCapabilities, replication: Replication | null): Promise<void> {
  for (const source of m.statements) {
    // Only a column the migration adds IF NOT EXISTS may be there already; any other refusal stops the start.
    const mayExist = ADD_COLUMN_IF_NOT_EXISTS.test(source);
    for (const statement of statementsFor(source, caps, replication)) await run(client, m, statement, mayExist);
  }
  await client.insert({
    table: 'schema_migrations',
    values: [{ version: m.version, name: m.name, applied_at: Math.floor(Date.now() / 1000) }],
    format: 'JSONEachRow',
  });
}

async function run(client: ClickHouseClient, m: Migration, statement: string, mayExist: boolean): Promise<void> {
  // Said with the migration's name: the server's message alone does not say which one stopped the start.
  await client.command({ query: statement }).catch((error: unknown) => {
    if (mayExist && error instanceof Error && COLUMN_EXISTS.test(error.message)) return;
    throw new Error(`migration ${String(m.version).padStart(3, '0')}_${m.name} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  });
}
