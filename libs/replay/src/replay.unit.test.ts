import { describe, expect, it } from 'vitest';
import { capabilities, readMigrations } from '@meridian/clickhouse';
import { BoundError, parseBound } from './bounds.ts';
import {
  catalogDefinition,
  createGenerationSql,
  foldRegistry,
  forgetInsertTokensSql,
  liveGeneration,
  parseGeneration,
  pointsTableDdl,
  stagesOf,
  type RegistryRow,
} from './generations.ts';
import { etaMs, formatProgress } from './progress.ts';
import { compareSums, perMetricSql, rangeCondition, sealedAfterCondition } from './verify.ts';
import { refuseReplicated } from './swap.ts';

describe('--from / --to bounds', () => {
  it('reads dates (whole UTC days), date-times, one offset and offsets per partition', () => {
    expect(parseBound('2024-01-02', 'from')).toEqual({ kind: 'time', ms: Date.UTC(2024, 0, 2) });
    expect(parseBound('2024-01-02', 'to')).toEqual({ kind: 'time', ms: Date.UTC(2024, 0, 3) - 1 });
    expect(parseBound('2024-01-02T03:04:05.250Z', 'to')).toEqual({ kind: 'time', ms: Date.UTC(2024, 0, 2, 3, 4, 5, 250) });
    expect(parseBound('2024-01-02T03:04:05+01:00', 'from')).toEqual({ kind: 'time', ms: Date.UTC(2024, 0, 2, 2, 4, 5) });
    expect(parseBound('1234', 'from')).toEqual({ kind: 'offset', offset: 1234 });
    expect(parseBound('0:10,2:7', 'to')).toEqual({
      kind: 'offsets',
      offsets: new Map([
        [0, 10],
        [2, 7],
      ]),
    });
  });

  it('refuses anything else with a message naming the option', () => {
    for (const bad of ['yesterday', '2024-13-01', '1:2,1:3', '-5', '0:1,', '99999999999999999999']) {
      expect(() => parseBound(bad, 'from'), bad).toThrow(BoundError);
    }
    expect(() => parseBound('soon', 'to')).toThrow(/--to/);
  });
});

describe('the progress line', () => {
  it('shows the bar, events, points and rate, the ETA and the lag', () => {
    const line = formatProgress({ events: 1200, points: 600_000, elapsedMs: 2000, remaining: 300, total: 1000, lag: 310 }, 10);
    expect(line).toBe('[#######---]   70%  1,200 events  600,000 points (300,000 points/s)  ETA 0:01  lag 310 events');
    expect(etaMs({ events: 0, points: 0, elapsedMs: 100, remaining: 10, total: 10, lag: null })).toBeNull();
    expect(etaMs({ events: 5, points: 0, elapsedMs: 1000, remaining: 0, total: 5, lag: null })).toBe(0);
    expect(formatProgress({ events: 0, points: 0, elapsedMs: 0, remaining: 0, total: 0, lag: null }, 4)).toBe(
      '[####]  100%  0 events  0 points (0 points/s)  ETA 0:00',
    );
  });
});

