import { randomUUID } from 'node:crypto';
import type { LogRanges, Offsets, RangeMessage } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import {
  archiveChains,
  chainSpan,
  indexKey,
  indexOf,
  parseRef,
  segmentKey,
  segmentsOf,
  type ArchiveObjects,
  type SegmentEntry,
  type SegmentRef,
} from './archive-index.ts';
import { writeArchiveStatus } from './lag.ts';
import { compressSegment, decodeRecords, decompressSegment, encodeRecords, sha256 } from './segment.ts';

export type ArchiverLog = Pick<LogRanges, 'offsets' | 'readRanges'> & {
  /** Deletes the consumer groups named with a prefix that have no member left. */
  deleteIdleGroups(prefix: string): Promise<number>;
};

export type ArchiverDeps = {
  readonly log: ArchiverLog;
  readonly objects: ArchiveObjects;
  readonly topic: string;
  /**
   * Each pass reads in a consumer group of its own, this prefix and a random id, deleted after
   * it. A group shared by every pass made the pass after a killed one wait for the dead member's
   * session to time out (30 s) before it could join; a pass's own group has no one to wait for.
   * The groups of killed passes are deleted by the next passes once their dead member has gone.
   */
  readonly groupPrefix: string;
  /** A segment is cut once its records' framing reaches this many bytes (the pass's memory bound). */
  readonly segmentBytes: number;
  /**
   * A segment smaller than `segmentBytes` is cut at the end of a pass only once its first record is
   * this old (ms): a lightly written topic is not cut into a segment a pass, and what stays is read
   * again by the next pass (at most `segmentBytes` a partition).
   */
  readonly tailAgeMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
  readonly signal?: AbortSignal;
  /** Between a segment's object and its index entry (tests crash here). */
  readonly beforeIndex?: (ref: SegmentRef) => Promise<void>;
};

export type ArchivePass = { readonly segments: number; readonly records: number; readonly ends: Offsets };

/**
 * One archiving pass: per partition, the log from where its archive ends (where the brokers' log
 * begins, the first time) to the last stable offset now, read read-committed (aborted records
 * and transaction markers never reach the archive), one partition after the other so that at
 * most one segment is held in memory, cut into segments of about `segmentBytes`. It ends by
 * writing what it left unarchived (lag.ts: the archive's lag on /metrics).
 */
