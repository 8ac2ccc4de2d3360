import { randomUUID } from 'node:crypto';
import type { LogRanges, Offsets, RangeMessage } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import { indexKey, indexOf, parseRef, segmentKey, segmentsOf, type ArchiveObjects, type SegmentEntry, type SegmentRef } from './archive-index.ts';
import { chainEnds, type ChainEnds } from './chain-ends.ts';
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
  /**
   * A segment is cut once its records' framing reaches this many bytes. The pass's memory bound:
   * the segment being written, and the kept tails (`tails`), at most this many bytes in all.
   */
  readonly segmentBytes: number;
  /**
   * A segment smaller than `segmentBytes` is cut at the end of a pass only once its first record is
   * this old (ms): a lightly written topic is not cut into a segment a pass; what stays is kept
   * for the next pass (`tails`) or, past the bound, read again by it.
   */
  readonly tailAgeMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
  readonly signal?: AbortSignal;
  /**
   * The partial tails the pass before kept (its `tails`): a partition's is used when the archive
   * still ends where it begins, and the log is read only from where that pass stopped.
   */
  readonly tails?: ReadonlyMap<number, ArchiveTail>;
  /**
   * Where the archive ended after the pass before (its `chainEnds`): this pass lists only the
   * index keys after them (chain-ends.ts). Absent: the whole index is listed.
   */
  readonly chainEnds?: ChainEnds;
  /** Between a segment's object and its index entry (tests crash here). */
  readonly beforeIndex?: (ref: SegmentRef) => Promise<void>;
};

/** Records of one partition from `first` on, read and not cut into a segment yet. */
type Pending = { partition: number; first: number; records: RangeMessage[]; bytes: number };

/**
 * A partition's partial last segment, read and left unarchived (younger than `tailAgeMs`): the
 * committed records of [first, until), handed to the next pass so that it does not read them again.
 */
export type ArchiveTail = Readonly<Pending> & { readonly until: number };

/**
 * What a pass archived, where the archive ends (as offsets, and as each chain's last segment for
 * the next pass and the trim), the records it read, and the tails it kept (at most `segmentBytes` in all).
 */
export type ArchivePass = Readonly<{ segments: number; records: number; ends: Offsets; read: number; tails: Map<number, ArchiveTail>; chainEnds: ChainEnds }>;

/**
 * One archiving pass: per partition, the log from where its archive ends (where the brokers' log
 * begins, the first time) to the last stable offset now, read read-committed (aborted records
 * and transaction markers never reach the archive), one partition after the other so that at
 * most one segment is being written, cut into segments of about `segmentBytes`; a partition's
 * partial last segment is kept for the next pass, which then reads only what came after it. It
 * ends by writing what it left unarchived (lag.ts: the archive's lag on /metrics).
 */
