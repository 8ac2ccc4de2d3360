import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RangeMessage } from '@meridian/domain';
import {
  archiveChains,
  archiveLag,
  archivePass,
  ArchivedLog,
  archivePrefix,
  createProducer,
  readArchiveStatus,
  trimPass,
  type ArchiveObjects,
} from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { archiveObjects } from '@meridian/platform';
import { createPlatform, type Platform } from '../support/platform.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The points topic's archive against the real Kafka and MinIO: a pass that dies between a
 * segment's object and its index entry, passes after it, reading archive and brokers as one
 * history, and the trim that removes from the brokers only what is archived, projected and old.
 */
const settings = isolatedSettings({ KAFKA_POINTS_PARTITIONS: '2' });
const logger = createLogger({ name: 'archive', level: 'silent' });
let platform: Platform;
let objects: ArchiveObjects;
const topic = () => platform.topics.points;
const projectorGroup = () => platform.groups.projector;

/**
 * Records written in transactions, every third one aborted: the archive must hold the committed
 * ones only. Returned once the last transaction's marker is in the log: an end is answered before
 * its marker is written, and a read to the last stable offset at once could stop short of it.
 */
async function write(partition: number, from: number, count: number): Promise<string[]> {
  const producer = createProducer(platform.kafka, { transactionalId: `${settings.MERIDIAN_TOPIC_PREFIX}int-archive-${partition}-${from}` });
  await producer.connect();
  const committed: string[] = [];
  let last = -1;
  try {
    for (let i = from; i < from + count; i++) {
      const tx = await producer.transaction();
      const value = `p${partition}-r${i}-${'x'.repeat(200)}`;
      const [meta] = await tx.send({ topic: topic(), acks: -1, messages: [{ key: `k${i}`, value, partition, headers: { n: String(i) } }] });
      last = Number(meta!.baseOffset);
      if (i % 3 === 2) await tx.abort();
      else {
        await tx.commit();
        committed.push(value);
      }
    }
  } finally {
    await producer.disconnect();
  }
  // The marker follows the last record: the log is stable once its end passes both.
  const stable = async () => ((await platform.log.offsets(topic())).end.get(partition)! >= last + 2 ? true : undefined);
  await waitFor('the written transactions to be stable', stable, 10_000, 20);
  return committed;
}

const pass = (extra: Partial<Parameters<typeof archivePass>[0]> = {}) =>
  archivePass({
    log: platform.log,
    objects,
    topic: topic(),
    groupPrefix: `${settings.MERIDIAN_TOPIC_PREFIX}int-archive-pass-`,
    segmentBytes: 2048,
    tailAgeMs: 0,
    logger,
    ...extra,
  });

/** Every record of [0, end) of each partition, read through `log`. */
async function readAll(log: Pick<ArchivedLog, 'readRanges' | 'offsets'>, sequential: boolean): Promise<Map<number, RangeMessage[]>> {
  const { low, end } = await log.offsets(topic());
  const ranges = [...end].map(([partition, hi]) => ({ topic: topic(), partition, start: low.get(partition)!, end: hi }));
  const out = new Map<number, RangeMessage[]>();
  for await (const batch of log.readRanges(ranges, { groupId: `${settings.MERIDIAN_TOPIC_PREFIX}int-read`, sequential })) {
    out.set(batch.partition, [...(out.get(batch.partition) ?? []), ...batch.messages]);
  }
  return out;
}

const values = (records: readonly RangeMessage[] | undefined) => (records ?? []).map((r) => r.value!.toString());

beforeAll(async () => {
  platform = createPlatform(settings, logger, 'int-archive');
  await platform.prepare();
  objects = archiveObjects(platform.blobs);
}, 120_000);

afterAll(async () => {
  await platform?.close();
});

