import { describe, expect, it } from 'vitest';
import { capabilities } from './capabilities.ts';
import { deferredStatements, lacks, migrationCapabilities, readMigrations, replicated, replicationOf, statementsFor } from './migrate.ts';

const all = () => readMigrations().flatMap((m) => m.statements);
const catalogView = () => all().find((s) => s.startsWith('CREATE MATERIALIZED VIEW IF NOT EXISTS metric_catalog'))!;
const windowSettings = () => readMigrations().find((m) => m.name === 'deduplication_window')!.statements;
const pointsCodecs = () => readMigrations().find((m) => m.name === 'points_codecs')!.statements;
const taskIdBlocks = () => readMigrations().find((m) => m.name === 'points_task_id_blocks')!.statements;
const ch18 = capabilities('18.16.1', 'Ordinary');
const ch26 = capabilities('26.9.2.1', 'Atomic');

describe('migration statements per server and kind of database', () => {
  it('18.16 (Ordinary) gets every statement as written, the catalog view with its inner table, and no deduplication window, column codecs nor column settings', () => {
    const isWindow = (s: string) => /MODIFY SETTING non_replicated_deduplication_window/.test(s);
    const addsColumn = (s: string) => s.includes('ADD COLUMN IF NOT EXISTS');
    const none = (s: string) => isWindow(s) || pointsCodecs().includes(s) || taskIdBlocks().includes(s);
    for (const s of all().filter((x) => !addsColumn(x))) expect(statementsFor(s, ch18)).toEqual(none(s) ? [] : [s]);
  });

  it('a column added IF NOT EXISTS (migration 012) is added without it on every server (18.16 does not know it for a column)', () => {
    const added = all().filter((s) => s.includes('ADD COLUMN IF NOT EXISTS'));
    expect(added).toEqual([
      'ALTER TABLE points_1m_sealed ADD COLUMN IF NOT EXISTS marks UInt64 DEFAULT 0',
      'ALTER TABLE points_1h_sealed ADD COLUMN IF NOT EXISTS marks UInt64 DEFAULT 0',
    ]);
    for (const s of added) for (const caps of [ch18, ch26]) expect(statementsFor(s, caps)).toEqual([s.replace(' IF NOT EXISTS', '')]);
  });

  it('migration 009 gives every column of points a codec, where the server has codecs (20.1+)', () => {
    expect(pointsCodecs().map((s) => /^ALTER TABLE points MODIFY COLUMN (\w+) /.exec(s)?.[1])).toEqual([
      'metric_name',
      'ts',
      'value',
      'updated_at',
      'task_id',
      'kafka_partition',
      'kafka_offset',
      'row_in_batch',
    ]);
    for (const s of pointsCodecs()) {
      expect(s).toMatch(/ CODEC\([\w(), ]+\)$/);
      expect(statementsFor(s, ch26)).toEqual([s]);
      expect(statementsFor(s, capabilities('20.1.2.4', 'Ordinary'))).toEqual([s]);
      expect(statementsFor(s, capabilities('19.17.1.1', 'Ordinary'))).toEqual([]);
    }
  });

  it("migration 014 gives points' task_id 4 MiB compressed blocks, where the server takes a column's own settings (24.1+)", () => {
    const [blocks, ...rest] = taskIdBlocks();
    expect(rest).toEqual([]);
    expect(blocks).toBe('ALTER TABLE points MODIFY COLUMN task_id MODIFY SETTING min_compress_block_size = 4194304, max_compress_block_size = 4194304');
    // 20.1 to 23.12 have codecs but not a column's own settings: they keep 009's codecs and the server's blocks.
    const versions = ['26.9.2.1', '24.1.1.1', '23.12.1.1', '20.1.2.4'];
    expect(versions.map((v) => statementsFor(blocks!, capabilities(v, 'Atomic')))).toEqual([[blocks], [blocks], [], []]);
  });

  it('the rollups (010) become explicit tables and feeding views on an Atomic database, and keep insert tokens there', () => {
    for (const name of ['points_1m', 'points_1h']) {
      const view = all().find((s) => s.startsWith(`CREATE MATERIALIZED VIEW IF NOT EXISTS ${name}\n`))!;
      const [table, feed, ...rest] = statementsFor(view, ch26);
      expect(rest).toEqual([]);
      expect(table).toMatch(
        new RegExp(
          `^CREATE TABLE IF NOT EXISTS ${name} ENGINE = AggregatingMergeTree\\(\\)\\s+ORDER BY \\(metric_name, bucket\\) AS SELECT[\\s\\S]*FROM points\\s+WHERE 0 GROUP BY metric_name, bucket$`,
        ),
      );
      expect(feed).toMatch(
        new RegExp(`^CREATE MATERIALIZED VIEW IF NOT EXISTS ${name}_feed TO ${name} AS SELECT[\\s\\S]*uniqExactState\\(ts\\) AS timestamps`),
      );
      const window = `ALTER TABLE ${name} MODIFY SETTING non_replicated_deduplication_window = 1000`;
      expect(all()).toContain(window);
      expect(statementsFor(window, ch26)).toEqual([window]);
    }
  });

  it('migration 004 gives points and its catalog a deduplication window of 1000 blocks, where the server takes it', () => {
    expect(windowSettings()).toEqual([
      'ALTER TABLE points MODIFY SETTING non_replicated_deduplication_window = 1000',
      'ALTER TABLE metric_catalog MODIFY SETTING non_replicated_deduplication_window = 1000',
    ]);
    for (const s of windowSettings()) {
      expect(statementsFor(s, ch26)).toEqual([s]);
      expect(statementsFor(s, capabilities('25.8.3.1', 'Atomic'))).toEqual([s]);
      // Before insert_deduplication_token (22.2), and on Ordinary databases (the catalog's inner table refuses MODIFY SETTING): none.
      expect(statementsFor(s, capabilities('22.1.1.1', 'Atomic'))).toEqual([]);
      expect(statementsFor(s, capabilities('26.9.2.1', 'Ordinary'))).toEqual([]);
    }
  });

  it('an Atomic database gets the catalog as an explicit table of the same name and a view writing TO it', () => {
    const [table, view, ...rest] = statementsFor(catalogView(), ch26);
    expect(rest).toEqual([]);
    expect(table).toMatch(
      /^CREATE TABLE IF NOT EXISTS metric_catalog ENGINE = AggregatingMergeTree\(\)\s+ORDER BY metric_name AS SELECT[\s\S]*FROM points\s+WHERE 0 GROUP BY metric_name$/,
    );
    expect(view).toMatch(
      /^CREATE MATERIALIZED VIEW IF NOT EXISTS metric_catalog_feed TO metric_catalog AS SELECT[\s\S]*countState\(\) AS points[\s\S]*FROM points\s+GROUP BY metric_name$/,
    );
  });

  it('other statements are the same on an Atomic database', () => {
    const points = readMigrations()[0]!.statements[0]!;
    expect(statementsFor(points, ch26)).toEqual([points]);
  });
});

