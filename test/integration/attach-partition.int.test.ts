import { beforeAll, describe, expect, it } from 'vitest';
import { createPointsSink } from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { scratchDatabase } from '../support/scratch-database.ts';

/**
 * The go/no-go of the staging design (write-aside stages attached at an upload's seal;
 * docs/operating/clickhouse-versions.md, "ATTACH PARTITION FROM"): what
 * `ALTER TABLE points ATTACH PARTITION … FROM <stage>` does to the real, unpartitioned points table and its catalog, on ClickHouse 18.16 (this tier) and
 * on 26.9 (the modern tier runs this file again on the chDB front). A stage is made the way the
 * design makes it: `CREATE TABLE … AS points`, filled by the projector's own sink (so its rows
 * are byte for byte what a direct projection writes), one part per insert.
 */
describe('ATTACH PARTITION FROM a stage into points', () => {
  const { client } = scratchDatabase();

  const rowsOf = async <T>(sql: string): Promise<T[]> => (await client.query({ query: sql, format: 'JSONEachRow' })).json<T>();
  const count = async (table: string) => Number((await rowsOf<{ n: string }>(`SELECT toString(count()) AS n FROM ${table}`))[0]!.n);
  const parts = async (table: string) =>
    Number(
      (await rowsOf<{ n: string }>(`SELECT toString(count()) AS n FROM system.parts WHERE database = currentDatabase() AND table = '${table}' AND active`))[0]!
        .n,
    );
  /** Every row, in a fixed order, as text: what a download or a checksum sees. */
  const contents = (table: string) =>
    rowsOf<Record<string, string>>(
      `SELECT metric_name, toString(ts) AS ts, toString(value) AS value, toString(updated_at) AS u, task_id, toString(kafka_partition) AS p, toString(kafka_offset) AS o, toString(row_in_batch) AS r FROM ${table} ORDER BY kafka_partition, kafka_offset, row_in_batch`,
    );
  const catalog = () =>
    rowsOf(
      'SELECT metric_name, toString(countMerge(points)) AS n, toString(minMerge(first_ts)) AS first_ts, toString(maxMerge(last_ts)) AS last_ts FROM metric_catalog GROUP BY metric_name ORDER BY metric_name',
    );
  const pointsPerMetric = () =>
    rowsOf(
      'SELECT metric_name, toString(count()) AS n, toString(min(ts)) AS first_ts, toString(max(ts)) AS last_ts FROM points GROUP BY metric_name ORDER BY metric_name',
    );

  /** One upload's batch at `offset` of partition 1, 500 points of `metric`. */
  const segment = (offset: number, metric: string): Segment => ({
    partition: 1,
    offset,
    batch: {
      type: 'PointBatch',
      task_id: 'staged',
      metric_name: metric,
      updated_at: 7,
      timestamps: Array.from({ length: 500 }, (_, i) => 1_000 + offset * 1_000 + i),
      values: Array.from({ length: 500 }, (_, i) => i / 3),
    },
  });

  /** A stage shaped like points, filled by the sink in `inserts` inserts (one part each). */
  async function stage(name: string, inserts: Segment[][]): Promise<void> {
    await client.command({ query: `CREATE TABLE ${name} AS points` });
    const sink = createPointsSink(client, name);
    for (const segments of inserts) await sink.insert(segments);
  }

  /** The stage's share of the catalog, as the seal procedure adds it after the attach. */
  const catalogShare = (stageTable: string) =>
    client.command({
      query: `INSERT INTO metric_catalog SELECT metric_name, countState() AS points, minState(ts) AS first_ts, maxState(ts) AS last_ts FROM ${stageTable} GROUP BY metric_name`,
    });

  beforeAll(async () => {
    // Rows projected the direct way, before any attach: an attach adds to them.
    await createPointsSink(client).insert([segment(1, 'direct')]);
  });

  it('attaches every part of a multi-part stage at once, rows unchanged; the stage keeps its own copy', async () => {
    await stage('points_stage_a_p1', [[segment(10, 'm.a'), segment(11, 'm.b')], [segment(12, 'm.a')], [segment(13, 'm.c')]]);
    expect(await parts('points_stage_a_p1')).toBe(3);
    const staged = await contents('points_stage_a_p1');
    const before = await count('points');

    // Counts read while the ATTACH runs see the points before it or after it, never part of the stage.
    const seen = new Set<number>();
    let attaching = true;
    const reader = (async () => {
      while (attaching) seen.add(await count('points'));
    })();
    await client.command({ query: 'ALTER TABLE points ATTACH PARTITION tuple() FROM points_stage_a_p1' });
    attaching = false;
    await reader;
    seen.add(await count('points'));
    expect([...seen].every((n) => n === before || n === before + 2_000)).toBe(true);

    expect(await count('points')).toBe(before + 2_000);
    expect((await contents('points')).filter((r) => r.task_id === 'staged' && r.metric_name !== 'direct')).toEqual(staged);
    // Hard links: the stage still holds its parts, so attaching it again would double them (the seal procedure checks first).
    expect(await count('points_stage_a_p1')).toBe(2_000);
    await catalogShare('points_stage_a_p1');
    await client.command({ query: 'DROP TABLE points_stage_a_p1' });
    expect(await count('points')).toBe(before + 2_000);
  });

  it('does not run the catalog view: the catalog learns the stage only from an explicit insert of its states', async () => {
    await stage('points_stage_b_p1', [[segment(20, 'm.new'), segment(21, 'm.a')]]);
    const catalogBefore = await catalog();
    expect(catalogBefore).toEqual(await pointsPerMetric());
    await client.command({ query: 'ALTER TABLE points ATTACH PARTITION tuple() FROM points_stage_b_p1' });
    expect(await catalog()).toEqual(catalogBefore);
    expect(await catalog()).not.toEqual(await pointsPerMetric());
    await catalogShare('points_stage_b_p1');
    expect(await catalog()).toEqual(await pointsPerMetric());
    await client.command({ query: 'DROP TABLE points_stage_b_p1' });
  });

  it('also takes the partition by its id, all', async () => {
    await stage('points_stage_c_p1', [[segment(30, 'm.id')]]);
    const before = await count('points');
    await client.command({ query: "ALTER TABLE points ATTACH PARTITION ID 'all' FROM points_stage_c_p1" });
    expect(await count('points')).toBe(before + 500);
    await catalogShare('points_stage_c_p1');
    expect(await catalog()).toEqual(await pointsPerMetric());
    await client.command({ query: 'DROP TABLE points_stage_c_p1' });
  });

  it('attaches nothing from an empty stage', async () => {
    await client.command({ query: 'CREATE TABLE points_stage_d_p1 AS points' });
    const before = await contents('points');
    await client.command({ query: 'ALTER TABLE points ATTACH PARTITION tuple() FROM points_stage_d_p1' });
    expect(await contents('points')).toEqual(before);
    await client.command({ query: 'DROP TABLE points_stage_d_p1' });
  });

  it('refuses a stage whose structure differs from points, and changes nothing', async () => {
    await client.command({
      query:
        'CREATE TABLE points_stage_e_p1 (metric_name String, ts Int64, value Float64, updated_at Int64, task_id String, kafka_partition UInt16, kafka_offset UInt64) ENGINE = MergeTree() PARTITION BY tuple() ORDER BY (metric_name, ts, updated_at)',
    });
    await client.command({ query: "INSERT INTO points_stage_e_p1 VALUES ('m.bad', 1, 1, 1, 'staged', 1, 40)" });
    const before = await contents('points');
    await expect(client.command({ query: 'ALTER TABLE points ATTACH PARTITION tuple() FROM points_stage_e_p1' })).rejects.toThrow(/structure/i);
    expect(await contents('points')).toEqual(before);
    await client.command({ query: 'DROP TABLE points_stage_e_p1' });
  });
});