export async function archivePass(deps: ArchiverDeps): Promise<ArchivePass> {
  await deps.log
    .deleteIdleGroups(deps.groupPrefix)
    .catch((error: unknown) => deps.logger.debug({ err: error }, 'deleting the groups of earlier archive passes failed'));
  const groupId = `${deps.groupPrefix}${randomUUID()}`;
  const chains = await archiveChains(deps.objects, deps.topic);
  const { low, end } = await deps.log.offsets(deps.topic);
  const ranges = [...end]
    .sort((a, b) => a[0] - b[0])
    .map(([partition, hi]) => ({ topic: deps.topic, partition, start: chainSpan(chains.get(partition))?.end ?? low.get(partition)!, end: hi }))
    .filter((r) => r.end > r.start);
  for (const r of ranges) {
    // Only this archive's trim removes records, below what it holds; anything else (a retention.ms set by hand) lost them.
    if (r.start < low.get(r.partition)!)
      throw new Error(`${deps.topic}/${r.partition}: offsets ${r.start}–${low.get(r.partition)! - 1} left the log before they were archived`);
  }
  const ends: Offsets = new Map([...end].map(([p]) => [p, chainSpan(chains.get(p))?.end ?? low.get(p)!]));
  let segments = 0;
  let records = 0;
  type Pending = { partition: number; first: number; records: RangeMessage[]; bytes: number };
  const cut = async (s: Pending, at: number): Promise<Pending> => {
    await writeSegment(deps, { partition: s.partition, first: s.first, end: at }, s.records);
    segments++;
    records += s.records.length;
    ends.set(s.partition, at);
    return { partition: s.partition, first: at, records: [], bytes: 0 };
  };
  const now = (deps.now ?? Date.now)();
  // The read's last segment of a partition reaches its range's end, covering the transaction
  // markers after its last record (a partition's log always ends with one), once it is old enough.
  const left = new Map<number, number>(); // partition → timestamp of the first record read and left unarchived
  const cutTail = async (s: Pending): Promise<Pending> => {
    const end = ranges.find((r) => r.partition === s.partition)!.end;
    const first = s.records[0];
    if (first && s.first < end && now - Number(first.timestamp) >= deps.tailAgeMs) return cut(s, end);
    if (first) left.set(s.partition, Number(first.timestamp));
    return s;
  };
  // Sequential: a partition's turn comes once the one before is read to its range's end.
  const pending = new Map<number, Pending>();
  for await (const batch of deps.log.readRanges(ranges, { groupId, sequential: true, ...(deps.signal ? { signal: deps.signal } : {}) })) {
    const range = ranges.find((r) => r.partition === batch.partition)!;
    // The partition before is read to its end: its tail is written now or dropped (the next pass
    // reads it again), so at most one segment is held.
    for (const [p, before] of pending) {
      if (p === batch.partition) continue;
      await cutTail(before);
      pending.delete(p);
    }
    let s: Pending = pending.get(batch.partition) ?? { partition: batch.partition, first: range.start, records: [], bytes: 0 };
    for (const m of batch.messages) {
      s.records.push(m);
      s.bytes += 32 + (m.key?.length ?? 0) + (m.value?.length ?? 0);
      if (s.bytes >= deps.segmentBytes) s = await cut(s, Number(m.offset) + 1);
    }
    pending.set(batch.partition, s);
  }
  for (const s of pending.values()) await cutTail(s);
  await writeArchiveStatus(deps.objects, {
    topic: deps.topic,
    at: (deps.now ?? Date.now)(),
    partitions: [...ends].map(([partition, at]) => ({ partition, end: at, oldestUnarchived: left.get(partition) ?? null })),
  });
  return { segments, records, ends };
}

/**
 * Writes one segment exactly once: the object, read back and checked against the records as the
 * log gave them (the same framing, byte for byte, by SHA-256), then its index entry, which is
 * what makes it part of the archive; then objects of the same start no entry names (left by a
 * pass that crashed before its entry) are removed. A crash anywhere repeats the segment from its
 * start at the next pass, under a key of its own range.
 */
async function writeSegment(deps: ArchiverDeps, ref: SegmentRef, records: readonly RangeMessage[]): Promise<SegmentEntry> {
  const raw = encodeRecords(records);
  const digest = sha256(raw);
  const stored = await compressSegment(raw);
  const object = segmentKey(deps.topic, ref);
  await deps.objects.put(object, stored);
  const back = await decompressSegment(await deps.objects.get(object));
  if (sha256(back) !== digest || decodeRecords(back).length !== records.length)
    throw new Error(`archive segment ${object} does not read back as the log's records`);
  const timestamps = records.map((r) => Number(r.timestamp));
  const span = (pick: (...n: number[]) => number) => (timestamps.length ? timestamps.reduce((a, b) => pick(a, b)) : null);
  const entry: SegmentEntry = {
    topic: deps.topic,
    ...ref,
    records: records.length,
    bytes: raw.length,
    storedBytes: stored.length,
    sha256: digest,
    minTimestamp: span(Math.min),
    maxTimestamp: span(Math.max),
    object,
  };
  await deps.beforeIndex?.(ref);
  await deps.objects.put(indexKey(deps.topic, ref), Buffer.from(JSON.stringify(entry)));
  const named = new Set((await deps.objects.list(indexOf(deps.topic, ref.partition, ref.first))).map((key) => parseRef(key)?.end));
  for (const key of await deps.objects.list(segmentsOf(deps.topic, ref.partition, ref.first))) {
    if (!named.has(parseRef(key)?.end)) await deps.objects.remove(key);
  }
  deps.logger.debug(
    { partition: ref.partition, first: ref.first, end: ref.end, records: records.length, stored_bytes: stored.length },
    'archive segment written',
  );
  return entry;
}