describe('statements a server without their capability left out, completed later', () => {
  const cluster = replicationOf('/clickhouse/tables/{shard}', 'meridian');
  const deferred = (caps: Parameters<typeof deferredStatements>[1], replication: Parameters<typeof deferredStatements>[2] = null) =>
    deferredStatements(readMigrations(), caps, replication).map((d) => `${d.migration.version} ${d.table} ${d.statement.replace(/^ALTER TABLE \w+ /, '')}`);
  const windows = (version: number, tables: string[]) => tables.map((t) => `${version} ${t} MODIFY SETTING non_replicated_deduplication_window = 1000`);
  const codecs = () => pointsCodecs().map((s) => `9 points ${s.replace(/^ALTER TABLE points /, '')}`);
  const blocks = () => taskIdBlocks().map((s) => `14 points ${s.replace(/^ALTER TABLE points /, '')}`);

  it('are the capability-gated statements this server can run: the windows of 004 and 010, the codecs of 009, the blocks of 014', () => {
    expect(deferred(ch26)).toEqual([...windows(4, ['points', 'metric_catalog']), ...codecs(), ...windows(10, ['points_1m', 'points_1h']), ...blocks()]);
    expect(deferred(capabilities('23.12.1.1', 'Ordinary'))).toEqual(codecs());
    expect(deferred(ch18)).toEqual([]);
  });

  it('on a cluster, leave out the non-replicated window, which replicated tables never take', () => {
    expect(deferred(ch26, cluster)).toEqual([...codecs(), ...blocks()]);
  });

  it('on a cluster, wait for every server to have the capability: an ALTER of a replicated table reaches them all', () => {
    const ch23 = capabilities('23.12.1.1', 'Atomic');
    const upgrading = [ch26, ch23, ch18];
    expect(migrationCapabilities(ch26, upgrading, cluster)).toEqual({
      atomicDatabase: true,
      deduplicatedInserts: false,
      columnCodecs: false,
      columnSettings: false,
    });
    expect(migrationCapabilities(ch26, [ch26, ch23], cluster)).toEqual({
      atomicDatabase: true,
      deduplicatedInserts: true,
      columnCodecs: true,
      columnSettings: false,
    });
    expect(deferred(migrationCapabilities(ch26, [ch26, ch23], cluster), cluster)).toEqual(codecs());
    // Each server's own database engine decides its catalog's form; alone, a server's own capabilities decide.
    expect(migrationCapabilities(ch18, [ch26, ch18], cluster).atomicDatabase).toBe(false);
    expect(migrationCapabilities(ch26, upgrading, null)).toEqual({ atomicDatabase: true, deduplicatedInserts: true, columnCodecs: true, columnSettings: true });
  });

  // As ClickHouse 26.9 writes system.tables' create_table_query.
  const table = (columns: string, settings = 'index_granularity = 8192') =>
    `CREATE TABLE d.points (${columns}) ENGINE = MergeTree PARTITION BY tuple() ORDER BY (metric_name, ts, updated_at) SETTINGS ${settings}`;
  const bare = table('`metric_name` String, `ts` Int64, `task_id` String');

  it('are due where the table lacks the codec, the setting of the column or the setting of the table', () => {
    const [, ts, , , taskId] = pointsCodecs();
    const [blocks14] = taskIdBlocks();
    const [window] = windowSettings();
    for (const s of [ts!, taskId!, blocks14!, window!]) expect(lacks(s, bare), s).toBe(true);
    const done = table(
      '`metric_name` String, `ts` Int64 CODEC(Delta(8), ZSTD(3)), `task_id` String CODEC(ZSTD(3)) SETTINGS (min_compress_block_size = 4194304, max_compress_block_size = 4194304)',
      'index_granularity = 8192, non_replicated_deduplication_window = 1000',
    );
    for (const s of [ts!, taskId!, blocks14!, window!]) expect(lacks(s, done), s).toBe(false);
  });

  it('are done where the table has any codec or value of that name (chosen since by another migration or by hand), or no such column', () => {
    const [, ts, , , taskId] = pointsCodecs();
    const [blocks14] = taskIdBlocks();
    const [window] = windowSettings();
    const other = table(
      '`metric_name` String, `ts` Int64 CODEC(DoubleDelta, LZ4), `task_id` String CODEC(LZ4HC(9))',
      'non_replicated_deduplication_window = 0',
    );
    for (const s of [ts!, taskId!, window!]) expect(lacks(s, other), s).toBe(false);
    // Both of 014's settings must be there: one of them alone is completed.
    expect(lacks(blocks14!, table('`task_id` String SETTINGS (min_compress_block_size = 4194304)'))).toBe(true);
    expect(lacks(ts!, table('`metric_name` String'))).toBe(false);
  });
});

