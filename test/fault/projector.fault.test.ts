import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PointBatch, PointsFact, UploadSegmentProjected } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { createProducer } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { startProjector, type RunningProjector } from '../../apps/ingest/src/projector/index.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

const UPLOADS = 100;
const METRICS_PER_UPLOAD = 5;
const POINTS_PER_BATCH = 2_000;
const POINTS_PER_UPLOAD = METRICS_PER_UPLOAD * POINTS_PER_BATCH; // 10,000
const TOTAL = UPLOADS * POINTS_PER_UPLOAD; // 1,000,000
const KILLS = 4;

describe(`projector killed with SIGKILL ${KILLS} times while projecting ${TOTAL.toLocaleString('en')} points (the real ingest process)`, () => {
  // Many small inserts, so kills land between and inside inserts; a short session so a
  // restarted process gets the partitions of its killed predecessor quickly.
  const settings = isolatedSettings({ MERIDIAN_PROJECTOR_BATCH_ROWS: '20000', KAFKA_SESSION_TIMEOUT_MS: '6000' });
  const platform = createPlatform(settings, createLogger({ name: 'projector-fault', level: settings.LOG_LEVEL }), 'projector-fault');
  const pointsCodec = createEventCodec<PointsFact>();
  const taskCodec = createEventCodec<UploadSegmentProjected>();
  const sealed = new Set<string>();
  const announced = new Set<string>();
  const processes: AppProcess[] = [];
  let follower: Consumer | null = null;

  async function scalar(query: string): Promise<number> {
    const rows = await (await platform.clickhouse.query({ query, format: 'JSONEachRow' })).json<Record<string, string>>();
    return Number(Object.values(rows[0]!)[0]);
  }
  const count = () => scalar('SELECT count() FROM points');

  beforeAll(async () => {
    await platform.prepare();
    // 100 uploads x 10,000 points, each in its own transaction: 5 batches of 2,000 points
    // (metrics spread over the points partitions by key), then one seal per touched partition.
    // Within an upload every (ts, value) is unique, so exactly-once is count() = uniqExact.
    const tx = createProducer(platform.kafka, { transactionalId: `${settings.MERIDIAN_TOPIC_PREFIX}fault-uploads` });
    await tx.connect();
    for (let u = 0; u < UPLOADS; u++) {
      const task_id = `task-${String(u).padStart(3, '0')}`;
      const t = await tx.transaction();
      const touched = new Map<number, number>();
      for (let m = 0; m < METRICS_PER_UPLOAD; m++) {
        const metric_name = `fault.metric.${(u * 3 + m) % 12}`;
        const batch: PointBatch = {
          type: 'PointBatch',
          task_id,
          metric_name,
          updated_at: 1_700_000_000_000 + u,
          timestamps: Array.from({ length: POINTS_PER_BATCH }, (_, i) => 1_600_000_000_000 + m * 1_000_000 + i * 1000),
          values: Array.from({ length: POINTS_PER_BATCH }, (_, i) => u * 1e6 + m * 1e4 + i + 0.25),
        };
        const [meta] = await t.send({ topic: platform.topics.points, acks: -1, messages: [{ key: metric_name, value: pointsCodec.encode(batch) }] });
        touched.set(meta!.partition, (touched.get(meta!.partition) ?? 0) + POINTS_PER_BATCH);
      }
      for (const [partition, points] of touched) {
        await t.send({
          topic: platform.topics.points,
          acks: -1,
          messages: [{ partition, key: task_id, value: pointsCodec.encode({ type: 'UploadSealed', task_id, points }) }],
        });
        sealed.add(`${task_id}/${partition}`);
      }
      await t.commit();
    }
    await tx.disconnect();

    follower = platform.kafka.consumer({ groupId: `${settings.MERIDIAN_TOPIC_PREFIX}fault-follow`, maxWaitTimeInMs: 100 });
    await follower.connect();
    await follower.subscribe({ topic: platform.topics.tasks, fromBeginning: true });
    await follower.run({
      eachMessage: async ({ message }) => {
        const e = taskCodec.decode(message.value!);
        if (e.type === 'UploadSegmentProjected') announced.add(`${e.task_id}/${e.partition}`);
      },
    });
  });

  afterAll(async () => {
    await Promise.allSettled(processes.map((p) => p.stop('SIGKILL')));
    await follower?.disconnect();
    await platform.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` });
    await platform.close();
  });

  it('ends with every point exactly once, and every sealed segment announced', async () => {
    const started = Date.now();
    const killedAt: number[] = [];
    for (let k = 0; k < KILLS; k++) {
      const proc = startApp('ingest', settings);
      processes.push(proc);
      const before = await count();
      // Kill at a random moment once this process is writing: between inserts or inside one.
      await waitFor(`process ${k + 1} to write rows`, async () => ((await count()) > before ? true : undefined), 60_000, 20);
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 120)));
      await proc.stop('SIGKILL');
      killedAt.push(await count());
    }
    expect(killedAt.at(-1), 'the last kill came before the projection was complete').toBeLessThan(TOTAL);

    const last = startApp('ingest', settings);
    processes.push(last);
    try {
      await waitFor('every row', async () => ((await count()) >= TOTAL ? true : undefined), 90_000, 200);
      await waitFor('every sealed segment announced', () => ([...sealed].every((s) => announced.has(s)) ? true : undefined), 30_000, 100);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nlast process output:\n${last.output().slice(-4000)}`);
    }
    // Settle: nothing more may arrive (a late duplicate would show here).
    await new Promise((r) => setTimeout(r, 1000));

    expect(await count()).toBe(TOTAL);
    expect(await scalar('SELECT uniqExact(task_id, ts, value) FROM points')).toBe(TOTAL);
    expect(await scalar('SELECT uniqExact(kafka_partition, kafka_offset, row_in_batch) FROM points')).toBe(TOTAL);
    const perTask = await (
      await platform.clickhouse.query({ query: 'SELECT task_id, count() AS n FROM points GROUP BY task_id ORDER BY task_id', format: 'JSONEachRow' })
    ).json<{ task_id: string; n: string }>();
    expect(perTask).toHaveLength(UPLOADS);
    expect(perTask.every((r) => Number(r.n) === POINTS_PER_UPLOAD)).toBe(true);
    expect(await scalar('SELECT countMerge(points) FROM metric_catalog')).toBe(TOTAL);
    expect([...sealed].filter((s) => !announced.has(s))).toEqual([]);
    expect(await last.stop('SIGTERM')).toBe(0);
    console.log(
      `projector fault test: ${KILLS} SIGKILLs at ${killedAt.join(', ')} rows; ${TOTAL} rows exactly once after ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  });
});

describe('projector handing partitions over in rebalances (a second member joins, then the first leaves)', () => {
  const settings = isolatedSettings({ MERIDIAN_PROJECTOR_BATCH_ROWS: '10000', KAFKA_SESSION_TIMEOUT_MS: '6000' });
  const platforms: Platform[] = [];
  const member = () => {
    const p = createPlatform(settings, createLogger({ name: 'projector-rebalance', level: settings.LOG_LEVEL }), 'projector-rebalance');
    platforms.push(p);
    return p;
  };
  const platform = member();
  const running: RunningProjector[] = [];
  const uploads = 40;
  const total = uploads * POINTS_PER_UPLOAD;
  const count = async () =>
    Number((await (await platform.clickhouse.query({ query: 'SELECT count() AS n FROM points', format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n);

  afterAll(async () => {
    await Promise.allSettled(running.map((r) => r.stop()));
    await platform.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` });
    await Promise.allSettled(platforms.map((p) => p.close()));
  });

  it('writes every point exactly once across the handovers', async () => {
    await platform.prepare();
    const codec = createEventCodec<PointsFact>();
    const tx = createProducer(platform.kafka, { transactionalId: `${settings.MERIDIAN_TOPIC_PREFIX}rebalance-uploads` });
    await tx.connect();
    let next = 0;
    /** Writes `n` more uploads, each in its transaction, sealed. */
    const produce = async (n: number) => {
      for (const end = next + n; next < end; next++) {
        const u = next;
        const task_id = `task-${u}`;
        const t = await tx.transaction();
        const touched = new Set<number>();
        for (let m = 0; m < METRICS_PER_UPLOAD; m++) {
          const metric_name = `rebalance.metric.${(u + m) % 9}`;
          const timestamps = Array.from({ length: POINTS_PER_BATCH }, (_, i) => m * 1_000_000 + i);
          const [meta] = await t.send({
            topic: platform.topics.points,
            acks: -1,
            messages: [
              {
                key: metric_name,
                value: codec.encode({ type: 'PointBatch', task_id, metric_name, updated_at: u, timestamps, values: timestamps.map((ts) => ts + u / 8) }),
              },
            ],
          });
          touched.add(meta!.partition);
        }
        for (const partition of touched)
          await t.send({
            topic: platform.topics.points,
            acks: -1,
            messages: [{ partition, key: task_id, value: codec.encode({ type: 'UploadSealed', task_id, points: 0 }) }],
          });
        await t.commit();
      }
    };
    const rowsBeyond = (n: number, what: string) => waitFor(what, async () => ((await count()) > n ? true : undefined), 60_000, 10);

    await produce(uploads / 4);
    const first = await startProjector(platform);
    running.push(first);
    await rowsBeyond(0, 'the first member to write');
    // A second member joins while uploads keep coming: the group rebalances and splits the partitions.
    const joining = startProjector(member());
    await produce(uploads / 4);
    const second = await joining;
    running.push(second);
    await produce(uploads / 4);
    await rowsBeyond((uploads / 2) * POINTS_PER_UPLOAD, 'rows of the uploads written after the join');
    // The first member leaves while uploads keep coming: the second takes every partition.
    const leaving = first.stop();
    await produce(uploads / 4);
    await leaving;
    running.splice(running.indexOf(first), 1);
    await tx.disconnect();
    await waitFor('every row', async () => ((await count()) >= total ? true : undefined), 90_000, 100);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await count()).toBe(total);
    const unique = await (
      await platform.clickhouse.query({
        query: 'SELECT uniqExact(task_id, ts, value) AS a, uniqExact(kafka_partition, kafka_offset, row_in_batch) AS b FROM points',
        format: 'JSONEachRow',
      })
    ).json<{ a: string; b: string }>();
    expect(unique[0]).toEqual({ a: String(total), b: String(total) });
  });
});
