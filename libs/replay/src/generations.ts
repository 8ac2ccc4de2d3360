import {
  readMigrations,
  ROLLUPS,
  serverCapabilities,
  statementsFor,
  synchronousInsertSettings,
  type Capabilities,
  type ClickHouseClient,
  type Migration,
  type Resolution,
} from '@meridian/clickhouse';

/**
 * Generations of the points projection. The live one is always the table named `points` (what
 * downloads and the live projector use by name) with the metric catalog `metric_catalog`;
 * every other generation N is kept as `points_g<N>` with its catalog `metric_catalog_g<N>`.
 * The tables migrated at install are generation 1. A rebuild builds a new generation beside
 * the live one; a swap renames it in and the live one out (kept until dropped).
 *
 * A registry table (`replay_generations`, an append-only list of what happened to each
 * generation) keeps where each came from and how it was verified.
 */
export const LIVE_POINTS = 'points';
export const LIVE_CATALOG = 'metric_catalog';
/** The live catalog view's own table on an Ordinary database (ClickHouse 18.16): the view finds it by this name. */
export const LIVE_CATALOG_DATA = '.inner.metric_catalog';
/** Staged uploads' seals (migration 007): they count in the position, so they move with `points`. */
export const LIVE_SEALS = 'points_seals';
export const REGISTRY = 'replay_generations';

export const pointsTable = (g: number) => `points_g${checkGeneration(g)}`;
export const catalogTable = (g: number) => `metric_catalog_g${checkGeneration(g)}`;
/** A generation's staged seals (points_seals while it is live). */
export const sealsTable = (g: number) => `points_seals_g${checkGeneration(g)}`;
/** The read-only stand-in for `points_seals` while a swap holds live writes. */
export const frozenSealsStandIn = (g: number) => `points_seals_frozen_g${checkGeneration(g)}`;
/** Stage tables a rebuild of generation g left (stage.ts names them after their points table). */
export const stagesOf = (g: number) => new RegExp(`^${pointsTable(g)}_stage_[0-9a-f]{16}_[0-9a-f]{16}_p[0-9]+(_rest)?$`);
/** The view that feeds a generation's catalog from its points while it is built. */
export const catalogFeed = (g: number) => `metric_catalog_feed_g${checkGeneration(g)}`;
/**
 * The rollups (migration 010), views on `points` as the catalog is: a generation keeps each as
 * `<view>_g<N>`, fed by `<view>_feed_g<N>` while it is built, and they move with its catalog.
 */
export const ROLLUP_VIEWS: readonly string[] = Object.values(ROLLUPS).map((r) => r.table);
export const rollupTable = (view: string, g: number) => `${view}_g${checkGeneration(g)}`;
export const rollupFeed = (view: string, g: number) => `${view}_feed_g${checkGeneration(g)}`;
/** The live rollup view's own table on an Ordinary database (18.16), as LIVE_CATALOG_DATA. */
export const liveRollupData = (view: string) => `.inner.${view}`;
/** A generation's rollup tables by resolution, where a staged share's states go (stage.ts). */
export const rollupTablesOf = (g: number): Record<Resolution, string> => ({
  '1m': rollupTable(ROLLUPS['1m'].table, g),
  '1h': rollupTable(ROLLUPS['1h'].table, g),
});
/** The read-only stand-in for `points` while a swap holds live writes (a Merge table over the frozen generation). */
export const frozenStandIn = (g: number) => `points_frozen_g${checkGeneration(g)}`;

export function checkGeneration(g: number): number {
  if (!Number.isSafeInteger(g) || g < 1 || g > 0xffff_ffff) throw new Error(`not a generation number: ${g}`);
  return g;
}

export function parseGeneration(text: string): number {
  const m = /^(?:g)?(\d{1,9})$/.exec(text.trim());
  if (!m) throw new Error(`not a generation: ${text} (expected a number such as 2 or g2)`);
  return checkGeneration(Number(m[1]));
}

/** Back-quoted identifier (for `.inner.metric_catalog`, which has dots). */
export function q(name: string): string {
  if (!/^[.A-Za-z_][.A-Za-z0-9_]*$/.test(name)) throw new Error(`not a table name: ${name}`);
  return `\`${name}\``;
}

