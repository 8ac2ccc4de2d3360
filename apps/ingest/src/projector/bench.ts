import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pino } from 'pino';
import { loadSettings } from '@meridian/config';
import { ensureDatabase, migrate } from '@meridian/clickhouse';
import type { PointBatch, PointsFact } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { createProducer } from '@meridian/kafka';
import { createPlatform } from '@meridian/platform';
import { encodePointsBlock, INSERT_POINTS_SQL, type Segment } from './rows.ts';
import { startProjector } from './projector.ts';

/**
 * Measures the projector alone: writes POINTS points to a fresh points topic (uploads of
 * 100k points, 10 metrics x 10k-point batches, transactional and sealed, as the command
 * handler does), then times the projector from start until ClickHouse holds every row.
 * For comparison, inserts the same rows straight into ClickHouse as one TabSeparated body
 * and as one Native block. Uses its own topics and database, removed at the end.
 *
 *   node apps/ingest/src/projector/bench.ts            # endpoints from the environment or defaults
 *   BENCH_POINTS=2000000 MERIDIAN_PROJECTOR_BATCH_ROWS=500000 node apps/ingest/src/projector/bench.ts
 */
const POINTS = Number(process.env.BENCH_POINTS ?? 2_000_000);
const PER_BATCH = 10_000;
const METRICS = 10;

const scope = `bench${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const settings = loadSettings({ ...process.env, MERIDIAN_TOPIC_PREFIX: `${scope}.`, CLICKHOUSE_DATABASE: scope, LOG_LEVEL: 'info' });
const insertLines: Array<{ rows: number; insert_ms: number }> = [];
const logger = pino({ level: 'info' }, new Writable({
  write(chunk: Buffer, _enc, done) {
    const line = JSON.parse(chunk.toString()) as { msg?: string; rows?: number; insert_ms?: number; level?: number };
    if (line.msg === 'points inserted') insertLines.push({ rows: line.rows!, insert_ms: line.insert_ms! });
    else if ((line.level ?? 0) >= 40) process.stderr.write(chunk);
    done();
  },
}));
const platform = createPlatform(settings, logger, 'bench');
const codec = createEventCodec<PointsFact>();
const seconds = (ms: number) => (ms / 1000).toFixed(2);
const rate = (rows: number, ms: number) => `${Math.round((rows * 1000) / ms).toLocaleString('en')} rows/s`;

async function count(): Promise<number> {
  const rows = await (await platform.clickhouse.query({ query: 'SELECT count() AS n FROM points', format: 'JSONEachRow' })).json<{ n: string }>();
  return Number(rows[0]!.n);
}

async function main(): Promise<void> {
  await platform.prepareTopics();
  await ensureDatabase(platform.clickhouseOptions);
  await migrate(platform.clickhouse);

  // The fixture, kept to insert the same rows straight afterwards.
  const segments: Segment[] = [];
  const tx = createProducer(platform.kafka, { transactionalId: `${scope}.bench` });
  await tx.connect();
  let t0 = performance.now();
  for (let u = 0, written = 0; written < POINTS; u++) {
    const task_id = `task-${u}`;
    const t = await tx.transaction();
    const touched = new Map<number, number>();
    for (let m = 0; m < METRICS && written < POINTS; m++) {
      const n = Math.min(PER_BATCH, POINTS - written);
      const batch: PointBatch = {
        type: 'PointBatch', task_id, metric_name: `bench.metric.${m}`, updated_at: 1_700_000_000_000 + u,
        timestamps: Array.from({ length: n }, (_, i) => 1_600_000_000_000 + u * 1_000_000 + i * 10),
        values: Array.from({ length: n }, (_, i) => Math.sin(u * 7 + i) * 1000),
      };
      const [meta] = await t.send({ topic: platform.topics.points, acks: -1, messages: [{ key: batch.metric_name, value: codec.encode(batch) }] });
      segments.push({ batch, partition: meta!.partition, offset: Number(meta!.baseOffset) });
      touched.set(meta!.partition, (touched.get(meta!.partition) ?? 0) + n);
      written += n;
    }
    for (const [partition, points] of touched) {
      await t.send({ topic: platform.topics.points, acks: -1, messages: [{ partition, key: task_id, value: codec.encode({ type: 'UploadSealed', task_id, points }) }] });
    }
    await t.commit();
  }
  await tx.disconnect();
  process.stdout.write(`produced ${POINTS.toLocaleString('en')} points in ${segments.length} batches: ${seconds(performance.now() - t0)} s\n`);

  t0 = performance.now();
  const projector = await startProjector(platform);
  let firstRow = 0;
  for (;;) {
    const n = await count();
    if (n > 0 && firstRow === 0) firstRow = performance.now();
    if (n >= POINTS) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const done = performance.now();
  await projector.stop();
  const insertMs = insertLines.reduce((a, l) => a + l.insert_ms, 0);
  const insertRows = insertLines.reduce((a, l) => a + l.rows, 0);
  process.stdout.write(
    `projector (batch rows ${settings.MERIDIAN_PROJECTOR_BATCH_ROWS}): ${seconds(done - t0)} s from start incl. group join, ${rate(POINTS, done - t0)}; ` +
      `${seconds(done - firstRow)} s from the first row visible; inserts: ${rate(insertRows, insertMs)} over ${seconds(insertMs)} s in ClickHouse\n`,
  );
  if ((await count()) !== POINTS) throw new Error(`expected ${POINTS} rows, found ${await count()}`);

  // The same rows straight into ClickHouse, one body each.
  for (const format of ['TabSeparated', 'Native'] as const) {
    await platform.clickhouse.command({ query: 'TRUNCATE TABLE points' });
    const built = performance.now();
    const body = format === 'Native' ? encodePointsBlock(segments) : Buffer.from(tsv(segments));
    const sent = performance.now();
    const query = format === 'Native' ? INSERT_POINTS_SQL : INSERT_POINTS_SQL.replace('Native', 'TabSeparated');
    const result = await platform.clickhouse.exec({ query, values: Readable.from([body]) });
    for await (const _ of result.stream) { /* drain */ }
    const end = performance.now();
    if ((await count()) !== POINTS) throw new Error(`straight ${format} insert: expected ${POINTS} rows`);
    process.stdout.write(
      `straight ${format} insert of the same rows (${(body.length / 1e6).toFixed(0)} MB): build ${seconds(sent - built)} s, insert ${seconds(end - sent)} s = ${rate(POINTS, end - sent)} (${rate(POINTS, end - built)} with the build)\n`,
    );
  }
}

function tsv(segments: readonly Segment[]): string {
  const parts: string[] = [];
  for (const s of segments) {
    const { batch } = s;
    const tail = `\t${batch.updated_at}\t${batch.task_id}\t${s.partition}\t${s.offset}\t`;
    for (let i = 0; i < batch.timestamps.length; i++) parts.push(`${batch.metric_name}\t${batch.timestamps[i]}\t${batch.values[i]}${tail}${i}\n`);
  }
  return parts.join('');
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await platform.clickhouse.command({ query: `DROP DATABASE IF EXISTS ${scope}` }).catch(() => {});
    await platform.admin.deleteTopics({ topics: Object.values(platform.topics) }).catch(() => {});
    await platform.close();
  });
