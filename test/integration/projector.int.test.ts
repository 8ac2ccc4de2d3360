import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import type { Consumer, IHeaders, Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProjector, type RunningProjector } from '../../apps/ingest/src/projector/index.ts';
import { createPointsSink, encodePointsBlock, INSERT_POINTS_SQL } from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { STAGE_HEADER, type PointBatch, type PointsFact, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { createProducer } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/** A row of `points` as the test expects it; 64-bit integers as strings, as ClickHouse's JSON gives them. */
type Row = {
  metric_name: string;
  ts: string;
  value: number;
  updated_at: string;
  task_id: string;
  kafka_partition: number;
  kafka_offset: string;
  row_in_batch: number;
};
type Upload = { task_id: string; batches: Array<{ metric: string; points: Array<[number, number]> }> };

const pointsCodec = createEventCodec<PointsFact>();
const unpackedCodec = createEventCodec<PointsFact>(undefined, { writePacked: false });
const taskCodec = createEventCodec<TaskEvent>();

describe('projector: points topic → ClickHouse, exactly once', () => {
  // Small inserts, so one test crosses insert boundaries inside and between uploads.
  const settings = isolatedSettings({ MERIDIAN_PROJECTOR_BATCH_ROWS: '7', KAFKA_SESSION_TIMEOUT_MS: '6000' });
  const logger = createLogger({ name: 'projector-int', level: settings.LOG_LEVEL });
  const platform: Platform = createPlatform(settings, logger, 'projector-int');
  const groupId = `${settings.MERIDIAN_TOPIC_PREFIX}ingest-projector`;
  const tx: Producer = createProducer(platform.kafka, { transactionalId: `${settings.MERIDIAN_TOPIC_PREFIX}test-uploads` });
  const expected: Row[] = [];
  const sealed = new Set<string>();
  const announced: Array<{ task_id: string; partition: number }> = [];
  const failedTasks: Array<{ task_id: string; reason: string }> = [];
  const deadLetters: Array<{ headers: Record<string, string>; value: Buffer | null }> = [];
  const followers: Consumer[] = [];
  let projector: RunningProjector | null = null;

  /** Writes one upload as the command handler does: its batches and one seal per touched partition, in one transaction. */
  async function upload(u: Upload, outcome: 'commit' | 'abort' = 'commit'): Promise<Set<number>> {
    const t = await tx.transaction();
    const updated_at = 1_700_000_000_000 + expected.length;
    const rows: Row[] = [];
    const partitions = new Map<number, number>();
    for (const b of u.batches) {
      const batch: PointBatch = {
        type: 'PointBatch',
        task_id: u.task_id,
        metric_name: b.metric,
        updated_at,
        timestamps: b.points.map(([ts]) => ts),
        values: b.points.map(([, v]) => v),
      };
      const [meta] = await t.send({ topic: platform.topics.points, acks: -1, messages: [{ key: b.metric, value: pointsCodec.encode(batch) }] });
      const partition = meta!.partition;
      const offset = String(meta!.baseOffset);
      partitions.set(partition, (partitions.get(partition) ?? 0) + b.points.length);
      b.points.forEach(([ts, value], i) =>
        rows.push({
          metric_name: b.metric,
          ts: String(ts),
          value,
          updated_at: String(updated_at),
          task_id: u.task_id,
          kafka_partition: partition,
          kafka_offset: offset,
          row_in_batch: i,
        }),
      );
    }
    for (const [partition, points] of partitions) {
      await t.send({
        topic: platform.topics.points,
        acks: -1,
        messages: [{ partition, key: u.task_id, value: pointsCodec.encode({ type: 'UploadSealed', task_id: u.task_id, points }) }],
      });
    }
    if (outcome === 'abort') {
      await t.abort();
    } else {
      await t.commit();
      expected.push(...rows);
      for (const p of partitions.keys()) sealed.add(`${u.task_id}/${p}`);
    }
    return new Set(partitions.keys());
  }

  async function follow(topic: string, onMessage: (value: Buffer | null, headers: IHeaders | undefined) => void): Promise<void> {
    const consumer = platform.kafka.consumer({ groupId: `${settings.MERIDIAN_TOPIC_PREFIX}test-follow-${randomUUID()}`, maxWaitTimeInMs: 100 });
    followers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => onMessage(message.value, message.headers) });
  }

  async function storedRows(): Promise<Row[]> {
    const result = await platform.clickhouse.query({
      query: 'SELECT metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch FROM points',
      format: 'JSONEachRow',
    });
    return sortRows(await result.json<Row>());
  }

  /** The metric catalog as catalogOf computes it from rows. */
  async function storedCatalog(): Promise<ReturnType<typeof catalogOf>> {
    const result = await platform.clickhouse.query({
      query:
        'SELECT metric_name, toString(countMerge(points)) AS points, toString(minMerge(first_ts)) AS first_ts, toString(maxMerge(last_ts)) AS last_ts FROM metric_catalog GROUP BY metric_name ORDER BY metric_name',
      format: 'JSONEachRow',
    });
    return result.json();
  }

  async function scalar(query: string): Promise<number> {
    const rows = await (await platform.clickhouse.query({ query, format: 'JSONEachRow' })).json<Record<string, string>>();
    return Number(Object.values(rows[0]!)[0]);
  }

  const announcedKeys = () => announced.map((a) => `${a.task_id}/${a.partition}`);

  beforeAll(async () => {
    await platform.prepare();
    await tx.connect();
    await follow(platform.topics.tasks, (value) => {
      const e = taskCodec.decode(value!);
      if (e.type === 'UploadSegmentProjected') announced.push({ task_id: e.task_id, partition: e.partition });
      if (e.type === 'TaskFailed') failedTasks.push({ task_id: e.task_id, reason: e.reason });
    });
    await follow(platform.topics.deadLetter, (value, headers) => {
      deadLetters.push({ value, headers: Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k, String(v)])) });
    });
  });

  afterAll(async () => {
    await projector?.stop();
    await Promise.allSettled([...followers.map((c) => c.disconnect()), tx.disconnect()]);
    await platform.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` });
    await platform.close();
  });

  it('projects committed uploads exactly (duplicates kept), announces each sealed segment once, dead-letters garbage', async () => {
    const metrics = ['cpu:load', 'mem.used', 'disk io', 'net/rx', 'température', 'queue_depth'];
    // upload 1: every metric, some in several batches; duplicate timestamps (and whole duplicate points) kept
    const touched = await upload({
      task_id: 'task-1',
      batches: [
        ...metrics.map((metric, m) => ({
          metric,
          points: [
            [1_000 + m, 0.5],
            [1_000 + m, 0.5],
            [2_000, -1.25],
            [3_000, 1e-300],
            [3_000, 0.1 + 0.2],
          ] as Array<[number, number]>,
        })),
        {
          metric: 'cpu:load',
          points: [
            [4_000, 7],
            [4_000, 8],
            [5_000, 9],
            [6_000, 10],
            [7_000, 11],
            [8_000, 12],
            [9_000, 13],
            [10_000, 14],
            [11_000, 15],
          ],
        },
      ],
    });
    expect(touched.size, 'the fixture spans several points partitions').toBeGreaterThan(1);
    // an aborted transaction: none of it may ever appear
    await upload({ task_id: 'task-aborted', batches: metrics.map((metric) => ({ metric, points: [[99_999, 666]] })) }, 'abort');
    // garbage, and a well-formed event of the wrong type, in a partition the next upload writes to
    const garbagePartition = [...touched][0]!;
    const plain = await platform.producer();
    await plain.send({ topic: platform.topics.points, acks: -1, messages: [{ partition: garbagePartition, value: randomBytes(48) }] });
    await plain.send({
      topic: platform.topics.points,
      acks: -1,
      messages: [{ partition: garbagePartition, value: taskCodec.encode({ type: 'UploadSegmentProjected', task_id: 'x', partition: 0, at: 1 }) }],
    });
    // a point batch that cannot be stored (two timestamps, one value): dead-lettered, and its task fails.
    // Written as v4: v5's encoder refuses columns of different lengths, an older release's did not.
    await plain.send({
      topic: platform.topics.points,
      acks: -1,
      messages: [
        {
          partition: garbagePartition,
          value: unpackedCodec.encode({ type: 'PointBatch', task_id: 'task-poison', metric_name: 'cpu:load', updated_at: 1, timestamps: [1, 2], values: [1] }),
        },
      ],
    });
    // upload 2, after the garbage
    await upload({
      task_id: 'task-2',
      batches: metrics.map((metric, m) => ({
        metric,
        points: [
          [-5_000, m],
          [1_700_000_000_000 + m, -m - 0.5],
          [1_700_000_000_000 + m, -m - 0.5],
        ],
      })),
    });

    projector = await startProjector(platform);
    await waitFor(
      'the committed rows in ClickHouse',
      async () => ((await scalar('SELECT count() FROM points')) >= expected.length ? true : undefined),
      45_000,
      200,
    );
    await waitFor(
      'every sealed segment announced',
      () => (sealed.size > 0 && [...sealed].every((k) => announcedKeys().includes(k)) ? true : undefined),
      20_000,
      100,
    );

    expect(await storedRows()).toEqual(sortRows(expected));
    expect(await scalar(`SELECT count() FROM points WHERE task_id = 'task-aborted'`)).toBe(0);
    expect([...announcedKeys()].sort()).toEqual([...sealed].sort()); // one announcement per (task, partition)

    await waitFor('three dead letters', () => (deadLetters.length >= 3 ? true : undefined), 10_000, 100);
    expect(deadLetters).toHaveLength(3);
    for (const d of deadLetters) {
      expect(d.headers.source_topic).toBe(platform.topics.points);
      expect(Number(d.headers.source_partition)).toBe(garbagePartition);
      expect(Number(d.headers.source_offset)).toBeGreaterThanOrEqual(0);
      expect(d.headers.reason).toBeTruthy();
    }
    expect(deadLetters.map((d) => d.headers.reason).join('\n')).toMatch(/unexpected event type UploadSegmentProjected/);
    await waitFor('the poisoned upload failed', () => (failedTasks.length > 0 ? true : undefined), 10_000, 100);
    expect(failedTasks).toEqual([{ task_id: 'task-poison', reason: expect.stringMatching(/could not be stored: PointBatch has 2 timestamps but 1 values/) }]);

    // the catalog counts every point, per metric, exactly
    const catalog = await storedCatalog();
    expect(catalog).toEqual(catalogOf(expected));
  });

  it('resumes from the sink, not from Kafka: with the committed offsets deleted, nothing is written twice', async () => {
    await waitFor(
      'committed offsets of the projector',
      async () => {
        const offsets = await platform.admin.fetchOffsets({ groupId, topics: [platform.topics.points] });
        return offsets[0]!.partitions.some((p) => Number(p.offset) > 0) ? true : undefined;
      },
      10_000,
      100,
    );
    await projector!.stop();
    projector = null;
    await platform.admin.deleteGroups([groupId]);
    const after = await platform.admin.fetchOffsets({ groupId, topics: [platform.topics.points] });
    expect(after[0]!.partitions.every((p) => p.offset === '-1')).toBe(true);

    const before = announced.length;
    projector = await startProjector(platform);
    // a new upload after the restart shows when the restarted projector has read everything
    await upload({
      task_id: 'task-3',
      batches: [
        {
          metric: 'cpu:load',
          points: [
            [12_000, 1],
            [12_000, 1],
          ],
        },
        { metric: 'net/rx', points: [[12_000, 2]] },
      ],
    });
    await waitFor(
      'the upload after the restart',
      async () => ((await scalar(`SELECT count() FROM points WHERE task_id = 'task-3'`)) === 3 ? true : undefined),
      45_000,
      200,
    );
    await waitFor('its segments announced', () => ([...sealed].every((k) => announcedKeys().includes(k)) ? true : undefined), 20_000, 100);

    expect(await storedRows()).toEqual(sortRows(expected));
    expect(await scalar('SELECT count() - uniqExact(kafka_partition, kafka_offset, row_in_batch) FROM points')).toBe(0);
    expect(new Set(announcedKeys())).toEqual(sealed); // old seals may be announced again: harmless, never new ones
    expect(announced.length).toBeGreaterThan(before);
    expect(deadLetters).toHaveLength(3); // garbage below the sink position is not dead-lettered again
    expect(failedTasks).toHaveLength(1); // nor its task failed again
    const catalogTotal = await scalar('SELECT countMerge(points) FROM metric_catalog');
    expect(catalogTotal).toBe(expected.length);
  });

  it('completes the metric catalog on taking over partitions whose last insert stored its points without the catalog share', async () => {
    await projector!.stop();
    projector = null;
    // A previous owner's last insert: its points stored, the catalog's share lost ("while pushing
    // to view"), and the owner killed before repairing it. The view is detached while the points go in.
    await upload({
      task_id: 'task-4',
      batches: [
        {
          metric: 'cpu:load',
          points: [
            [13_000, 1],
            [14_000, 2],
            [13_500, 3],
          ],
        },
      ],
    });
    const lost = expected.filter((r) => r.task_id === 'task-4');
    const segments: Segment[] = [...new Set(lost.map((r) => `${r.kafka_partition}/${r.kafka_offset}`))].map((key) => {
      const rows = lost.filter((r) => `${r.kafka_partition}/${r.kafka_offset}` === key);
      const { task_id, metric_name, updated_at, kafka_partition, kafka_offset } = rows[0]!;
      return {
        partition: kafka_partition,
        offset: Number(kafka_offset),
        batch: {
          type: 'PointBatch',
          task_id,
          metric_name,
          updated_at: Number(updated_at),
          timestamps: rows.map((r) => Number(r.ts)),
          values: rows.map((r) => r.value),
        },
      };
    });
    // The view that feeds the catalog: metric_catalog itself on 18.16 (a view with an inner table);
    // metric_catalog_feed (TO metric_catalog) on Atomic databases (migration 002's modern form).
    const feed =
      (await scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'metric_catalog_feed'")) === 1
        ? 'metric_catalog_feed'
        : 'metric_catalog';
    await platform.clickhouse.command({ query: `DETACH TABLE ${feed}` });
    try {
      await createPointsSink(platform.clickhouse).insert(segments);
    } finally {
      await platform.clickhouse.command({ query: `ATTACH TABLE ${feed}` });
    }
    expect(await scalar('SELECT countMerge(points) FROM metric_catalog')).toBe(expected.length - lost.length);

    projector = await startProjector(platform);
    await waitFor(
      'the catalog completed',
      async () => ((await scalar('SELECT countMerge(points) FROM metric_catalog')) >= expected.length ? true : undefined),
      45_000,
      200,
    );
    await waitFor('the seals of task-4 announced', () => ([...sealed].every((k) => announcedKeys().includes(k)) ? true : undefined), 20_000, 100);
    expect(await storedRows()).toEqual(sortRows(expected)); // the stored batches were skipped, not written again
    const catalog = await storedCatalog();
    expect(catalog).toEqual(catalogOf(expected));
  });

  /**
   * A staged upload as its job writes it: batches with their attempt in the
   * `stage` field and the meridian-stage header, one seal naming its share. Nobody writes the
   * stage here: the projector refills it from the log (the log is the truth), skipping another
   * upload's batch committed inside the staged upload's range, flushes the direct rows before
   * the seal, attaches, records the seal and announces it. A stage the job did write is used as
   * it is (its rows differ from the log's on purpose here, to show which went in).
   */
  it('seals staged uploads: a missing stage refilled from the log, a written one attached; each once, the catalog exact', async () => {
    const stages = platform.pointsStages;
    const partition = 1;
    const direct = createProducer(platform.kafka, { transactionalId: `${settings.MERIDIAN_TOPIC_PREFIX}test-direct` });
    await direct.connect();
    try {
      const staged = async (
        taskId: string,
        attempt: string,
        batches: Array<{ metric: string; points: Array<[number, number]> }>,
        hooks: { between?: () => Promise<void>; beforeCommit?: (segments: Segment[]) => Promise<void> } = {},
      ) => {
        const t = await tx.transaction();
        const updated_at = 1_710_000_000_000 + expected.length;
        const segments: Segment[] = [];
        for (const [i, b] of batches.entries()) {
          const batch: PointBatch = {
            type: 'PointBatch',
            task_id: taskId,
            metric_name: b.metric,
            updated_at,
            timestamps: b.points.map(([ts]) => ts),
            values: b.points.map(([, v]) => v),
            stage: attempt,
          };
          const [meta] = await t.send({
            topic: platform.topics.points,
            acks: -1,
            messages: [{ partition, key: b.metric, value: pointsCodec.encode(batch), headers: { [STAGE_HEADER]: attempt } }],
          });
          segments.push({ partition, offset: Number(meta!.baseOffset), batch });
          if (i === 0) await hooks.between?.();
        }
        const points = batches.reduce((n, b) => n + b.points.length, 0);
        const seal: PointsFact = {
          type: 'UploadSealed',
          task_id: taskId,
          points,
          stage: { attempt, first_offset: segments[0]!.offset, batches: segments.length },
        };
        await t.send({ topic: platform.topics.points, acks: -1, messages: [{ partition, key: taskId, value: pointsCodec.encode(seal) }] });
        await hooks.beforeCommit?.(segments);
        await t.commit();
        sealed.add(`${taskId}/${partition}`);
        return segments;
      };
      const rowsOf = (segments: Segment[]): Row[] =>
        segments.flatMap((s) =>
          s.batch.timestamps.map((ts, i) => ({
            metric_name: s.batch.metric_name,
            ts: String(ts),
            value: s.batch.values[i]!,
            updated_at: String(s.batch.updated_at),
            task_id: s.batch.task_id,
            kafka_partition: partition,
            kafka_offset: String(s.offset),
            row_in_batch: i,
          })),
        );

      // 1. No stage: refilled from the log. Another upload's batch (direct) is committed inside its range.
      let directRows: Row[] = [];
      const refilled = await staged(
        'task-s1',
        '5151515151515151',
        [
          {
            metric: 'staged.a',
            points: [
              [1, 1],
              [2, 2],
              [2, 2],
            ],
          },
          { metric: 'staged.b', points: [[3, 3]] },
          {
            metric: 'staged.a',
            points: [
              [4, 4],
              [5, 5],
            ],
          },
        ],
        {
          between: async () => {
            const t = await direct.transaction();
            const batch: PointBatch = {
              type: 'PointBatch',
              task_id: 'task-d1',
              metric_name: 'staged.a',
              updated_at: 7,
              timestamps: [9, 10],
              values: [0.5, 0.25],
            };
            const [meta] = await t.send({
              topic: platform.topics.points,
              acks: -1,
              messages: [{ partition, key: 'staged.a', value: pointsCodec.encode(batch) }],
            });
            await t.send({
              topic: platform.topics.points,
              acks: -1,
              messages: [{ partition, key: 'task-d1', value: pointsCodec.encode({ type: 'UploadSealed', task_id: 'task-d1', points: 2 }) }],
            });
            await t.commit();
            sealed.add(`task-d1/${partition}`);
            directRows = rowsOf([{ partition, offset: Number(meta!.baseOffset), batch }]);
          },
        },
      );
      expected.push(...directRows, ...rowsOf(refilled));
      await waitFor(
        'the staged upload sealed',
        async () => ((await scalar(`SELECT count() FROM points WHERE task_id = 'task-s1'`)) === 6 ? true : undefined),
        45_000,
        200,
      );

      // 2. A stage written by the job while its transaction is open (here by hand, its values
      // shifted): attached as it is.
      const attempt = '7272727272727272';
      let asStaged: Segment[] = [];
      await staged(
        'task-s2',
        attempt,
        [
          {
            metric: 'staged.c',
            points: [
              [6, 6],
              [7, 7],
            ],
          },
        ],
        {
          beforeCommit: async (segments) => {
            asStaged = segments.map((s) => ({ ...s, batch: { ...s.batch, values: s.batch.values.map((v) => v + 1000) } }));
            await (await stages.open('task-s2', attempt, partition)).insert(asStaged);
          },
        },
      );
      expected.push(...rowsOf(asStaged));
      await waitFor(
        'the written stage sealed',
        async () => ((await scalar(`SELECT count() FROM points WHERE task_id = 'task-s2'`)) === 2 ? true : undefined),
        45_000,
        200,
      );
      await waitFor('every sealed segment announced', () => ([...sealed].every((k) => announcedKeys().includes(k)) ? true : undefined), 20_000, 100);

      expect(await storedRows()).toEqual(sortRows(expected));
      expect(await storedCatalog()).toEqual(catalogOf(expected));
      expect(await scalar(`SELECT count() FROM points_seals WHERE kafka_partition = ${partition} AND task_id IN ('task-s1', 'task-s2')`)).toBe(2);
      expect(await scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'points_stage_')")).toBe(0);
      expect(failedTasks).toHaveLength(1);

      // Restarted from the sink (its position now a seal's): nothing is sealed or written twice.
      await projector!.stop();
      await platform.admin.deleteGroups([groupId]);
      projector = await startProjector(platform);
      await upload({ task_id: 'task-5', batches: [{ metric: 'staged.a', points: [[20, 1]] }] });
      await waitFor(
        'the upload after the restart',
        async () => ((await scalar(`SELECT count() FROM points WHERE task_id = 'task-5'`)) === 1 ? true : undefined),
        45_000,
        200,
      );
      expect(await storedRows()).toEqual(sortRows(expected));
      expect(await scalar(`SELECT count() FROM points_seals WHERE task_id IN ('task-s1', 'task-s2')`)).toBe(2);
    } finally {
      await direct.disconnect();
    }
  });

  /**
   * A seal is several queries, some long: if the projector's consumer is rebalanced away while
   * one runs (kafkajs then gives the partition to another member once its rebalance timeout is
   * over), the seal must not write any more: the new owner seals the share, and ATTACH FROM
   * copies, so two owners would store it twice. Here the seal is held until the rebalance a
   * second member's join starts: the fence the projector gave it then throws, the held seal
   * attaches nothing, and after the rebalance the share is sealed once.
   */
  it("a seal whose consumer is rebalanced meanwhile writes nothing; the partition's owner after the rebalance seals it once", async () => {
    await projector!.stop();
    projector = null;
    const taskId = 'task-rebalanced';
    const real = platform.pointsStages;
    let sealing = () => {};
    const sealingStarted = new Promise<void>((r) => (sealing = r));
    let fenced = false;
    const held: typeof real = {
      ...real,
      async seal(share, refill, fence) {
        if (share.taskId === taskId && !fenced) {
          sealing();
          // Held (a long refill, a wait for inserts) until this member may no longer own the partition.
          for (const until = Date.now() + 30_000; Date.now() < until && !fenced; await new Promise((r) => setTimeout(r, 100))) {
            try {
              fence?.();
            } catch {
              fenced = true;
            }
          }
        }
        return real.seal(share, refill, fence);
      },
    };
    const first = await startProjector({ ...platform, pointsStages: held });
    const partition = 2;
    const attempt = '9a9a9a9a9a9a9a9a';
    const t = await tx.transaction();
    const batch: PointBatch = {
      type: 'PointBatch',
      task_id: taskId,
      metric_name: 'staged.r',
      updated_at: 1_720_000_000_000,
      timestamps: [1, 2, 3],
      values: [1, 2, 3],
      stage: attempt,
    };
    const [meta] = await t.send({
      topic: platform.topics.points,
      acks: -1,
      messages: [{ partition, key: 'staged.r', value: pointsCodec.encode(batch), headers: { [STAGE_HEADER]: attempt } }],
    });
    await t.send({
      topic: platform.topics.points,
      acks: -1,
      messages: [
        {
          partition,
          key: taskId,
          value: pointsCodec.encode({
            type: 'UploadSealed',
            task_id: taskId,
            points: 3,
            stage: { attempt, first_offset: Number(meta!.baseOffset), batches: 1 },
          }),
        },
      ],
    });
    await t.commit();
    sealed.add(`${taskId}/${partition}`);
    expected.push(
      ...batch.timestamps.map((ts, i): Row => ({
        metric_name: 'staged.r',
        ts: String(ts),
        value: batch.values[i]!,
        updated_at: String(batch.updated_at),
        task_id: taskId,
        kafka_partition: partition,
        kafka_offset: String(meta!.baseOffset),
        row_in_batch: i,
      })),
    );
    await sealingStarted;
    const second = await startProjector(platform);
    try {
      await waitFor(
        'the share sealed after the rebalance',
        async () => ((await scalar(`SELECT count() FROM points_seals WHERE task_id = '${taskId}'`)) === 1 ? true : undefined),
        60_000,
        200,
      );
      expect(fenced).toBe(true);
      expect(await scalar(`SELECT count() FROM points WHERE task_id = '${taskId}'`)).toBe(3);
      await waitFor('its seal announced', () => (announcedKeys().includes(`${taskId}/${partition}`) ? true : undefined), 20_000, 100);
      expect(await storedRows()).toEqual(sortRows(expected));
      expect(await storedCatalog()).toEqual(catalogOf(expected));
      expect(await scalar(`SELECT count() FROM points_seals WHERE task_id = '${taskId}'`)).toBe(1);
    } finally {
      await first.stop();
      projector = second;
    }
  }, 120_000);

  /**
   * A fetch hands the projector one batch per partition, and an upload seals its share in each
   * partition it wrote to. The seals wait for the fetch's last batch (patches/kafkajs marks it),
   * so the fetch's rows go in one insert: one part, where a flush at each seal made one per
   * partition.
   */
  it("writes the rows of every partition of one fetch in one insert, and announces each partition's seal", async () => {
    await projector?.stop();
    projector = null;
    const inserted = () => scalar(`SELECT max(max_block_number) FROM system.parts WHERE database = '${settings.CLICKHOUSE_DATABASE}' AND table = 'points'`);
    const before = await inserted();
    const metrics = ['cpu:load', 'mem.used', 'disk io', 'net/rx', 'température', 'queue_depth'];
    // Six rows, within the seven of an insert here, written while no projector runs: one fetch takes them all.
    const partitions = await upload({ task_id: 'task-one-fetch', batches: metrics.map((metric, m) => ({ metric, points: [[30_000 + m, m]] })) });
    expect(partitions.size).toBeGreaterThan(1);

    projector = await startProjector(platform);
    const keys = [...partitions].map((p) => `task-one-fetch/${p}`);
    await waitFor('its seals announced', () => (keys.every((k) => announcedKeys().includes(k)) ? true : undefined), 30_000, 100);
    expect(await storedRows()).toEqual(sortRows(expected));
    expect(await storedCatalog()).toEqual(catalogOf(expected));
    expect((await inserted()) - before).toBe(1);
  }, 60_000);

  /** MERIDIAN_PROJECTOR_FETCH_WAIT_MS: the broker holds a fetch for more records; what is projected, and how, is the same. */
  it('with a fetch wait, projects exactly and announces each seal once', async () => {
    await projector?.stop();
    projector = null;
    projector = await startProjector({ ...platform, options: { ...platform.options, projector: { ...platform.options.projector, fetchWaitMs: 300 } } });
    const partitions = await upload({
      task_id: 'task-fetch-wait',
      batches: [
        {
          metric: 'waited.metric',
          points: [
            [40_000, 1],
            [40_001, 2],
          ],
        },
      ],
    });
    const keys = [...partitions].map((p) => `task-fetch-wait/${p}`);
    await waitFor('its seals announced', () => (keys.every((k) => announcedKeys().includes(k)) ? true : undefined), 30_000, 100);
    expect(await storedRows()).toEqual(sortRows(expected));
    expect(await storedCatalog()).toEqual(catalogOf(expected));
    expect(announcedKeys().filter((k) => keys.includes(k))).toHaveLength(keys.length);
  }, 60_000);
});

describe('projector sink: one insert is all or nothing, even when the client dies while sending it', () => {
  const settings = isolatedSettings();
  const platform = createPlatform(settings, createLogger({ name: 'sink-int', level: settings.LOG_LEVEL }), 'sink-int');
  const sink = createPointsSink(platform.clickhouse);
  const segments: Segment[] = [0, 1, 2].map((partition) => ({
    partition,
    offset: 10 + partition,
    batch: {
      type: 'PointBatch',
      task_id: `cut-${partition}`,
      metric_name: `m${partition}`,
      updated_at: 5,
      timestamps: Array.from({ length: 3000 }, (_, i) => i),
      values: Array.from({ length: 3000 }, (_, i) => i / 7),
    },
  }));
  const count = async () =>
    Number((await (await platform.clickhouse.query({ query: 'SELECT count() AS n FROM points', format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n);

  beforeAll(async () => {
    await ensureDb(platform);
  });
  afterAll(async () => {
    await platform.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` });
    await platform.close();
  });

  /** Sends the INSERT with the whole body announced but only `cut` bytes of it, then drops the connection (a killed client). */
  async function sendCut(body: Buffer, cut: number): Promise<void> {
    const url = new URL(settings.CLICKHOUSE_URL);
    const queryId = randomUUID();
    const path = `/?database=${settings.CLICKHOUSE_DATABASE}&query_id=${queryId}&query=${encodeURIComponent(INSERT_POINTS_SQL)}`;
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(`POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Length: ${body.length}\r\n\r\n`);
        socket.write(body.subarray(0, cut), () =>
          setTimeout(() => {
            socket.destroy();
            resolve();
          }, 50),
        );
      });
      socket.on('error', reject);
    });
    await waitFor(
      'the cut insert to end on the server',
      async () => {
        const rows = await (
          await platform.clickhouse.query({ query: `SELECT count() AS n FROM system.processes WHERE query_id = '${queryId}'`, format: 'JSONEachRow' })
        ).json<{ n: string }>();
        return Number(rows[0]!.n) === 0 ? true : undefined;
      },
      10_000,
      50,
    );
  }

  it('writes nothing from a body cut anywhere, and every row from a whole one', async () => {
    const body = encodePointsBlock(segments);
    // cuts: inside the header, inside the first column, at a row boundary of the last column, one byte short
    for (const cut of [3, 40, 5000, body.length - 4 * 1500, body.length - 4, body.length - 1]) await sendCut(body, cut);
    expect(await count()).toBe(0);
    await sink.insert(segments);
    expect(await count()).toBe(9000);
    expect(await sink.maxOffsets([0, 1, 2, 3])).toEqual(
      new Map([
        [0, 10],
        [1, 11],
        [2, 12],
        [3, -1],
      ]),
    );
  });
});