/** `CREATE TABLE <table> (...)` of the points schema, from migration 001 itself (one definition). */
export function pointsTableDdl(table: string, migrations: readonly Migration[] = readMigrations()): string {
  return tableDdl(LIVE_POINTS, table, migrations);
}

/** `CREATE TABLE <table> (...)` of a migrated table's schema (`points`, `points_seals`), from its migration. */
function tableDdl(migrated: string, table: string, migrations: readonly Migration[] = readMigrations()): string {
  const head = new RegExp(`^CREATE TABLE IF NOT EXISTS ${migrated}\\s*\\(`);
  const statement = migrations.flatMap((m) => m.statements).find((s) => head.test(s));
  if (!statement) throw new Error(`no CREATE TABLE ${migrated} in the migrations`);
  return statement.replace(head, `CREATE TABLE ${q(table)} (`);
}

/** The catalog view's engine clause and SELECT, from migration 002 itself. */
export function catalogDefinition(migrations: readonly Migration[] = readMigrations()): { engine: string; select: (source: string) => string } {
  return viewDefinition(LIVE_CATALOG, migrations);
}

/** A view on points' engine clause and SELECT (the catalog's, a rollup's), from its migration, for another source table. */
export function viewDefinition(view: string, migrations: readonly Migration[] = readMigrations()): { engine: string; select: (source: string) => string } {
  const head = new RegExp(`^CREATE MATERIALIZED VIEW IF NOT EXISTS ${view}\\s+(ENGINE[\\s\\S]*?)\\s+AS\\s+(SELECT[\\s\\S]*)$`);
  const m = migrations
    .flatMap((x) => x.statements)
    .map((s) => head.exec(s))
    .find((x) => x !== null);
  if (!m || !/\bFROM points\b/.test(m[2]!)) throw new Error(`no ${view} view reading FROM points in the migrations`);
  const select = m[2]!;
  return { engine: m[1]!, select: (source) => select.replace(/\bFROM points\b/, `FROM ${q(source)}`) };
}

/** What decides the form of a generation's statements. */
export type GenerationCapabilities = Pick<Capabilities, 'atomicDatabase' | 'deduplicatedInserts' | 'columnCodecs' | 'columnSettings'>;

/**
 * The table settings the migrations give `points`, `metric_catalog` and the rollups (004, 010: the
 * deduplication window), as statements for another points table and its derived tables, where
 * this server takes them. `rollups` maps each rollup view to the other table (none: left out).
 */
export function tableSettingsSql(
  points: string,
  catalog: string,
  caps: GenerationCapabilities,
  migrations: readonly Migration[] = readMigrations(),
  rollups: Readonly<Record<string, string>> = {},
): string[] {
  const target: Record<string, string> = { ...rollups, points, metric_catalog: catalog };
  return migrations
    .flatMap((m) => m.statements)
    .map((s) => /^ALTER TABLE (\w+) (MODIFY SETTING [\s\S]*)$/.exec(s))
    .filter((m) => m !== null && target[m[1]!] !== undefined)
    .flatMap((m) => statementsFor(`ALTER TABLE ${q(target[m![1]!]!)} ${m![2]!}`, caps));
}

/**
 * The migrations' statements that shape the columns of `points` (009's codecs, 014's blocks of
 * task ids), for another points table, where this server takes them: with migration 001's DDL
 * they make the table the migrations make `points` on this server.
 */
export function pointsColumnsSql(table: string, caps: GenerationCapabilities, migrations: readonly Migration[] = readMigrations()): string[] {
  return migrations
    .flatMap((m) => m.statements)
    .map((s) => /^ALTER TABLE points (MODIFY COLUMN [\s\S]*)$/.exec(s)?.[1])
    .filter((change) => change !== undefined)
    .flatMap((change) => statementsFor(`ALTER TABLE ${q(table)} ${change}`, caps));
}

/**
 * Statements that make a points table and its catalog forget the insert tokens they keep, for
 * when rows were deleted: the positions move back, and the blocks projected again from there
 * carry the tokens of blocks stored before, which the server would drop. A window of 0 empties
 * the kept tokens (measured on 26.9; ALTER DELETE and TRUNCATE leave them), then the
 * migration's window starts again empty. Nothing where the server keeps none.
 */