export async function archivePass(deps: ArchiverDeps): Promise<ArchivePass> {
  await deps.log
    .deleteIdleGroups(deps.groupPrefix)
    .catch((error: unknown) => deps.logger.debug({ err: error }, 'deleting the groups of earlier archive passes failed'));
  const groupId = `${deps.groupPrefix}${randomUUID()}`;
  const { low, end } = await deps.log.offsets(deps.topic);
  const lasts = await chainEnds(deps.objects, deps.topic, end.keys(), deps.chainEnds);
  const archivedEnd = (p: number) => lasts.get(p)?.end ?? low.get(p)!;
  // A kept tail still continues the archive only if no other pass archived past its start since.
  const carried = new Map([...(deps.tails ?? [])].filter(([p, t]) => end.has(p) && archivedEnd(p) === t.first && t.until <= end.get(p)!));
  const ranges = [...end]
    .sort((a, b) => a[0] - b[0])
    .map(([partition, hi]) => ({ topic: deps.topic, partition, start: carried.get(partition)?.until ?? archivedEnd(partition), end: hi }))
    .filter((r) => r.end > r.start);
  for (const r of ranges) {
    // Only this archive's trim removes records, below what it holds; anything else (a retention.ms set by hand) lost them.
    if (r.start < low.get(r.partition)!)
      throw new Error(`${deps.topic}/${r.partition}: offsets ${r.start}–${low.get(r.partition)! - 1} left the log before they were archived`);
  }
  const ends: Offsets = new Map([...end].map(([p]) => [p, archivedEnd(p)]));
  let segments = 0;
  let records = 0;
  let read = 0;
  const cut = async (s: Pending, at: number): Promise<Pending> => {
    const ref = { partition: s.partition, first: s.first, end: at };
    await writeSegment(deps, ref, s.records);
    // Its index entry is written: the chain now ends with it, for the next pass to list after.
    lasts.set(s.partition, ref);
    segments++;
    records += s.records.length;
    ends.set(s.partition, at);
    return { partition: s.partition, first: at, records: [], bytes: 0 };
  };
  const now = (deps.now ?? Date.now)();
  const tails = new Map<number, ArchiveTail>();
  let tailBytes = 0;
  const left = new Map<number, number>(); // partition → timestamp of the first record read and left unarchived
  // The read's last segment of a partition reaches its range's end, covering the transaction
  // markers after its last record (a partition's log always ends with one), once it is old enough;
  // else it is kept for the next pass while the kept tails and those not taken up yet fit in one
  // segment's bytes (beyond, the next pass reads it again).
  const cutTail = async (s: Pending): Promise<void> => {
    const until = end.get(s.partition)!;
    const first = s.records[0];
    if (!first || s.first >= until) return;
    if (now - Number(first.timestamp) >= deps.tailAgeMs) {
      await cut(s, until);
      return;
    }
    left.set(s.partition, Number(first.timestamp));
    const waiting = [...carried.values()].reduce((n, t) => n + t.bytes, 0);
    if (tailBytes + waiting + s.bytes <= deps.segmentBytes) {
      tails.set(s.partition, { partition: s.partition, first: s.first, until, records: s.records.map(ownCopy), bytes: s.bytes });
      tailBytes += s.bytes;
    }
  };
  const startOf = (p: number, start: number): Pending => {
    const t = carried.get(p);
    carried.delete(p);
    return t ? { partition: p, first: t.first, records: [...t.records], bytes: t.bytes } : { partition: p, first: start, records: [], bytes: 0 };
  };
  // Sequential: a partition's turn comes once the one before is read to its range's end.
  const pending = new Map<number, Pending>();
  for await (const batch of deps.log.readRanges(ranges, { groupId, sequential: true, ...(deps.signal ? { signal: deps.signal } : {}) })) {
    const range = ranges.find((r) => r.partition === batch.partition)!;
    // The partition before is read to its end: its tail is written now, kept or dropped, so at
    // most one segment is held besides the kept tails.
    for (const [p, before] of pending) {
      if (p === batch.partition) continue;
      await cutTail(before);
      pending.delete(p);
    }
    let s: Pending = pending.get(batch.partition) ?? startOf(batch.partition, range.start);
    read += batch.messages.length;
    for (const m of batch.messages) {
      s.records.push(m);
      s.bytes += 32 + (m.key?.length ?? 0) + (m.value?.length ?? 0);
      if (s.bytes >= deps.segmentBytes) s = await cut(s, Number(m.offset) + 1);
    }
    pending.set(batch.partition, s);
  }
  for (const s of pending.values()) await cutTail(s);
  // Kept tails with nothing new read after them: cut now if old enough, or kept again.
  for (const p of [...carried.keys()]) await cutTail(startOf(p, archivedEnd(p)));
  await writeArchiveStatus(deps.objects, {
    topic: deps.topic,
    at: (deps.now ?? Date.now)(),
    partitions: [...ends].map(([partition, at]) => ({ partition, end: at, oldestUnarchived: left.get(partition) ?? null })),
  });
  return { segments, records, ends, read, tails, chainEnds: lasts };
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

/**
 * A record kept between passes, in buffers of its own: the client's keys, values and headers are
 * views into the whole fetch response they came in, which a kept view would hold, a fetch's
 * bytes for a record's, past the tails' bound.
 */
function ownCopy(m: RangeMessage): RangeMessage {
  const copy = (b: Buffer | null) => (b === null ? null : Buffer.from(b));
  const header = (v: Buffer | string) => (Buffer.isBuffer(v) ? Buffer.from(v) : v);
  const headers =
    m.headers &&
    Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, Array.isArray(v) ? v.map(header) : v === undefined ? v : header(v as Buffer | string)]));
  return { ...m, key: copy(m.key), value: copy(m.value), ...(headers ? { headers } : {}) };
}
