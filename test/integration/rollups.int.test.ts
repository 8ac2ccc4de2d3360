import { describe, expect, it } from 'vitest';
import {
  createPointsSink,
  queryText,
  readRollupPage,
  ROLLUPS,
  seriesFromRollupSql,
  seriesSql,
  serverCapabilities,
  synchronousInsertSettings,
  untilMutationsDone,
  type ClickHouseClient,
  type Resolution,
  type RollupRow,
} from '@meridian/clickhouse';
import { referenceRollups } from '../support/rollup-reference.ts';
import { scratchDatabase } from '../support/scratch-database.ts';

/**
 * The rollups of migration 010 against a real ClickHouse: every 1m and 1h bucket read through
 * readRollupPage equals the same aggregates computed by a query from the deduplicated raw points
 * (the newest row of each (metric, ts), chosen by ORDER BY … LIMIT 1 BY as downloads choose it),
 * with points replaced by later inserts and repeated inside one insert.
 */

type Row = {
  metric_name: string;
  ts: number;
  value: number;
  updated_at: number;
  task_id: string;
  kafka_partition: number;
  kafka_offset: number;
  row_in_batch: number;
};

const T = 1_700_000_000_000 - (1_700_000_000_000 % 3_600_000); // an hour's start
const METRICS = ['cpu:load', 'we"ird\\name ü', "x'); DROP TABLE points; --"];

/** A small deterministic generator: the same points on every run. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0) / 2 ** 32;
}

/**
 * Blocks of points as the projector inserts them: 20k points over 3 hours and 3 metrics at
 * random milliseconds; then a block replacing about 1% of them (a newer updated_at), one
 * repeating some timestamps inside itself (equal updated_at, later row), and one of new points.
 * Values are multiples of 1/8 below 2^20: every sum is exact, whatever the order of adding.
 */
function blocks(): Row[][] {
  const rnd = lcg(42);
  const value = () => Math.round((rnd() - 0.5) * 2 ** 23) / 8;
  let offset = 0;
  const block = (points: { name: string; ts: number; updated_at: number }[]): Row[] => {
    offset += 1;
    return points.map((p, i) => ({
      metric_name: p.name,
      ts: p.ts,
      value: value(),
      updated_at: p.updated_at,
      task_id: 't',
      kafka_partition: 0,
      kafka_offset: offset,
      row_in_batch: i,
    }));
  };
  const first = Array.from({ length: 20_000 }, () => ({ name: METRICS[Math.floor(rnd() * 3)]!, ts: T + Math.floor(rnd() * 3 * 3_600_000), updated_at: T }));
  const replaced = first.filter(() => rnd() < 0.01).map((p) => ({ ...p, updated_at: T + 10_000 }));
  const repeated = first.slice(0, 50).flatMap((p) => [
    { ...p, updated_at: T + 20_000 },
    { ...p, updated_at: T + 20_000 },
  ]);
  const fresh = Array.from({ length: 500 }, () => ({ name: METRICS[0]!, ts: T + 3 * 3_600_000 + Math.floor(rnd() * 3_600_000), updated_at: T + 30_000 }));
  return [block(first.slice(0, 12_000)), block(first.slice(12_000)), block(replaced), block(repeated), block(fresh)];
}

/** The blocks of blocks(), inserted as the projector inserts them. */
async function insertBlocks(client: ClickHouseClient): Promise<void> {
  const settings = synchronousInsertSettings(await serverCapabilities(client));
  for (const values of blocks()) await client.insert({ table: 'points', values, format: 'JSONEachRow', clickhouse_settings: settings });
}

describe('rollups (migration 010)', () => {
  const { conn, client } = scratchDatabase(insertBlocks);

  const reference = (resolution: Resolution) => referenceRollups(conn, resolution);

  const all = { metricNames: METRICS, fromMs: T, toMs: T + 4 * 3_600_000 - 1 };

  for (const resolution of ['1m', '1h'] as const) {
    it(`every ${resolution} bucket equals the aggregates of the deduplicated raw points`, async () => {
      const expected = await reference(resolution);
      const page = await readRollupPage(conn, { resolution, ...all, after: null, maxRows: 1_000_000 });
      expect(page.next).toBeNull();
      expect(page.rows.length).toBe(expected.length);
      expect(page.rows).toEqual(expected);
      // The replacements and repeats left buckets the rollup alone cannot answer: the test covers both paths.
      const dirty = await queryText(conn, {
        sql: `SELECT count() FROM (SELECT countMerge(rows) AS n, uniqExactMerge(timestamps) AS d FROM ${ROLLUPS[resolution].table} GROUP BY metric_name, bucket) WHERE n != d`,
      });
      expect(Number(dirty.trim())).toBeGreaterThan(0);
    });

    it(`${resolution}: pages continue after their last bucket, none skipped or repeated`, async () => {
      const expected = await reference(resolution);
      const got: RollupRow[] = [];
      let after = null;
      for (let pages = 0; pages < 10_000; pages += 1) {
        const page = await readRollupPage(conn, { resolution, ...all, after, maxRows: resolution === '1m' ? 97 : 2 });
        got.push(...page.rows);
        if (page.next === null) break;
        after = page.next;
      }
      expect(got).toEqual(expected);
    });
  }

  it('reads whole buckets overlapping the range, of the metrics asked for only', async () => {
    const page = await readRollupPage(conn, {
      resolution: '1h',
      metricNames: [METRICS[2]!],
      fromMs: T + 3_600_000 + 5,
      toMs: T + 3_600_000 + 6,
      after: null,
      maxRows: 10,
    });
    const expected = (await reference('1h')).filter((r) => r.metric_name === METRICS[2] && r.bucket === T + 3_600_000);
    expect(page.rows).toEqual(expected);
  });

  it('outlives the raw points: with them gone, every bucket is answered from its rollup, of every row it was given', async () => {
    const everyRow = await queryText(conn, {
      sql: `SELECT toString(count()) FROM (SELECT bucket FROM points_1h WHERE metric_name = (SELECT any(name) FROM names) GROUP BY bucket)`,
      tables: [{ name: 'names', structure: 'name String', rows: [[METRICS[0]!]] }],
    });
    const rowsOf = async () => (await readRollupPage(conn, { resolution: '1h', ...all, metricNames: [METRICS[0]!], after: null, maxRows: 100 })).rows;
    const before = await rowsOf();
    await client.command({ query: `ALTER TABLE points DELETE WHERE metric_name = 'cpu:load'` });
    await untilMutationsDone(client, 'points', 60_000);
    expect(Number(await queryText(conn, { sql: "SELECT count() FROM points WHERE metric_name = 'cpu:load'" }))).toBe(0);
    const after = await rowsOf();
    expect(after.length).toBe(Number(everyRow.trim()));
    // The buckets without a replaced point keep their figures; the others now count every row they were given.
    expect(after.map((r) => r.bucket)).toEqual(before.map((r) => r.bucket));
    expect(after.reduce((a, r) => a + r.count, 0)).toBeGreaterThan(before.reduce((a, r) => a + r.count, 0));
  });
});