export function forgetInsertTokensSql(
  points: string,
  catalog: string,
  caps: GenerationCapabilities,
  migrations?: readonly Migration[],
  rollups: Readonly<Record<string, string>> = {},
): string[] {
  const restore = tableSettingsSql(points, catalog, caps, migrations, rollups);
  return [...restore.map((s) => s.replace(/=\s*\d+\s*$/, '= 0')), ...restore];
}

/**
 * Statements that create generation g: its points table, its seals table, its catalog and rollup
 * tables and the views feeding them, with the column codecs and settings and the table settings
 * the migrations give the live ones on this server. The points table is made `AS points` where
 * there is a live MergeTree one, else (none, or the read-only stand-in of a frozen swap) from
 * migration 001; either way the migrations' column statements follow, so its layout does not
 * depend on what the live table got (one migrated before the server had a capability gets it at
 * the next start of a process: completeMigrations in libs/clickhouse/src/migrate.ts).
 */
export function createGenerationSql(g: number, pointsExists: boolean, caps: GenerationCapabilities, migrations?: readonly Migration[]): string[] {
  const catalog = catalogDefinition(migrations);
  return [
    pointsExists ? `CREATE TABLE ${q(pointsTable(g))} AS ${q(LIVE_POINTS)}` : pointsTableDdl(pointsTable(g), migrations),
    ...pointsColumnsSql(pointsTable(g), caps, migrations),
    tableDdl(LIVE_SEALS, sealsTable(g), migrations),
    derivedTableSql(catalog, catalogTable(g), pointsTable(g)),
    ...ROLLUP_VIEWS.map((view) => derivedTableSql(viewDefinition(view, migrations), rollupTable(view, g), pointsTable(g))),
    ...tableSettingsSql(pointsTable(g), catalogTable(g), caps, migrations, generationRollups(g)),
    `CREATE MATERIALIZED VIEW ${q(catalogFeed(g))} TO ${q(catalogTable(g))} AS ${catalog.select(pointsTable(g))}`,
    ...rollupFeedsSql(g, migrations),
  ];
}

/** An empty table for a view's rows (the catalog's, a rollup's) from `source`: the SELECT gives the columns and their state types. */
export function derivedTableSql(definition: { engine: string; select: (source: string) => string }, table: string, source: string): string {
  return `CREATE TABLE ${q(table)} ${definition.engine} AS ${definition.select(source).replace(/\bGROUP BY\b/, 'WHERE 0 GROUP BY')}`;
}

/** Each rollup view → generation g's table of it. */
export const generationRollups = (g: number): Record<string, string> => Object.fromEntries(ROLLUP_VIEWS.map((view) => [view, rollupTable(view, g)]));

/** The views feeding generation g's rollup tables from its points table. */
export function rollupFeedsSql(g: number, migrations?: readonly Migration[]): string[] {
  return ROLLUP_VIEWS.map(
    (view) => `CREATE MATERIALIZED VIEW ${q(rollupFeed(view, g))} TO ${q(rollupTable(view, g))} AS ${viewDefinition(view, migrations).select(pointsTable(g))}`,
  );
}

export type RegistryEvent = 'created' | 'built' | 'verified' | 'live' | 'retired' | 'dropped';
export type RegistryRow = { readonly generation: number; readonly event: RegistryEvent; readonly at: number; readonly detail: Record<string, unknown> };

export type GenerationState = 'building' | 'built' | 'live' | 'retired' | 'dropped';
export type Generation = {
  readonly generation: number;
  state: GenerationState;
  created_at: number | null;
  /** How it was made: its range, when built, its counts, its verification. */
  detail: Record<string, unknown>;
  verified: boolean | null;
};