describe('generations', () => {
  it('names generations g<N> or N', () => {
    expect(parseGeneration('g12')).toBe(12);
    expect(parseGeneration('3')).toBe(3);
    for (const bad of ['0', 'x', 'g', '1.5', 'points']) expect(() => parseGeneration(bad), bad).toThrow();
  });

  it("creates a generation from the migrations' own definitions, the catalog fed by its own view", () => {
    expect(pointsTableDdl('points_g2')).toMatch(
      /^CREATE TABLE `points_g2` \(\n {2}metric_name String,[\s\S]*ENGINE = MergeTree\(\)\nPARTITION BY tuple\(\)\nORDER BY \(metric_name, ts, updated_at\)$/,
    );
    const catalog = catalogDefinition();
    expect(catalog.engine).toBe('ENGINE = AggregatingMergeTree()\nORDER BY metric_name');
    expect(catalog.select('points_g2')).toMatch(/countState\(\) AS points[\s\S]*FROM `points_g2`\nGROUP BY metric_name$/);
    const [table, seals, catalogTable, rollup1m, rollup1h, feed, feed1m, feed1h, ...rest] = createGenerationSql(2, true, capabilities('18.16.1', 'Ordinary'));
    expect(rest).toEqual([]);
    // The rollups (migration 010) as the catalog: a table of their states, fed by their own view.
    expect(rollup1m).toMatch(
      /^CREATE TABLE `points_1m_g2` ENGINE = AggregatingMergeTree\(\)\nORDER BY \(metric_name, bucket\) AS SELECT[\s\S]*FROM `points_g2`\nWHERE 0 GROUP BY metric_name, bucket$/,
    );
    expect(rollup1h).toMatch(/^CREATE TABLE `points_1h_g2` [\s\S]*intDiv\(ts, 3600000\)[\s\S]*WHERE 0 GROUP BY metric_name, bucket$/);
    expect(feed1m).toMatch(/^CREATE MATERIALIZED VIEW `points_1m_feed_g2` TO `points_1m_g2` AS SELECT[\s\S]*FROM `points_g2`\nGROUP BY metric_name, bucket$/);
    expect(feed1h).toMatch(/^CREATE MATERIALIZED VIEW `points_1h_feed_g2` TO `points_1h_g2` AS /);
    expect(table).toBe('CREATE TABLE `points_g2` AS `points`');
    // Its staged seals, which count in its positions: migration 007's table under its name.
    expect(seals).toMatch(/^CREATE TABLE `points_seals_g2` \(\n\s+kafka_partition UInt16,[\s\S]*ORDER BY \(kafka_partition, seal_offset\)\s*$/);
    expect(catalogTable).toMatch(
      /^CREATE TABLE `metric_catalog_g2` ENGINE = AggregatingMergeTree\(\)\nORDER BY metric_name AS SELECT[\s\S]*FROM `points_g2`\nWHERE 0 GROUP BY metric_name$/,
    );
    expect(feed).toMatch(/^CREATE MATERIALIZED VIEW `metric_catalog_feed_g2` TO `metric_catalog_g2` AS SELECT[\s\S]*FROM `points_g2`\nGROUP BY metric_name$/);
    expect(createGenerationSql(3, false, capabilities('18.16.1', 'Ordinary'))[0]).toMatch(/^CREATE TABLE `points_g3` \(/);
  });

  it('knows the stages a rebuild of a generation leaves (for replay drop), and no other table', () => {
    const task = 'a'.repeat(16);
    const attempt = '0123456789abcdef';
    expect(stagesOf(3).test(`points_g3_stage_${task}_${attempt}_p0`)).toBe(true);
    expect(stagesOf(3).test(`points_g3_stage_${task}_${attempt}_p12_rest`)).toBe(true);
    for (const other of [
      `points_stage_${task}_${attempt}_p0`,
      `points_g31_stage_${task}_${attempt}_p0`,
      'points_g3',
      'points_seals_g3',
      `points_g3_stage_${attempt}_p0`,
    ])
      expect(stagesOf(3).test(other), other).toBe(false);
  });

  it("gives a generation's tables the deduplication window of migration 004 where the server keeps insert tokens, before its feed exists", () => {
    const ch26 = capabilities('26.9.2.1', 'Atomic');
    expect(createGenerationSql(2, true, ch26).slice(14)).toEqual([
      'ALTER TABLE `points_g2` MODIFY SETTING non_replicated_deduplication_window = 1000',
      'ALTER TABLE `metric_catalog_g2` MODIFY SETTING non_replicated_deduplication_window = 1000',
      'ALTER TABLE `points_1m_g2` MODIFY SETTING non_replicated_deduplication_window = 1000',
      'ALTER TABLE `points_1h_g2` MODIFY SETTING non_replicated_deduplication_window = 1000',
      expect.stringMatching(/^CREATE MATERIALIZED VIEW `metric_catalog_feed_g2` TO `metric_catalog_g2`/),
      expect.stringMatching(/^CREATE MATERIALIZED VIEW `points_1m_feed_g2` TO `points_1m_g2`/),
      expect.stringMatching(/^CREATE MATERIALIZED VIEW `points_1h_feed_g2` TO `points_1h_g2`/),
    ]);
    expect(forgetInsertTokensSql('points_g2', 'metric_catalog_g2', ch26)).toEqual([
      'ALTER TABLE `points_g2` MODIFY SETTING non_replicated_deduplication_window = 0',
      'ALTER TABLE `metric_catalog_g2` MODIFY SETTING non_replicated_deduplication_window = 0',
      'ALTER TABLE `points_g2` MODIFY SETTING non_replicated_deduplication_window = 1000',
      'ALTER TABLE `metric_catalog_g2` MODIFY SETTING non_replicated_deduplication_window = 1000',
    ]);
    for (const older of [capabilities('18.16.1', 'Ordinary'), capabilities('26.9.2.1', 'Ordinary')]) {
      expect(createGenerationSql(2, true, older).filter((s) => s.includes('non_replicated_deduplication_window'))).toEqual([]);
      expect(forgetInsertTokensSql('points', '.inner.metric_catalog', older)).toEqual([]);
    }
  });

  it("gives a generation's points table the columns' codecs (009) and blocks (014) the migrations give points on this server, with or without a live table", () => {
    const ch26 = capabilities('26.9.2.1', 'Atomic');
    const columns = readMigrations()
      .flatMap((m) => m.statements)
      .filter((s) => /^ALTER TABLE points MODIFY COLUMN /.test(s))
      .map((s) => s.replace('ALTER TABLE points ', 'ALTER TABLE `points_g2` '));
    expect(columns).toHaveLength(9);
    expect(columns.at(-1)).toBe(
      'ALTER TABLE `points_g2` MODIFY COLUMN task_id MODIFY SETTING min_compress_block_size = 4194304, max_compress_block_size = 4194304',
    );
    expect(createGenerationSql(2, true, ch26).slice(0, 11)).toEqual([
      'CREATE TABLE `points_g2` AS `points`',
      ...columns,
      expect.stringMatching(/^CREATE TABLE `points_seals_g2` /),
    ]);
    expect(createGenerationSql(2, false, ch26).slice(0, 11)).toEqual([
      pointsTableDdl('points_g2'),
      ...columns,
      expect.stringMatching(/^CREATE TABLE `points_seals_g2` /),
    ]);
    // 20.1 to 23.12: the codecs without the blocks; 18.16: neither (its server config compresses).
    expect(createGenerationSql(2, false, capabilities('23.12.1.1', 'Atomic')).slice(1, 10)).toEqual([
      ...columns.slice(0, 8),
      expect.stringMatching(/^CREATE TABLE `points_seals_g2` /),
    ]);
    expect(createGenerationSql(2, false, capabilities('18.16.1', 'Ordinary'))[1]).toMatch(/^CREATE TABLE `points_seals_g2` /);
    // Every other change the migrations make to points is a table setting (tableSettingsSql): a column added later would need its place here.
    const others = readMigrations()
      .flatMap((m) => m.statements)
      .filter((s) => /^ALTER TABLE points /.test(s) && !/^ALTER TABLE points MODIFY (COLUMN|SETTING) /.test(s));
    expect(others).toEqual([]);
  });

  it('folds the registry: generation 1 is live until another is swapped in', () => {
    const row = (generation: number, event: RegistryRow['event'], at: number, detail: Record<string, unknown> = {}): RegistryRow => ({
      generation,
      event,
      at,
      detail,
    });
    expect(liveGeneration(foldRegistry([]))).toBe(1);
    const folded = foldRegistry([
      row(2, 'created', 10, { from: null }),
      row(2, 'built', 20, { points: 5 }),
      row(2, 'verified', 21, { ok: true }),
      row(3, 'created', 30),
      row(1, 'retired', 40),
      row(2, 'live', 40),
    ]);
    expect(liveGeneration(folded)).toBe(2);
    expect(folded.get(1)!.state).toBe('retired');
    expect(folded.get(2)).toMatchObject({ state: 'live', verified: true, created_at: 10, detail: { from: null, built: { points: 5 } } });
    expect(folded.get(3)!.state).toBe('building');
    const later = foldRegistry([
      ...[row(2, 'live', 40), row(1, 'retired', 40)],
      row(4, 'created', 50),
      row(4, 'built', 51),
      row(4, 'live', 60),
      row(2, 'retired', 60),
      row(2, 'dropped', 70),
    ]);
    expect([...later.values()].map((g) => [g.generation, g.state])).toEqual(
      expect.arrayContaining([
        [1, 'retired'],
        [2, 'dropped'],
        [4, 'live'],
      ]),
    );
  });
});

describe('verification', () => {
  it('compares the rows of batches up to a position per partition, in SQL made of numbers only', () => {
    expect(
      rangeCondition(
        new Map([
          [1, 9],
          [0, 4],
          [2, -1],
        ]),
      ),
    ).toBe('(kafka_partition = 0 AND kafka_offset <= 4) OR (kafka_partition = 1 AND kafka_offset <= 9)');
    expect(rangeCondition(new Map([[0, -1]]))).toBe('0');
    expect(() => rangeCondition(new Map([[0, 1.5]]))).toThrow();
    expect(perMetricSql('points_g2', '1')).toContain(
      'sum(cityHash64(metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch))',
    );
  });

  it("leaves out of the comparison the rows of staged shares sealed after the compared position, by either table's seals", () => {
    expect(
      sealedAfterCondition(
        new Map([
          [0, 4],
          [1, -1],
        ]),
        ['points_seals', 'points_seals_g2'],
      ),
    ).toBe(
      '(kafka_partition, task_id) NOT IN (SELECT kafka_partition, task_id FROM `points_seals` WHERE (kafka_partition = 0 AND seal_offset > 4) OR (kafka_partition = 1 AND seal_offset > -1)' +
        ' UNION ALL SELECT kafka_partition, task_id FROM `points_seals_g2` WHERE (kafka_partition = 0 AND seal_offset > 4) OR (kafka_partition = 1 AND seal_offset > -1))',
    );
    // Tables from before staged uploads have no seals: nothing to leave out.
    expect(sealedAfterCondition(new Map([[0, 4]]), [])).toBe('1');
    expect(() => sealedAfterCondition(new Map([[0, 0.5]]), ['points_seals'])).toThrow();
  });

  it('reports every metric whose count or checksum differs, or that one side lacks', () => {
    const a = new Map([
      ['m1', { rows: 2, checksum: '10' }],
      ['m2', { rows: 1, checksum: '5' }],
      ['m3', { rows: 1, checksum: '7' }],
    ]);
    const b = new Map([
      ['m1', { rows: 2, checksum: '10' }],
      ['m2', { rows: 1, checksum: '6' }],
      ['m4', { rows: 3, checksum: '1' }],
    ]);
    expect(compareSums(a, a)).toEqual({ mismatched: 0, mismatches: [] });
    const diff = compareSums(a, b, 2);
    expect(diff.mismatched).toBe(3);
    expect(diff.mismatches).toEqual([
      { metric_name: 'm2', expected: { rows: 1, checksum: '5' }, actual: { rows: 1, checksum: '6' } },
      { metric_name: 'm3', expected: { rows: 1, checksum: '7' }, actual: null },
    ]);
  });
});

describe('replay on a cluster', () => {
  it('refuses a replicated live table, naming why and what to do instead; a plain or missing one passes', () => {
    for (const engine of ['ReplicatedMergeTree', 'ReplicatedAggregatingMergeTree']) {
      expect(() => refuseReplicated(engine)).toThrow(
        new RegExp(
          `points is a ${engine} \\(CLICKHOUSE_CLUSTER\\): replay and swap do not run on replicated tables yet; rebuild into another database with --database`,
        ),
      );
    }
    for (const engine of ['MergeTree', 'Merge', undefined]) expect(() => refuseReplicated(engine)).not.toThrow();
  });
});