describe('sampled series from the rollups', () => {
  const { conn } = scratchDatabase(insertBlocks);

  const names = [{ name: 'names', structure: 'name String', rows: METRICS.map((m) => [m]) }];
  /** Rows with the mean rounded: a sum in another order may differ in its last bits. */
  const rows = (text: string) =>
    text
      .trimEnd()
      .split('\n')
      .map((l) =>
        l
          .split('\t')
          .map((f, i) => (i === 4 ? Number(f).toPrecision(12) : f))
          .join('\t'),
      );

  // Ranges with partial buckets at either end (read from points) and whole ones between (from a rollup).
  for (const [fromMs, toMs, stepMs] of [
    [T + 1234, T + 4 * 3_600_000 - 777, 7_200_000],
    [T + 59_999, T + 3 * 3_600_000 + 5, 3_600_000],
    [T + 1, T + 2 * 3_600_000 + 61_000, 300_000],
    [T, T + 4 * 3_600_000 - 1, 60_000],
  ] as const) {
    it(`step ${stepMs} ms over ${fromMs - T}..${toMs - T}: the same buckets as the query on every row of points`, async () => {
      const fromRollup = seriesFromRollupSql(fromMs, toMs, stepMs);
      expect(fromRollup).toContain(stepMs % 3_600_000 === 0 ? 'FROM points_1h' : 'FROM points_1m');
      const want = rows(await queryText(conn, { sql: seriesSql(fromMs, toMs, stepMs), tables: names }));
      expect(want.length).toBeGreaterThan(1);
      expect(rows(await queryText(conn, { sql: fromRollup!, tables: names }))).toEqual(want);
    });
  }

  it('keeps to the raw query where no rollup fits', () => {
    expect(seriesFromRollupSql(T, T + 3_600_000, 5_000)).toBeNull();
    expect(seriesFromRollupSql(T + 1, T + 3_599_999, 3_600_000)).toBeNull();
  });
});

describe('the rollups of a block whose views did not run', () => {
  const { conn, client } = scratchDatabase();

  const counts = (table: string) =>
    queryText(conn, {
      sql: `SELECT metric_name, bucket, countMerge(rows), minMerge(min_value), maxMerge(max_value), sumMerge(sum_value) FROM ${table} GROUP BY metric_name, bucket ORDER BY metric_name, bucket FORMAT TabSeparated`,
    });
  const fromPoints = (w: number) =>
    queryText(conn, {
      sql: `SELECT metric_name, intDiv(ts, ${w}) * ${w} AS bucket, count(), min(value), max(value), sum(value) FROM points GROUP BY metric_name, bucket ORDER BY metric_name, bucket FORMAT TabSeparated`,
    });

  it("the sink's repair after a server died between the points and their views adds exactly what each rollup lacks, once", async () => {
    const batch = (offset: number, first: number) => ({
      partition: 3,
      offset,
      batch: {
        type: 'PointBatch' as const,
        task_id: 't',
        metric_name: 'r.a',
        updated_at: 1,
        timestamps: Array.from({ length: 90 }, (_, i) => T + first + i * 1000),
        values: Array.from({ length: 90 }, (_, i) => i / 4),
      },
    });
    // A block stored with its views, then one stored without them (ATTACH runs none), in the same buckets.
    await createPointsSink(client).insert([batch(1, 0)]);
    await client.command({ query: 'CREATE TABLE points_aside AS points' });
    await createPointsSink(client, 'points_aside').insert([batch(2, 30_000)]);
    await client.command({ query: 'ALTER TABLE points ATTACH PARTITION tuple() FROM points_aside' });
    expect(await counts('points_1m')).not.toBe(await fromPoints(60_000));
    await createPointsSink(client).repairCatalog([{ partition: 3, offset: 2 }]);
    expect(await counts('points_1m')).toBe(await fromPoints(60_000));
    expect(await counts('points_1h')).toBe(await fromPoints(3_600_000));
    // Asked again (a repair retried, or of a block whose views did run): nothing added.
    await createPointsSink(client).repairCatalog([
      { partition: 3, offset: 2 },
      { partition: 3, offset: 1 },
    ]);
    expect(await counts('points_1m')).toBe(await fromPoints(60_000));
    expect(await counts('points_1h')).toBe(await fromPoints(3_600_000));
  });
});