describe('the points archive', () => {
  const written = new Map<number, string[]>();

  it('a pass that dies between a segment and its index entry leaves nothing the archive counts; the next writes each record once', async () => {
    written.set(0, await write(0, 0, 30));
    written.set(1, await write(1, 0, 12));
    await expect(
      pass({
        beforeIndex: () => Promise.reject(new Error('killed between the object and its entry')),
      }),
    ).rejects.toThrow('killed between');
    // The object is there, no entry names it: the archive is still empty.
    expect((await objects.list(`${archivePrefix(topic())}segments/`)).length).toBe(1);
    expect((await archiveChains(objects, topic())).size).toBe(0);

    // More records arrive before the next pass: its first segment starts where the dead one did, with another end.
    written.set(0, [...written.get(0)!, ...(await write(0, 30, 9))]);
    const done = await pass();
    const { end } = await platform.log.offsets(topic());
    expect(done.ends).toEqual(end);
    expect(done.records).toBe(written.get(0)!.length + written.get(1)!.length);
    expect(done.segments).toBeGreaterThan(2);
    // The dead pass's object is gone: every object has its entry.
    const segments = await objects.list(`${archivePrefix(topic())}segments/`);
    const entries = await objects.list(`${archivePrefix(topic())}index/`);
    expect(segments.map((k) => k.replace('/segments/', '/index/').replace(/\.zst$/, '.json')).sort()).toEqual([...entries].sort());
    // A pass with nothing new writes nothing.
    expect((await pass()).segments).toBe(0);

    // Archive alone (the brokers still hold everything, the archive covers it all), in both read modes.
    const archived = new ArchivedLog(platform.log, objects, [topic()]);
    for (const sequential of [true, false]) {
      const read = await readAll(archived, sequential);
      expect(values(read.get(0))).toEqual(written.get(0));
      expect(values(read.get(1))).toEqual(written.get(1));
    }
    // A few new records, less than a segment: cut only once the first of them is tailAgeMs old.
    written.set(1, [...written.get(1)!, ...(await write(1, 100, 3))]);
    expect((await pass({ tailAgeMs: 3_600_000 })).segments).toBe(0);
    expect((await pass({ tailAgeMs: 3_600_000, now: () => Date.now() + 3_600_000 })).segments).toBe(1);
    // Byte for byte what the brokers give: offsets, keys, headers, timestamps.
    const live = await readAll(platform.log, false);
    const again = await readAll(archived, false);
    for (const p of [0, 1]) {
      expect(again.get(p)!.map((r) => [r.offset, r.timestamp, r.key?.toString(), r.headers?.n?.toString()])).toEqual(
        live.get(p)!.map((r) => [r.offset, r.timestamp, r.key?.toString(), r.headers?.n?.toString()]),
      );
    }
  });

  it("reports the archive's lag per partition: the offsets not archived yet and the age of the oldest record among them", async () => {
    const lag = (now: number) => archiveLag(platform.log, objects, topic(), now);
    await pass();
    const t = Date.now();
    expect(await lag(t)).toEqual([
      { partition: 0, offsets: 0, oldestUnarchivedAgeMs: 0 },
      { partition: 1, offsets: 0, oldestUnarchivedAgeMs: 0 },
    ]);
    // New records after the pass (three transactions, one aborted: six offsets with their markers), not read by any pass yet: aged from the pass.
    const archivedEnd = (await platform.log.offsets(topic())).end.get(0)!;
    written.set(0, [...written.get(0)!, ...(await write(0, 200, 3))]);
    const status = (await readArchiveStatus(objects, topic()))!;
    expect((await lag(status.at + 5000))?.[0]).toEqual({ partition: 0, offsets: 6, oldestUnarchivedAgeMs: 5000 });
    // A pass reads them and leaves them (a tail younger than an hour): aged from the first one's timestamp.
    expect((await pass({ tailAgeMs: 3_600_000 })).segments).toBe(0);
    const first = (await readAll(platform.log, false)).get(0)!.find((r) => Number(r.offset) >= archivedEnd)!;
    expect(await lag(Number(first.timestamp) + 7000)).toEqual([
      { partition: 0, offsets: 6, oldestUnarchivedAgeMs: 7000 },
      { partition: 1, offsets: 0, oldestUnarchivedAgeMs: 0 },
    ]);
    // Archived: no lag again.
    await pass();
    expect((await lag(Date.now()))?.[0]).toEqual({ partition: 0, offsets: 0, oldestUnarchivedAgeMs: 0 });
  });

  it('a pass hands the tail it left to the next, which reads only the new records, and the segment is the log byte for byte', async () => {
    await pass();
    // Three transactions, one aborted, twice: two committed records each time.
    written.set(1, [...written.get(1)!, ...(await write(1, 300, 3))]);
    const first = await pass({ tailAgeMs: 3_600_000 });
    expect([first.segments, first.read, [...first.tails.keys()]]).toEqual([0, 2, [1]]);
    written.set(1, [...written.get(1)!, ...(await write(1, 303, 3))]);
    const second = await pass({ tailAgeMs: 3_600_000, tails: first.tails });
    expect([second.segments, second.read, second.tails.get(1)?.records.length]).toEqual([0, 2, 4]);
    // A tail the archive no longer ends at (another pass archived it meanwhile) is not used: read again.
    const elsewhere = await pass({ tailAgeMs: 3_600_000, tails: new Map([[1, { ...second.tails.get(1)!, first: 0 }]]) });
    expect(elsewhere.read).toBe(4);
    // Old enough: cut with nothing read.
    const third = await pass({ tailAgeMs: 3_600_000, tails: second.tails, now: () => Date.now() + 3_600_000 });
    expect([third.segments, third.read, third.tails.size]).toEqual([1, 0, 0]);
    const { end } = await platform.log.offsets(topic());
    expect(third.ends.get(1)).toBe(end.get(1));
    const live = await readAll(platform.log, false);
    const again = await readAll(new ArchivedLog(platform.log, objects, [topic()]), false);
    const shape = (records: RangeMessage[]) => records.map((r) => [r.offset, r.timestamp, r.key?.toString(), r.value?.toString()]);
    expect(shape(again.get(1)!)).toEqual(shape(live.get(1)!));
    expect(values(again.get(1))).toEqual(written.get(1));
  });

  it("lists only the index keys written since the chain ends it kept; another archiver's segments are still found", async () => {
    // The port as the archive sees it, counting the listings of the index a pass builds its chains from.
    const listings: { prefix: string; startAfter: string | undefined; keys: number }[] = [];
    const counted: ArchiveObjects = {
      ...objects,
      async list(prefix, startAfter) {
        const keys = await objects.list(prefix, startAfter);
        if (/\/index\/(\d+\/)?$/.test(prefix)) listings.push({ prefix: prefix.replace(archivePrefix(topic()), ''), startAfter, keys: keys.length });
        return keys;
      },
    };
    const counting = async (extra: Partial<Parameters<typeof archivePass>[0]> = {}) => {
      listings.length = 0;
      const done = await pass({ objects: counted, ...extra });
      return { done, listings: [...listings], keys: listings.reduce((n, l) => n + l.keys, 0) };
    };
    const indexKeys = async () => (await objects.list(`${archivePrefix(topic())}index/`)).length;
    const logEnd = async () => (await platform.log.offsets(topic())).end;

    // Without kept ends: the whole index, once.
    const start = await counting();
    expect(start.listings).toEqual([{ prefix: 'index/', startAfter: undefined, keys: await indexKeys() }]);
    expect(start.keys).toBeGreaterThan(5);

    // Several segments later, the next pass lists one key range per partition after its kept end,
    // and gets back none: its own segments it knows, nothing else was written.
    written.set(0, [...written.get(0)!, ...(await write(0, 400, 30))]);
    const own = await counting({ chainEnds: start.done.chainEnds });
    expect(own.done.segments).toBeGreaterThan(2);
    expect(own.listings.map((l) => [l.prefix, l.startAfter !== undefined, l.keys])).toEqual([
      ['index/0/', true, 0],
      ['index/1/', true, 0],
    ]);

    // Another archiver (no kept ends) archives what came next: this one's next pass finds its
    // segments among the keys after its ends, exactly those, and archives nothing again.
    written.set(0, [...written.get(0)!, ...(await write(0, 430, 30))]);
    const other = await pass();
    expect(other.segments).toBeGreaterThan(2);
    const after = await counting({ chainEnds: own.done.chainEnds });
    expect([after.keys, after.done.segments, after.done.read]).toEqual([other.segments, 0, 0]);
    expect(after.done.ends).toEqual(await logEnd());

    // Kept ends that are stale (from two passes before) still continue into what was written since.
    const stale = await counting({ chainEnds: start.done.chainEnds });
    expect([stale.keys, stale.done.segments, stale.done.ends]).toEqual([own.done.segments + other.segments, 0, await logEnd()]);

    // A kept end the index does not continue from (it names no segment the chain takes): its partition is listed whole again.
    const wrong = await counting({ chainEnds: new Map([...after.done.chainEnds, [0, { partition: 0, first: 0, end: 1 }]]) });
    expect(wrong.listings.map((l) => [l.prefix, l.startAfter !== undefined])).toEqual([
      ['index/0/', true],
      ['index/0/', false],
      ['index/1/', true],
    ]);
    expect([wrong.done.segments, wrong.done.ends]).toEqual([0, await logEnd()]);
    expect(wrong.done.chainEnds).toEqual(after.done.chainEnds);

    // The archive and the brokers still read as one history.
    const again = await readAll(new ArchivedLog(platform.log, objects, [topic()]), false);
    expect(values(again.get(0))).toEqual(written.get(0));
    expect(values(again.get(1))).toEqual(written.get(1));
  });

  it('trims only below what is archived, projected and older than the retention; replay reads across the cut', async () => {
    const { end } = await platform.log.offsets(topic());
    // The projector has committed half of partition 0 and all of partition 1.
    const half = Math.floor(end.get(0)! / 2);
    await platform.admin.setOffsets({
      groupId: projectorGroup(),
      topic: topic(),
      partitions: [
        { partition: 0, offset: String(half) },
        { partition: 1, offset: String(end.get(1)!) },
      ],
    });
    const trim = (retentionMs: number, now = Date.now()) =>
      trimPass({ log: platform.log, objects, topic: topic(), projectorGroup: projectorGroup(), retentionMs, logger, now: () => now });

    // Nothing is older than an hour: nothing moves.
    expect(await trim(3_600_000)).toEqual(
      new Map([
        [0, 0],
        [1, 0],
      ]),
    );
    // Records newer than the archive's end stay (partition 1 gets more, not archived yet).
    written.set(1, [...written.get(1)!, ...(await write(1, 12, 6))]);
    await platform.admin.setOffsets({
      groupId: projectorGroup(),
      topic: topic(),
      partitions: [{ partition: 1, offset: String((await platform.log.offsets(topic())).end.get(1)!) }],
    });
    const low = await trim(1, Date.now() + 60_000);
    expect(low.get(0)).toBe(half);
    expect(low.get(1)).toBe(end.get(1));
    const brokers = await platform.log.offsets(topic());
    expect(brokers.low).toEqual(low);

    // The brokers alone no longer have the start; archive + brokers still read the whole history once.
    const archived = new ArchivedLog(platform.log, objects, [topic()]);
    expect((await archived.offsets(topic())).low).toEqual(
      new Map([
        [0, 0],
        [1, 0],
      ]),
    );
    for (const sequential of [true, false]) {
      const read = await readAll(archived, sequential);
      expect(values(read.get(0))).toEqual(written.get(0));
      expect(values(read.get(1))).toEqual(written.get(1));
    }
    // A time before every record lies in the archive now.
    expect((await archived.offsetsAtTime(topic(), 0)).get(0)).toBe(0);
    // Below the brokers' start and outside the archive is an error, never a silent gap.
    const bare = new ArchivedLog(platform.log, objects, []);
    await expect(
      readAll(
        {
          offsets: async (t) => ({
            ...(await bare.offsets(t)),
            low: new Map([
              [0, 0],
              [1, 0],
            ]),
          }),
          readRanges: (r, o) => bare.readRanges(r, o),
        },
        true,
      ),
    ).rejects.toThrow(/neither on the brokers .* nor in the archive/);
  });

  it('a read of the brokers whose records are trimmed away under it fails, rather than wait for ever or skip them', async () => {
    const { end } = await platform.log.offsets(topic());
    const ranges = [{ topic: topic(), partition: 1, start: 0, end: end.get(1)! }];
    // Planned from 0, then everything of partition 1 leaves the brokers before the read begins.
    await platform.log.deleteRecordsBelow(topic(), new Map([[1, end.get(1)!]]));
    const read = async () => {
      for await (const batch of platform.log.readRanges(ranges, { groupId: `${settings.MERIDIAN_TOPIC_PREFIX}int-gone`, sequential: false })) void batch;
    };
    await expect(read()).rejects.toThrow(/\/1: offsets from 0 left the brokers while they were read/);
  }, 60_000);
});
