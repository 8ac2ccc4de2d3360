import { loadSettings } from '@meridian/config';
import { MAX_METRIC_NAME_LENGTH, metricNameProblem, type LogRecord, type LogTransaction, type PointsFact } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { partitionFor } from '@meridian/kafka';
import { describe, expect, it } from 'vitest';
import { PointBatchSender } from './batch-sender.ts';

/**
 * A transaction whose requests the test acknowledges (or fails) one by one; an acknowledgement
 * gives each partition of the request the next offsets of that partition, as the broker does.
 */
function manualTx() {
  const requests: Array<{ records: readonly LogRecord[]; record: LogRecord; ack: () => void; fail: (e: Error) => void }> = [];
  const next = new Map<string, number>();
  const tx: Pick<LogTransaction, 'sendAll'> = {
    sendAll: (records) =>
      new Promise((resolve, reject) => {
        requests.push({
          records,
          record: records[0]!,
          ack: () =>
            resolve(
              records.flatMap(({ topic, messages }) => {
                const counts = new Map<number, number>();
                for (const m of messages) counts.set(m.partition ?? 0, (counts.get(m.partition ?? 0) ?? 0) + 1);
                return [...counts].map(([partition, n]) => {
                  const baseOffset = next.get(`${topic}/${partition}`) ?? 100 * partition;
                  next.set(`${topic}/${partition}`, baseOffset + n);
                  return { topic, partition, baseOffset: String(baseOffset) };
                });
              }),
            ),
          fail: reject,
        });
      }),
  };
  return { tx, requests, keys: (i: number) => requests[i]!.record.messages.map((m) => m.key) };
}

const tick = () => new Promise((r) => setImmediate(r));
const PARTITIONS = 3;
/** Metric names by the partition partitionFor gives them. */
const keysOf = (partition: number, n: number) =>
  Array.from({ length: 1000 }, (_, i) => `m${i}`)
    .filter((k) => partitionFor(k, PARTITIONS) === partition)
    .slice(0, n);
const [a0, b0, c0] = keysOf(0, 3) as [string, string, string];
const [a1] = keysOf(1, 1) as [string];
/** A batch value that, with its key and framing, takes `bytes` of a partition's bound. */
const sized = (key: string, bytes: number) => Buffer.alloc(bytes - key.length - 40);