/** The registry folded per generation (pure). Generation 1, the migrated tables, exists without an entry. */
export function foldRegistry(rows: readonly RegistryRow[]): Map<number, Generation> {
  const out = new Map<number, Generation>();
  const get = (g: number) => {
    let gen = out.get(g);
    if (!gen) out.set(g, (gen = { generation: g, state: 'building', created_at: null, detail: {}, verified: null }));
    return gen;
  };
  const sorted = [...rows].sort((a, b) => a.at - b.at || order(a.event) - order(b.event));
  for (const row of sorted) {
    const gen = get(row.generation);
    switch (row.event) {
      case 'created':
        gen.created_at = row.at;
        gen.detail = { ...gen.detail, ...row.detail };
        break;
      case 'built':
        if (gen.state === 'building') gen.state = 'built';
        gen.detail = { ...gen.detail, built: row.detail };
        break;
      case 'verified':
        gen.verified = row.detail.ok === true;
        gen.detail = { ...gen.detail, verification: row.detail };
        break;
      case 'live':
        for (const other of out.values()) if (other !== gen && other.state === 'live') other.state = 'retired';
        gen.state = 'live';
        break;
      case 'retired':
        gen.state = 'retired';
        break;
      case 'dropped':
        gen.state = 'dropped';
        break;
    }
  }
  if (![...out.values()].some((g) => g.state === 'live')) {
    const first = out.get(1);
    if (!first) out.set(1, { generation: 1, state: 'live', created_at: null, detail: { source: 'migrations' }, verified: null });
    else if (first.state !== 'dropped') first.state = 'live';
  }
  return out;
}

function order(e: RegistryEvent): number {
  return ['created', 'built', 'verified', 'retired', 'live', 'dropped'].indexOf(e);
}

export function liveGeneration(generations: ReadonlyMap<number, Generation>): number {
  return [...generations.values()].find((g) => g.state === 'live')?.generation ?? 1;
}

// ---- I/O on the registry and the tables ----

async function rows<T>(client: ClickHouseClient, query: string): Promise<T[]> {
  return (await client.query({ query, format: 'JSONEachRow' })).json<T>();
}

export async function ensureRegistry(client: ClickHouseClient): Promise<void> {
  await client.command({
    query: `CREATE TABLE IF NOT EXISTS ${REGISTRY} (generation UInt32, event String, at UInt64, detail String) ENGINE = MergeTree() ORDER BY (generation, at)`,
  });
}

export async function record(client: ClickHouseClient, generation: number, event: RegistryEvent, detail: Record<string, unknown> = {}): Promise<void> {
  // Read back at once by the next step: never left in the server's async insert buffer.
  const settings = synchronousInsertSettings(await serverCapabilities(client));
  await client.insert({
    table: REGISTRY,
    values: [{ generation: checkGeneration(generation), event, at: Date.now(), detail: JSON.stringify(detail) }],
    format: 'JSONEachRow',
    clickhouse_settings: settings,
  });
}

export async function readRegistry(client: ClickHouseClient): Promise<Map<number, Generation>> {
  await ensureRegistry(client);
  const raw = await rows<{ generation: number; event: RegistryEvent; at: string; detail: string }>(
    client,
    `SELECT generation, event, toString(at) AS at, detail FROM ${REGISTRY}`,
  );
  return foldRegistry(
    raw.map((r) => ({ generation: Number(r.generation), event: r.event, at: Number(r.at), detail: JSON.parse(r.detail) as Record<string, unknown> })),
  );
}

/** Engine of each table of the database (MergeTree, Merge, MaterializedView, ...). */
export async function tableEngines(client: ClickHouseClient): Promise<Map<string, string>> {
  const found = await rows<{ name: string; engine: string }>(client, 'SELECT name, engine FROM system.tables WHERE database = currentDatabase()');
  return new Map(found.map((t) => [t.name, t.engine]));
}

/**
 * The table holding the live catalog's data: `.inner.metric_catalog` under the view of
 * migration 002 on an Ordinary database (18.16), or `metric_catalog` itself where it is an
 * explicit table fed by a view writing TO it.
 */
export async function liveCatalogData(client: ClickHouseClient): Promise<string> {
  const tables = await tableEngines(client);
  const engine = tables.get(LIVE_CATALOG);
  if (engine === 'AggregatingMergeTree') return LIVE_CATALOG;
  if (engine === 'MaterializedView' && tables.has(LIVE_CATALOG_DATA)) return LIVE_CATALOG_DATA;
  throw new Error(`cannot find the table holding ${LIVE_CATALOG}'s data (${LIVE_CATALOG} is ${engine ?? 'missing'})`);
}