describe('migration statements on a cluster (replicated tables)', () => {
  const cluster = replicationOf('/clickhouse/tables/{shard}', 'meridian');
  const points = () => readMigrations()[0]!.statements[0]!;

  it('points becomes a ReplicatedMergeTree on a path of its own database and table, its columns and keys kept', () => {
    const [s, ...rest] = statementsFor(points(), ch18, cluster);
    expect(rest).toEqual([]);
    expect(s).toBe(points().replace('ENGINE = MergeTree()', "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/meridian/points', '{replica}')"));
  });

  it('the catalog view (18.16) and its explicit table (Atomic) become ReplicatedAggregatingMergeTree; the feeding view has no engine', () => {
    expect(statementsFor(catalogView(), ch18, cluster)[0]).toMatch(
      /^CREATE MATERIALIZED VIEW IF NOT EXISTS metric_catalog\s+ENGINE = ReplicatedAggregatingMergeTree\('\/clickhouse\/tables\/\{shard\}\/meridian\/metric_catalog', '\{replica\}'\)\s+ORDER BY metric_name/,
    );
    const [table, view] = statementsFor(catalogView(), ch26, cluster);
    expect(table).toMatch(
      /^CREATE TABLE IF NOT EXISTS metric_catalog ENGINE = ReplicatedAggregatingMergeTree\('\/clickhouse\/tables\/\{shard\}\/meridian\/metric_catalog', '\{replica\}'\)/,
    );
    expect(view).toBe(statementsFor(catalogView(), ch26)[1]);
  });

  it('engine arguments follow the replication ones (ReplacingMergeTree(version), as a tasks table would have)', () => {
    const tasks = 'CREATE TABLE IF NOT EXISTS tasks (id String, v UInt64) ENGINE = ReplacingMergeTree(v) ORDER BY id';
    expect(replicated(tasks, cluster)).toBe(
      "CREATE TABLE IF NOT EXISTS tasks (id String, v UInt64) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/meridian/tasks', '{replica}', v) ORDER BY id",
    );
  });

  it("the marks' counts (migration 013) become a ReplicatedSummingMergeTree summing n; its truncations and drop run as they are", () => {
    const [counts, ...rest] = readMigrations().find((m) => m.name === 'rollup_mark_counts')!.statements;
    expect(statementsFor(counts!, ch18, cluster)[0]).toMatch(
      /ENGINE = ReplicatedSummingMergeTree\('\/clickhouse\/tables\/\{shard\}\/meridian\/rollup_mark_counts', '\{replica\}', n\)\s+ORDER BY \(metric_name, period\)$/,
    );
    expect(rest.flatMap((s) => statementsFor(s, ch18, cluster))).toEqual([
      'TRUNCATE TABLE IF EXISTS points_1m_sealed',
      'TRUNCATE TABLE IF EXISTS points_1h_sealed',
      'DROP TABLE IF EXISTS rollup_marks',
    ]);
  });

  it('an engine already replicated, a statement that creates nothing, and the non-replicated deduplication window are left alone or out', () => {
    const done = "CREATE TABLE IF NOT EXISTS t (x UInt8) ENGINE = ReplicatedMergeTree('/p/t', '{replica}') ORDER BY x";
    expect(replicated(done, cluster)).toBe(done);
    expect(replicated('ALTER TABLE points ADD COLUMN y UInt8', cluster)).toBe('ALTER TABLE points ADD COLUMN y UInt8');
    // Replicated tables keep block tokens of their own (replicated_deduplication_window).
    for (const s of windowSettings()) expect(statementsFor(s, ch26, cluster)).toEqual([]);
  });

  it('a path or database that could break out of the quoted path is refused', () => {
    expect(() => replicationOf("/clickhouse/'x", 'meridian')).toThrow(/not a replica path/);
    expect(() => replicationOf('/clickhouse/tables', "m'")).toThrow(/not a replica path/);
  });
});