async function ensureDb(platform: Platform): Promise<void> {
  const { ensureDatabase, migrate } = await import('@meridian/clickhouse');
  await ensureDatabase(platform.clickhouseOptions);
  await migrate(platform.clickhouse);
}

function sortRows(rows: Row[]): Row[] {
  const norm = rows.map((r) => ({
    ...r,
    kafka_partition: Number(r.kafka_partition),
    row_in_batch: Number(r.row_in_batch),
    kafka_offset: String(r.kafka_offset),
    ts: String(r.ts),
    updated_at: String(r.updated_at),
  }));
  return norm.sort((a, b) => a.kafka_partition - b.kafka_partition || Number(a.kafka_offset) - Number(b.kafka_offset) || a.row_in_batch - b.row_in_batch);
}

function catalogOf(rows: Row[]): Array<{ metric_name: string; points: string; first_ts: string; last_ts: string }> {
  const by = new Map<string, { n: number; min: bigint; max: bigint }>();
  for (const r of rows) {
    const ts = BigInt(r.ts);
    const c = by.get(r.metric_name);
    if (!c) by.set(r.metric_name, { n: 1, min: ts, max: ts });
    else by.set(r.metric_name, { n: c.n + 1, min: ts < c.min ? ts : c.min, max: ts > c.max ? ts : c.max });
  }
  return [...by]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([metric_name, c]) => ({ metric_name, points: String(c.n), first_ts: String(c.min), last_ts: String(c.max) }));
}