/** The tables holding the live rollups' data, by resolution: `.inner.<view>` under a view (18.16), or the view's name where it is an explicit table. */
export async function liveRollupsData(client: ClickHouseClient): Promise<Record<Resolution, string>> {
  const tables = await tableEngines(client);
  const dataOf = (view: string) => {
    const engine = tables.get(view);
    if (engine === 'AggregatingMergeTree') return view;
    if (engine === 'MaterializedView' && tables.has(liveRollupData(view))) return liveRollupData(view);
    throw new Error(`cannot find the table holding ${view}'s data (${view} is ${engine ?? 'missing'}): run the migrations first`);
  };
  return { '1m': dataOf(ROLLUPS['1m'].table), '1h': dataOf(ROLLUPS['1h'].table) };
}

export async function countRows(client: ClickHouseClient, table: string): Promise<number> {
  const found = await rows<{ n: string }>(client, `SELECT count() AS n FROM ${q(table)}`);
  return Number(found[0]?.n ?? 0);
}

/** The number a new generation gets: above every one registered and every points_g<N> table. */
export async function nextGeneration(client: ClickHouseClient): Promise<number> {
  const registered = await readRegistry(client);
  const tables = await tableEngines(client);
  let max = 1;
  for (const g of registered.keys()) max = Math.max(max, g);
  for (const name of tables.keys()) {
    const m =
      /^(?:points|metric_catalog|metric_catalog_feed|points_frozen|points_seals|points_seals_frozen|points_1m|points_1h|points_1m_feed|points_1h_feed)_g(\d+)(?:_stage_.*)?$/.exec(
        name,
      );
    if (m) max = Math.max(max, Number(m[1]));
  }
  return max + 1;
}

/** Creates generation g's tables (empty) and registers it. */
export async function createGeneration(client: ClickHouseClient, g: number, detail: Record<string, unknown>): Promise<void> {
  const tables = await tableEngines(client);
  for (const name of [pointsTable(g), sealsTable(g), catalogTable(g), catalogFeed(g), ...ROLLUP_VIEWS.flatMap((v) => [rollupTable(v, g), rollupFeed(v, g)])]) {
    if (tables.has(name)) throw new Error(`table ${name} exists already`);
  }
  const caps = await serverCapabilities(client);
  for (const statement of createGenerationSql(g, tables.get(LIVE_POINTS) === 'MergeTree', caps)) await client.command({ query: statement });
  await record(client, g, 'created', { table: pointsTable(g), ...detail });
}

export type GenerationListing = Generation & { readonly table: string | null; readonly rows: number | null };

/** Every generation with where its table is now and how many rows it has. */
export async function listGenerations(client: ClickHouseClient): Promise<GenerationListing[]> {
  const generations = await readRegistry(client);
  const tables = await tableEngines(client);
  const out: GenerationListing[] = [];
  for (const gen of [...generations.values()].sort((a, b) => a.generation - b.generation)) {
    const table =
      gen.state === 'live' ? (tables.has(LIVE_POINTS) ? LIVE_POINTS : null) : tables.has(pointsTable(gen.generation)) ? pointsTable(gen.generation) : null;
    const count = table && tables.get(table) !== 'Merge' ? await countRows(client, table) : null;
    out.push({ ...gen, table, rows: count });
  }
  return out;
}

/** Drops a kept generation's tables; the live one cannot be dropped. */
export async function dropGeneration(client: ClickHouseClient, g: number): Promise<string[]> {
  const generations = await readRegistry(client);
  const gen = generations.get(g);
  if (gen?.state === 'live') throw new Error(`generation ${g} is live: swap another one in first`);
  const tables = await tableEngines(client);
  const dropped: string[] = [];
  // The feeding views first, so nothing writes into the catalog or rollups being dropped; then the stages a
  // rebuild of it left (a crash between a staged share's refill and its seal).
  const stages = [...tables.keys()].filter((name) => stagesOf(g).test(name)).sort();
  const feeds = [catalogFeed(g), ...ROLLUP_VIEWS.map((v) => rollupFeed(v, g))];
  for (const name of [...feeds, pointsTable(g), sealsTable(g), catalogTable(g), ...ROLLUP_VIEWS.map((v) => rollupTable(v, g)), ...stages]) {
    if (!tables.has(name)) continue;
    await client.command({ query: `DROP TABLE ${q(name)}` });
    dropped.push(name);
  }
  if (dropped.length === 0 && !gen) throw new Error(`no generation ${g}`);
  await record(client, g, 'dropped', { tables: dropped });
  return dropped;
}