describe('PointBatchSender', () => {
  it('groups batches into one request until one more would take a partition past the bound', async () => {
    const { tx, requests, keys } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 1000, maxBytesPerRequest: 100_000 });
    await sender.send(a0, sized(a0, 400), 1);
    await sender.send(a1, sized(a1, 900), 1); // another partition: its own bound
    await sender.send(b0, sized(b0, 600), 1); // partition 0 at 1000: still fits
    expect(requests).toHaveLength(0);
    await sender.send(c0, Buffer.from('x'), 1); // partition 0 would pass 1000: the group goes
    expect(requests).toHaveLength(1);
    expect(keys(0)).toEqual([a0, a1, b0]);
    expect(requests[0]!.record.messages.map((m) => m.partition)).toEqual([0, 1, 0]);
    requests[0]!.ack();
    const flushed = sender.flush();
    await tick();
    expect(keys(1)).toEqual([c0]);
    requests[1]!.ack();
    await flushed;
  });

  it('also ends a group at the bound of the whole request, whatever the partitions', async () => {
    const { tx, requests, keys } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 1000, maxBytesPerRequest: 1500 });
    await sender.send(a0, sized(a0, 700), 1);
    await sender.send(a1, sized(a1, 700), 1); // 1400 in all
    expect(requests).toHaveLength(0);
    await sender.send(b0, sized(b0, 200), 1); // partition 0 at 900 but the request at 1600: the group goes
    expect(keys(0)).toEqual([a0, a1]);
    requests[0]!.ack();
    const flushed = sender.flush();
    await tick();
    requests[1]!.ack();
    await flushed;
    expect(keys(1)).toEqual([b0]);
  });

  it('sends a batch larger than the bound alone', async () => {
    const { tx, requests, keys } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 1000, maxBytesPerRequest: 100_000 });
    await sender.send(a0, sized(a0, 100), 1);
    await sender.send(b0, sized(b0, 5000), 1);
    requests[0]!.ack();
    await sender.send(c0, sized(c0, 100), 1);
    requests[1]!.ack();
    const flushed = sender.flush();
    await tick();
    requests[2]!.ack();
    await flushed;
    expect([keys(0), keys(1), keys(2)]).toEqual([[a0], [b0], [c0]]);
  });

  it('keeps one request in flight: the next group goes only once the last is acknowledged', async () => {
    const { tx, requests, keys } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 100, maxBytesPerRequest: 100_000 });
    await sender.send(a0, sized(a0, 100), 1);
    await sender.send(b0, sized(b0, 100), 1); // the first group goes; nothing was in flight
    expect(requests).toHaveLength(1);
    let returned = false;
    const third = sender.send(c0, sized(c0, 100), 1).then(() => (returned = true));
    await tick();
    expect(requests).toHaveLength(1);
    expect(returned).toBe(false);
    requests[0]!.ack();
    await third;
    expect(keys(1)).toEqual([b0]);
  });

  it("counts each partition's points and batches, and each batch's offset from its request's acknowledgement", async () => {
    const { tx, requests } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 1000, maxBytesPerRequest: 100_000 });
    await sender.send(a0, sized(a0, 300), 10);
    await sender.send(a1, sized(a1, 300), 5);
    await sender.send(b0, sized(b0, 300), 20);
    await sender.send(c0, sized(c0, 600), 7); // past partition 0's bound: the first three go
    requests[0]!.ack(); // partition 0 from offset 0 (two batches), partition 1 from 100
    const flushed = sender.flush();
    await tick();
    requests[1]!.ack(); // partition 0 at offset 2
    await flushed;
    expect(sender.shares).toEqual(
      new Map([
        [0, { points: 37, batches: 3, firstOffset: 0, lastOffset: 2 }],
        [1, { points: 5, batches: 1, firstOffset: 100, lastOffset: 100 }],
      ]),
    );
  });

  it("sends the tail in the last group's request, after the group in each partition, and counts what was queued before any acknowledgement", async () => {
    const { tx, requests } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 1000, maxBytesPerRequest: 100_000 });
    await sender.send(a0, sized(a0, 300), 10);
    await sender.send(a1, sized(a1, 300), 5);
    expect(requests).toHaveLength(0);
    expect(sender.counts).toEqual(
      new Map([
        [0, { points: 10, batches: 1 }],
        [1, { points: 5, batches: 1 }],
      ]),
    );
    const seal = { key: 'task', value: Buffer.from('seal'), partition: 0 };
    const parsed = { key: 'task', value: Buffer.from('parsed') };
    const flushed = sender.flush([
      { topic: 'points', messages: [seal] },
      { topic: 'tasks', messages: [parsed] },
    ]);
    await tick();
    expect(requests).toHaveLength(1); // one request for both topics
    expect(requests[0]!.records.map((r) => [r.topic, r.messages.map((m) => m.key)])).toEqual([
      ['points', [a0, a1, 'task']],
      ['tasks', ['task']],
    ]);
    requests[0]!.ack();
    await flushed;
    // The seal after partition 0's batch does not move the batch's offset; the tasks topic's acknowledgement is not the points'.
    expect(sender.shares).toEqual(
      new Map([
        [0, { points: 10, batches: 1, firstOffset: 0, lastOffset: 0 }],
        [1, { points: 5, batches: 1, firstOffset: 100, lastOffset: 100 }],
      ]),
    );
  });

  it('sends a tail alone when nothing is queued', async () => {
    const { tx, requests } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 1000, maxBytesPerRequest: 100_000 });
    const flushed = sender.flush([{ topic: 'tasks', messages: [{ key: 'task', value: Buffer.from('parsed') }] }]);
    await tick();
    expect(requests.map((r) => r.records.map((x) => x.topic))).toEqual([['tasks']]);
    requests[0]!.ack();
    await flushed;
    expect(sender.shares.size).toBe(0);
  });

  it('fails on an acknowledgement that lacks a partition it was sent', async () => {
    const tx: Pick<LogTransaction, 'sendAll'> = { sendAll: async () => [{ topic: 'points', partition: 2, baseOffset: '0' }] };
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 1000, maxBytesPerRequest: 100_000 });
    await sender.send(a0, Buffer.from('x'), 1);
    await expect(sender.flush()).rejects.toThrow('no offset for partition 0');
  });

  it('throws a failed request from the next group or flush, and does not leave it unhandled', async () => {
    const { tx, requests } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 100, maxBytesPerRequest: 100_000 });
    await sender.send(a0, sized(a0, 100), 1);
    await sender.send(b0, sized(b0, 100), 1);
    requests[0]!.fail(new Error('broker gone'));
    await tick(); // an unhandled rejection here would fail the test run
    await expect(sender.send(c0, sized(c0, 100), 1)).rejects.toThrow('broker gone');
    await expect(sender.flush()).rejects.toThrow('broker gone');
    expect(requests).toHaveLength(1);
  });

  it('discard drops the queued group unsent and waits for the request in flight, failed or not', async () => {
    const { tx, requests } = manualTx();
    const sender = new PointBatchSender(tx, { topic: 'points', partitions: PARTITIONS, maxBytesPerPartition: 100, maxBytesPerRequest: 100_000 });
    await sender.send(a0, sized(a0, 100), 1);
    await sender.send(b0, sized(b0, 100), 1); // the first group is in flight, the second queued
    expect(requests).toHaveLength(1);
    let discarded = false;
    const discarding = sender.discard().then(() => {
      discarded = true;
    });
    await tick();
    expect(discarded).toBe(false); // the request in flight has not ended
    requests[0]!.fail(new Error('broker gone'));
    await discarding;
    await sender.flush();
    expect(requests).toHaveLength(1); // the queued group was never sent
  });
});

describe('the bound on a point batch (settings: MERIDIAN_POINT_BATCH_SIZE × 18 bytes + 4 KiB)', () => {
  it('holds for the largest batch the default settings allow, at the longest timestamps and name', () => {
    const longest = -(2 ** 52); // the longest long avsc writes (8 bytes; Avro's own limit is 10)
    const settings = loadSettings({ MERIDIAN_POINT_BATCH_SIZE: String(Math.floor((loadSettings({}).MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION - 4096) / 18)) });
    const points = settings.MERIDIAN_POINT_BATCH_SIZE;
    const name = '😀'.repeat(MAX_METRIC_NAME_LENGTH); // the longest name: 256 characters of 4 UTF-8 bytes each
    expect(metricNameProblem(name)).toBeNull();
    const value = createEventCodec<PointsFact>().encode({
      type: 'PointBatch',
      task_id: '00000000-0000-0000-0000-000000000000',
      metric_name: name,
      updated_at: longest,
      timestamps: Array.from({ length: points }, () => longest),
      values: Array.from({ length: points }, () => Math.PI),
    });
    expect(Buffer.byteLength(name) + value.length + 40).toBeLessThanOrEqual(settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION);
  });
});
