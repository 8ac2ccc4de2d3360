import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createPointsSink,
  createPointsStages,
  LIVE_STAGE_TARGETS,
  rollupStatesSql,
  type ClickHouseClient,
  type PointsSink,
  type StagedShare,
} from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { itOnServer } from '../support/clickhouse-front.ts';
import { scratchDatabase } from '../support/scratch-database.ts';

type Call = { readonly query?: string; readonly table?: string; readonly query_id?: string };
/**
 * The client with its query/command/insert calls passed through `around` (which forwards them,
 * holds them, or plays a failed connection): the server stays real, only the timing is the test's.
 */
function intercepted(
  client: ClickHouseClient,
  around: (method: string, params: Call, forward: (params: Call) => Promise<unknown>) => Promise<unknown>,
): ClickHouseClient {
  return new Proxy(client, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const bound = (value as (p: unknown) => Promise<unknown>).bind(target);
      return prop === 'query' || prop === 'command' || prop === 'insert' ? (params: Call) => around(prop, params, (p) => bound(p)) : bound;
    },
  });
}

/** A promise and its resolver. */
function latch(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/**
 * The seal procedure of staged uploads (libs/clickhouse/src/points/stage.ts) against a
 * real server, on 18.16 and (the modern tier runs this file again) on 26.9: a committed share
 * is moved into points exactly once, with an exact catalog, from whatever state a crash left at
 * each step of it (the states are made by hand here: what each step would have left).
 */
describe('staged shares sealed into points', () => {
  const { client } = scratchDatabase();
  const stages = createPointsStages(client);

  const rowsOf = async <T>(sql: string): Promise<T[]> => (await client.query({ query: sql, format: 'JSONEachRow' })).json<T>();
  const number = async (sql: string) => Number((await rowsOf<{ n: string }>(`SELECT toString((${sql})) AS n`))[0]!.n);
  const catalog = () =>
    rowsOf(
      'SELECT metric_name, toString(countMerge(points)) AS n, toString(minMerge(first_ts)) AS first_ts, toString(maxMerge(last_ts)) AS last_ts FROM metric_catalog GROUP BY metric_name ORDER BY metric_name',
    );
  const pointsPerMetric = () =>
    rowsOf<{ metric_name: string; n: string }>(
      'SELECT metric_name, toString(count()) AS n, toString(min(ts)) AS first_ts, toString(max(ts)) AS last_ts FROM points GROUP BY metric_name ORDER BY metric_name',
    );
  const rowsAt = (table: string, partition: number, offsets: readonly number[]) =>
    rowsOf(
      `SELECT metric_name, toString(ts) AS ts, toString(value) AS value, toString(updated_at) AS u, task_id, toString(kafka_offset) AS o, toString(row_in_batch) AS r FROM ${table} WHERE kafka_partition = ${partition} AND kafka_offset IN (${offsets.join(', ')}) ORDER BY kafka_offset, row_in_batch`,
    );
  const stageTables = async () =>
    (
      await rowsOf<{ name: string }>("SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'points_stage_') ORDER BY name")
    ).map((r) => r.name);

  let nextOffset = 100;
  /** A fresh upload's share of partition 1: three batches (two of one metric), 1,500 points, and its seal after them. */
  function upload(): { share: StagedShare; segments: Segment[] } {
    const first = nextOffset;
    nextOffset += 10;
    const attempt = randomBytes(8).toString('hex');
    const segments = ['s.a', 's.b', 's.a'].map((metric, i): Segment => ({
      partition: 1,
      offset: first + i,
      batch: {
        type: 'PointBatch',
        task_id: `task-${attempt}`,
        metric_name: metric,
        updated_at: 9,
        timestamps: Array.from({ length: 500 }, (_, k) => (first + i) * 10_000 + k),
        values: Array.from({ length: 500 }, (_, k) => k / 7),
      },
    }));
    return { share: { partition: 1, sealOffset: first + 3, taskId: `task-${attempt}`, attempt, points: 1_500, batches: 3 }, segments };
  }
  /** Fills a stage as the upload job would: whole batches, two inserts (two parts). */
  const fill = async (sink: PointsSink, segments: Segment[]) => {
    await sink.insert(segments.slice(0, 2));
    await sink.insert(segments.slice(2));
    return { points: 0, batches: 0 };
  };
  const noRefill = async () => {
    throw new Error('refilled');
  };

  /** The share is in points once, byte for byte as a direct projection writes it; the catalog counts what points holds; the seal is recorded; no stage is left. */
  async function expectSealed({ share, segments }: { share: StagedShare; segments: Segment[] }): Promise<void> {
    const offsets = segments.map((s) => s.offset);
    const reference = `reference_${share.attempt}`;
    await client.command({ query: `CREATE TABLE ${reference} AS points` });
    await createPointsSink(client, reference).insert(segments);
    expect(await rowsAt('points', share.partition, offsets)).toEqual(await rowsAt(reference, share.partition, offsets));
    await client.command({ query: `DROP TABLE ${reference}` });
    expect(await catalog()).toEqual(await pointsPerMetric());
    // ATTACH runs no view: the rollups (migration 010) got the share's states explicitly, as the catalog did.
    const perMetric = (await pointsPerMetric()).map(({ metric_name, n }) => ({ metric_name, n }));
    for (const rollup of ['points_1m', 'points_1h']) {
      expect(await rowsOf(`SELECT metric_name, toString(countMerge(rows)) AS n FROM ${rollup} GROUP BY metric_name ORDER BY metric_name`), rollup).toEqual(
        perMetric,
      );
    }
    expect(
      await number(
        `SELECT count() FROM points_seals WHERE kafka_partition = ${share.partition} AND seal_offset = ${share.sealOffset} AND attempt = '${share.attempt}'`,
      ),
    ).toBe(1);
    expect(await stageTables()).toEqual([]);
  }

  beforeAll(async () => {
    // Points of the same metrics projected directly before: a seal adds to them.
    await createPointsSink(client).insert([
      {
        partition: 1,
        offset: 1,
        batch: { type: 'PointBatch', task_id: 'direct', metric_name: 's.a', updated_at: 1, timestamps: [1, 2, 3], values: [1, 2, 3] },
      },
    ]);
  });

  it('attaches a complete stage, adds its catalog share, records the seal and drops the stage; a seal read again changes nothing', async () => {
    const up = upload();
    await fill(await stages.open(up.share.taskId, up.share.attempt, 1), up.segments);
    const before = await number('SELECT count() FROM points');
    expect(await stages.seal(up.share, noRefill)).toEqual({ how: 'attached', refilled: false, points: 1_500 });
    expect(await number('SELECT count() FROM points')).toBe(before + 1_500);
    await expectSealed(up);
    expect(await stages.seal(up.share, noRefill)).toEqual({ how: 'recorded before', refilled: false, points: 0 });
    expect(await number('SELECT count() FROM points')).toBe(before + 1_500);
    await expectSealed(up);
    // The position counts the recorded seal: every record up to it is handled, the seal included.
    expect(await createPointsSink(client, 'points', { sealsTable: 'points_seals' }).maxOffsets([1, 2])).toEqual(
      new Map([
        [1, up.share.sealOffset],
        [2, -1],
      ]),
    );
    expect(await createPointsSink(client).maxOffsets([1])).toEqual(new Map([[1, up.share.sealOffset - 1]]));
  });

  it('a stage holds its task and partition as column defaults (its blocks leave them out) and refuses rows of another', async () => {
    const up = upload();
    const sink = await stages.open(up.share.taskId, up.share.attempt, 1);
    const stage = stages.tableOf(up.share.taskId, up.share.attempt, 1);
    const defaults = await rowsOf<{ name: string; default_type: string; default_expression: string }>(`DESCRIBE TABLE ${stage}`);
    expect(
      defaults.filter((c) => c.default_type !== '').map((c) => [c.name, c.default_type, c.default_expression.replace(/^CAST\((\d+), 'UInt16'\)$/, '$1')]),
    ).toEqual([
      ['task_id', 'DEFAULT', `'${up.share.taskId}'`],
      ['kafka_partition', 'DEFAULT', '1'],
    ]);
    const [first] = up.segments;
    await expect(sink.insert([{ ...first!, batch: { ...first!.batch, task_id: 'another-task' } }])).rejects.toThrow(/holds task .* only/);
    await expect(sink.insert([{ ...first!, partition: 2 }])).rejects.toThrow(/holds task .* only/);
    expect(await number(`SELECT count() FROM ${stage}`)).toBe(0);
    await fill(sink, up.segments);
    expect(await stages.seal(up.share, noRefill)).toEqual({ how: 'attached', refilled: false, points: 1_500 });
    await expectSealed(up);
  });

  it('a task id that is not a plain token is never written into SQL: its stage has no defaults and its blocks carry every column', async () => {
    const up = upload();
    const taskId = `o'brien; DROP TABLE points -- ${up.share.attempt}`;
    const share = { ...up.share, taskId };
    const segments = up.segments.map((s) => ({ ...s, batch: { ...s.batch, task_id: taskId } }));
    await fill(await stages.open(taskId, share.attempt, 1), segments);
    const stage = stages.tableOf(taskId, share.attempt, 1);
    expect((await rowsOf<{ default_type: string }>(`DESCRIBE TABLE ${stage}`)).filter((c) => c.default_type !== '')).toEqual([]);
    expect(await stages.seal(share, noRefill)).toEqual({ how: 'attached', refilled: false, points: 1_500 });
    await expectSealed({ share, segments });
  });

  it('refills a stage that is missing, short, over-full or of another structure', async () => {
    const missing = upload();
    expect(await stages.seal(missing.share, (sink) => fill(sink, missing.segments))).toEqual({ how: 'attached', refilled: true, points: 1_500 });
    await expectSealed(missing);

    const short = upload();
    await (await stages.open(short.share.taskId, short.share.attempt, 1)).insert(short.segments.slice(0, 1));
    expect(await stages.seal(short.share, (sink) => fill(sink, short.segments))).toEqual({ how: 'attached', refilled: true, points: 1_500 });
    await expectSealed(short);

    const overFull = upload();
    const sink = await stages.open(overFull.share.taskId, overFull.share.attempt, 1);
    await fill(sink, overFull.segments);
    await createPointsSink(client, stages.tableOf(overFull.share.taskId, overFull.share.attempt, 1)).insert([
      { ...overFull.segments[0]!, offset: overFull.segments[0]!.offset + 5 },
    ]);
    expect(await stages.seal(overFull.share, (s) => fill(s, overFull.segments))).toEqual({ how: 'attached', refilled: true, points: 1_500 });
    await expectSealed(overFull);

    const reshaped = upload();
    await client.command({
      query: `CREATE TABLE ${stages.tableOf(reshaped.share.taskId, reshaped.share.attempt, 1)} (metric_name String, ts Int64) ENGINE = MergeTree() ORDER BY metric_name`,
    });
    expect(await stages.seal(reshaped.share, (s) => fill(s, reshaped.segments))).toEqual({ how: 'attached', refilled: true, points: 1_500 });
    await expectSealed(reshaped);
  });

  it('a refill that leaves out a bad batch (dead-lettered by the caller) is checked against the seal less that batch', async () => {
    const bad = upload();
    const kept = [bad.segments[0]!, bad.segments[2]!];
    expect(
      await stages.seal(bad.share, async (sink) => {
        await sink.insert(kept);
        return { points: 500, batches: 1 };
      }),
    ).toEqual({ how: 'attached', refilled: true, points: 1_000 });
    await expectSealed({ share: bad.share, segments: kept });
    // Left out wrongly (the stage then holds more than the seal less the omitted), the seal fails rather than attach.
    const wrong = upload();
    await expect(
      stages.seal(wrong.share, async (sink) => {
        await fill(sink, wrong.segments);
        return { points: 500, batches: 1 };
      }),
    ).rejects.toThrow(/does not hold/);
    await stages.drop(wrong.share.taskId);
  });

  it('after a crash past the ATTACH, does not attach again: completes the catalog (or finds it complete) and records the seal', async () => {
    const beforeCatalog = upload();
    await fill(await stages.open(beforeCatalog.share.taskId, beforeCatalog.share.attempt, 1), beforeCatalog.segments);
    await client.command({
      query: `ALTER TABLE points ATTACH PARTITION tuple() FROM ${stages.tableOf(beforeCatalog.share.taskId, beforeCatalog.share.attempt, 1)}`,
    });
    expect(await catalog()).not.toEqual(await pointsPerMetric());
    expect(await stages.seal(beforeCatalog.share, noRefill)).toEqual({ how: 'found attached', refilled: false, points: 0 });
    await expectSealed(beforeCatalog);

    const beforeRecord = upload();
    const stage = stages.tableOf(beforeRecord.share.taskId, beforeRecord.share.attempt, 1);
    await fill(await stages.open(beforeRecord.share.taskId, beforeRecord.share.attempt, 1), beforeRecord.segments);
    await client.command({ query: `ALTER TABLE points ATTACH PARTITION tuple() FROM ${stage}` });
    await client.command({
      query: `INSERT INTO metric_catalog SELECT metric_name, countState() AS points, minState(ts) AS first_ts, maxState(ts) AS last_ts FROM ${stage} GROUP BY metric_name`,
    });
    // The 1m rollup's share was written before the crash too, the 1h one not: each is completed or found complete.
    await client.command({ query: `INSERT INTO points_1m ${rollupStatesSql('1m', stage)}` });
    expect(await stages.seal(beforeRecord.share, noRefill)).toEqual({ how: 'found attached', refilled: false, points: 0 });
    await expectSealed(beforeRecord);
  });

  it('after a server died inside a multi-part ATTACH (some batches in), attaches only the batches points lacks', async () => {
    const up = upload();
    await fill(await stages.open(up.share.taskId, up.share.attempt, 1), up.segments);
    // What the dead ATTACH left: the first part's batches in points, without their catalog share.
    const partial = `partial_${up.share.attempt}`;
    await client.command({ query: `CREATE TABLE ${partial} AS points` });
    await createPointsSink(client, partial).insert(up.segments.slice(0, 2));
    await client.command({ query: `ALTER TABLE points ATTACH PARTITION tuple() FROM ${partial}` });
    await client.command({ query: `DROP TABLE ${partial}` });
    // Only the last batch (500 points) was missing: that is what the seal moves.
    expect(await stages.seal(up.share, noRefill)).toEqual({ how: 'found attached', refilled: false, points: 500 });
    expect(await number(`SELECT count() FROM points WHERE task_id = '${up.share.taskId}'`)).toBe(1_500);
    await expectSealed(up);
  });

  it('fails, attaching nothing, when even a refill does not hold what the seal states', async () => {
    const up = upload();
    const before = await number('SELECT count() FROM points');
    await expect(
      stages.seal(up.share, async (sink) => {
        await sink.insert(up.segments.slice(1));
        return { points: 0, batches: 0 };
      }),
    ).rejects.toThrow(/does not hold the 1500 points in 3 batches/);
    expect(await number('SELECT count() FROM points')).toBe(before);
    expect(await number('SELECT count() FROM points_seals WHERE kafka_partition = 1 AND seal_offset = ' + up.share.sealOffset)).toBe(0);
    await stages.drop(up.share.taskId);
    expect(await stageTables()).toEqual([]);
  });

  it("drops a task's stages whatever their attempt (an earlier, killed run's too), and sweeps only stages at least as old as asked", async () => {
    const up = upload();
    await stages.open(up.share.taskId, up.share.attempt, 0);
    await stages.open(up.share.taskId, up.share.attempt, 2);
    const earlierRun = randomBytes(8).toString('hex');
    await stages.open(up.share.taskId, earlierRun, 0);
    expect(await stageTables()).toHaveLength(3);
    expect(stages.tableOf(up.share.taskId, earlierRun, 0)).toMatch(/^points_stage_[0-9a-f]{16}_[0-9a-f]{16}_p0$/);
    const other = upload();
    await stages.open(other.share.taskId, other.share.attempt, 1);
    await stages.drop(up.share.taskId);
    expect(await stageTables()).toEqual([stages.tableOf(other.share.taskId, other.share.attempt, 1)]);
    expect(await stages.sweep(3_600_000)).toEqual([]);
    expect(await stageTables()).toEqual([stages.tableOf(other.share.taskId, other.share.attempt, 1)]);
    expect(await stages.sweep(0)).toEqual([stages.tableOf(other.share.taskId, other.share.attempt, 1)]);
    expect(await stageTables()).toEqual([]);
  });
  it('two owners of a partition (a seal that outlasted a rebalance): the fenced one stops before writing, the share is attached once', async () => {
    const up = upload();
    await fill(await stages.open(up.share.taskId, up.share.attempt, 1), up.segments);
    let owner = 'A';
    const fenceOf = (me: string) => () => {
      if (owner !== me) throw new Error(`${me} lost the partition`);
    };
    // A counts the share's rows in points (0), then stalls (a long wait, a GC pause) until B is nearly done.
    const aCounted = latch();
    const aGoesOn = latch();
    const clientA = intercepted(client, async (method, params, forward) => {
      const result = await forward(params);
      if (method === 'query' && params.query?.includes('FROM (SELECT kafka_offset FROM `points`')) {
        aCounted.open();
        await aGoesOn.promise;
      }
      return result;
    });
    // B, the new owner, seals it too; it is held just before recording the seal (its stage still there).
    const bRecords = latch();
    const bGoesOn = latch();
    const clientB = intercepted(client, async (method, params, forward) => {
      if (method === 'insert' && params.table === 'points_seals') {
        bRecords.open();
        await bGoesOn.promise;
      }
      return forward(params);
    });
    const a = createPointsStages(clientA)
      .seal(up.share, noRefill, fenceOf('A'))
      .then(
        () => 'sealed',
        (error: unknown) => String(error),
      );
    await aCounted.promise;
    owner = 'B';
    const b = createPointsStages(clientB).seal(up.share, noRefill, fenceOf('B'));
    await bRecords.promise;
    aGoesOn.open();
    expect(await a).toMatch(/A lost the partition/);
    bGoesOn.open();
    expect(await b).toEqual({ how: 'attached', refilled: false, points: 1_500 });
    expect(await number(`SELECT count() FROM points WHERE task_id = '${up.share.taskId}'`)).toBe(1_500);
    await expectSealed(up);
  });

  itOnServer(
    'queries side by side',
    'a catalog insert whose connection failed while the server runs on is waited for before the seal fails, so its retry adds nothing twice',
    async () => {
      const up = upload();
      await fill(await stages.open(up.share.taskId, up.share.attempt, 1), up.segments);
      let failed = false;
      let slowDone: Promise<unknown> = Promise.resolve();
      // The server is slow on the catalog's share (1 ms a row, played by sleepEachRow) and the client's connection drops after 200 ms.
      const flaky = intercepted(client, async (method, params, forward) => {
        if (failed || method !== 'command' || !params.query?.startsWith('INSERT INTO `metric_catalog`')) return forward(params);
        failed = true;
        const slowed = params.query.replace(/ FROM (\S+) GROUP BY/, ' FROM (SELECT * FROM $1 WHERE sleepEachRow(0.001) = 0) GROUP BY');
        slowDone = forward({ ...params, query: slowed }).catch(() => {});
        await new Promise((r) => setTimeout(r, 200));
        throw new Error('socket hang up');
      });
      await expect(createPointsStages(flaky).seal(up.share, noRefill)).rejects.toThrow(/socket hang up/);
      expect(failed).toBe(true);
      // The retry (as the projector's persist does) finds the share attached and completes what the catalog lacks.
      expect(await stages.seal(up.share, noRefill)).toEqual({ how: 'found attached', refilled: false, points: 0 });
      await slowDone;
      await expectSealed(up);
    },
  );

  itOnServer(
    'queries side by side',
    'a catalog repair (after a crash past the ATTACH) whose connection failed while the server runs on is waited for, so its retry adds nothing twice',
    async () => {
      const up = upload();
      await fill(await stages.open(up.share.taskId, up.share.attempt, 1), up.segments);
      await client.command({ query: `ALTER TABLE points ATTACH PARTITION tuple() FROM ${stages.tableOf(up.share.taskId, up.share.attempt, 1)}` });
      let failed = false;
      let slowDone: Promise<unknown> = Promise.resolve();
      // The server is slow on the repair (1 ms a missing point) and the client's connection drops after 200 ms.
      const flaky = intercepted(client, async (method, params, forward) => {
        if (
          failed ||
          method !== 'command' ||
          !params.query?.startsWith('INSERT INTO `metric_catalog` SELECT metric_name, countState() AS points, minState(first)')
        )
          return forward(params);
        failed = true;
        const slowed = params.query.replace(/ GROUP BY metric_name$/, ' WHERE sleepEachRow(0.001) = 0 GROUP BY metric_name');
        slowDone = forward({ ...params, query: slowed }).catch(() => {});
        await new Promise((r) => setTimeout(r, 200));
        throw new Error('socket hang up');
      });
      await expect(createPointsStages(flaky).seal(up.share, noRefill)).rejects.toThrow(/socket hang up/);
      expect(failed).toBe(true);
      expect(await stages.seal(up.share, noRefill)).toEqual({ how: 'found attached', refilled: false, points: 0 });
      await slowDone;
      await expectSealed(up);
    },
  );

  it('after a crash past the ATTACH of a refill that left out a bad batch, completes the seal without a second stage for a rest', async () => {
    const bad = upload();
    const kept = [bad.segments[0]!, bad.segments[2]!];
    const refillLeavingOut = async (sink: PointsSink) => {
      await sink.insert(kept);
      return { points: 500, batches: 1 };
    };
    const commands: string[] = [];
    let crashed = false;
    const crashing = intercepted(client, async (method, params, forward) => {
      if (method === 'command' && params.query !== undefined) commands.push(params.query);
      if (method === 'insert' && params.table === 'points_seals' && !crashed) {
        crashed = true;
        throw new Error('killed before recording the seal');
      }
      return forward(params);
    });
    const sealing = createPointsStages(crashing);
    await expect(sealing.seal(bad.share, refillLeavingOut)).rejects.toThrow(/killed before recording/);
    expect(await sealing.seal(bad.share, refillLeavingOut)).toEqual({ how: 'found attached', refilled: true, points: 0 });
    // Only the final drop (of a rest that was never made): the stage holds exactly what points got of it.
    expect(commands.filter((q) => q.includes('_rest'))).toEqual([`DROP TABLE IF EXISTS ${sealing.tableOf(bad.share.taskId, bad.share.attempt, 1)}_rest`]);
    await expectSealed({ share: bad.share, segments: kept });
  });

  itOnServer(
    'KILL QUERY, queries side by side',
    'kills an insert into the stage that still runs on the server past the wait, and refills the stage',
    async () => {
      const up = upload();
      const stage = stages.tableOf(up.share.taskId, up.share.attempt, 1);
      await fill(await stages.open(up.share.taskId, up.share.attempt, 1), up.segments);
      // A stage insert hung on the server (a writer gave it up): it writes a row a second, for two minutes.
      const hung = `points-insert:${stage}:${randomUUID()}`;
      const running = client
        .command({
          query: `INSERT INTO ${stage} (metric_name, kafka_partition) SELECT 's.z', 1 FROM numbers(120) WHERE sleepEachRow(1) = 0 SETTINGS max_block_size = 1`,
          query_id: hung,
        })
        .then(
          () => 'done',
          (error: unknown) => String(error),
        );
      try {
        while ((await number(`SELECT count() FROM system.processes WHERE query_id = '${hung}'`)) === 0) await new Promise((r) => setTimeout(r, 50));
        const waiting = createPointsStages(client, LIVE_STAGE_TARGETS, { insertWaitMs: 1_000 });
        expect(await waiting.seal(up.share, (sink) => fill(sink, up.segments))).toEqual({ how: 'attached', refilled: true, points: 1_500 });
        expect(await running).not.toBe('done');
        expect(await number(`SELECT count() FROM system.processes WHERE query_id = '${hung}'`)).toBe(0);
        expect(await number(`SELECT count() FROM points WHERE task_id = '${up.share.taskId}'`)).toBe(1_500);
        await expectSealed(up);
      } finally {
        await client.command({ query: `KILL QUERY WHERE query_id = '${hung}' SYNC` });
      }
    },
    60_000,
  );
});
