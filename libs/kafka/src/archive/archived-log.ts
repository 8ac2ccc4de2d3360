import type { LogRanges, Offsets, PartitionRange, RangeBatch, RangeMessage, RangeReadOptions } from '@meridian/domain';
import { archiveChains, chainSpan, readEntry, type ArchiveObjects, type SegmentRef } from './archive-index.ts';
import { decodeRecords, decompressSegment, sha256 } from './segment.ts';

/** Records per batch handed out of an archive segment (a segment holds up to MERIDIAN_ARCHIVE_SEGMENT_BYTES). */
const BATCH_RECORDS = 1000;

type Split = { readonly archived: PartitionRange | null; readonly live: PartitionRange | null };

/**
 * The log as replay reads it when a topic is archived: offsets below where the archive ends come
 * from its segments, the rest from the brokers, as one history. The archive holds the same
 * committed records at the same offsets (archiver.ts), so a reader cannot tell where one ends
 * and the other begins. Topics not in `archived` are read from the brokers alone.
 */
export class ArchivedLog implements LogRanges {
  readonly #live: LogRanges;
  readonly #objects: ArchiveObjects;
  readonly #archived: ReadonlySet<string>;

  constructor(live: LogRanges, objects: ArchiveObjects, archived: readonly string[]) {
    this.#live = live;
    this.#objects = objects;
    this.#archived = new Set(archived);
  }

  // The whole index, listed once per read: a replay is a one-off, unlike the archiver's passes (chain-ends.ts).
  async #chains(topic: string): Promise<Map<number, SegmentRef[]>> {
    return this.#archived.has(topic) ? archiveChains(this.#objects, topic) : new Map();
  }

  /** The first offset is the archive's where it holds the partition's history from before the brokers' first. */
  async offsets(topic: string): Promise<{ low: Offsets; end: Offsets }> {
    const [{ low, end }, chains] = await Promise.all([this.#live.offsets(topic), this.#chains(topic)]);
    const first: Offsets = new Map(low);
    for (const [p, lo] of low) {
      const span = chainSpan(chains.get(p));
      if (span && span.first < lo && span.end >= lo) first.set(p, span.first);
    }
    return { low: first, end };
  }

  /** Where the brokers answer with their first offset, the time may lie in the archive: its segments are searched. */
  async offsetsAtTime(topic: string, ms: number): Promise<Offsets> {
    const [at, { low }, chains] = await Promise.all([this.#live.offsetsAtTime(topic, ms), this.#live.offsets(topic), this.#chains(topic)]);
    for (const [p, chain] of chains) {
      if ((at.get(p) ?? 0) > (low.get(p) ?? 0)) continue;
      const found = await this.#firstAtTime(topic, chain, ms);
      if (found !== null && found < (at.get(p) ?? Infinity)) at.set(p, found);
    }
    return at;
  }

  async #firstAtTime(topic: string, chain: readonly SegmentRef[], ms: number): Promise<number | null> {
    for (const ref of chain) {
      const entry = await readEntry(this.#objects, topic, ref);
      if (entry.maxTimestamp === null || entry.maxTimestamp < ms) continue;
      const hit = (await this.#segment(topic, ref)).find((r) => Number(r.timestamp) >= ms);
      if (hit) return Number(hit.offset);
    }
    return null;
  }

  async *readRanges(ranges: readonly PartitionRange[], options: RangeReadOptions): AsyncGenerator<RangeBatch> {
    const splits = await this.#split(ranges);
    if (splits.every((s) => s.archived === null)) {
      yield* this.#live.readRanges(ranges, options);
      return;
    }
    const lives = (list: readonly Split[]) => list.flatMap((s) => (s.live ? [s.live] : []));
    if (options.sequential) {
      // One partition after the other, each its archived part then its live part.
      for (const s of splits) {
        if (s.archived) yield* this.#readArchived(s.archived, s.live === null, options.signal);
        if (s.live) yield* this.#readLive([s.live], options);
      }
      return;
    }
    for (const s of splits) if (s.archived) yield* this.#readArchived(s.archived, s.live === null, options.signal);
    const rest = lives(splits);
    if (rest.length > 0) yield* this.#readLive(rest, options);
  }

  /**
   * The brokers' part, checked afterwards: a trim that moved a partition's first offset past
   * where its part began, while it was read, may have made the consumer skip to the new first
   * offset; the read then fails (run it again) rather than miss records.
   */
  async *#readLive(ranges: readonly PartitionRange[], options: RangeReadOptions): AsyncGenerator<RangeBatch> {
    yield* this.#live.readRanges(ranges, options);
    for (const t of new Set(ranges.map((r) => r.topic))) {
      const { low } = await this.#live.offsets(t);
      const cut = ranges.find((r) => r.topic === t && (low.get(r.partition) ?? 0) > r.start);
      if (cut) throw new Error(`${t}/${cut.partition}: the brokers' log was trimmed past ${cut.start} while it was read; run the read again`);
    }
  }

  nudgeGroup(groupId: string, topic: string, timeoutMs?: number): Promise<void> {
    return this.#live.nudgeGroup(groupId, topic, timeoutMs);
  }

  /** Each range as its part the archive holds and its part read from the brokers; a part neither holds is an error, never a gap. */
  async #split(ranges: readonly PartitionRange[]): Promise<Split[]> {
    // Every topic's first offsets: a read below them would otherwise start silently at the brokers' first.
    const topics = [...new Set(ranges.map((r) => r.topic))];
    const chains = new Map<string, Map<number, SegmentRef[]>>();
    const lows = new Map<string, Offsets>();
    for (const t of topics) {
      chains.set(t, await this.#chains(t));
      lows.set(t, (await this.#live.offsets(t)).low);
    }
    return ranges.map((r) => {
      const span = chainSpan(chains.get(r.topic)?.get(r.partition));
      const low = lows.get(r.topic)?.get(r.partition) ?? 0;
      if (r.end <= r.start) return { archived: null, live: r };
      if (!span || r.start < span.first || r.start >= span.end) {
        if (r.start < low) throw new Error(`${r.topic}/${r.partition}: offsets from ${r.start} are neither on the brokers (from ${low}) nor in the archive`);
        return { archived: null, live: r };
      }
      const cut = Math.min(r.end, span.end);
      return { archived: { ...r, end: cut }, live: cut < r.end ? { ...r, start: cut } : null };
    });
  }

  async *#readArchived(range: PartitionRange, last: boolean, signal: AbortSignal | undefined): AsyncGenerator<RangeBatch> {
    const chain = (await this.#chains(range.topic)).get(range.partition) ?? [];
    let at = range.start;
    const batch = (messages: readonly RangeMessage[], done: boolean): RangeBatch => ({ topic: range.topic, partition: range.partition, messages, done });
    for (const ref of chain) {
      if (ref.end <= at || ref.first >= range.end) continue;
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      const records = (await this.#segment(range.topic, ref)).filter((r) => Number(r.offset) >= at && Number(r.offset) < range.end);
      at = Math.min(ref.end, range.end);
      const finished = at >= range.end;
      for (let i = 0; i < records.length; i += BATCH_RECORDS) {
        const tail = i + BATCH_RECORDS >= records.length;
        yield batch(records.slice(i, i + BATCH_RECORDS), last && finished && tail);
      }
      if (records.length === 0 && last && finished) yield batch([], true);
    }
  }

  /** A segment's records, its bytes checked against its index entry's SHA-256. */
  async #segment(topic: string, ref: SegmentRef): Promise<RangeMessage[]> {
    const entry = await readEntry(this.#objects, topic, ref);
    const raw = await decompressSegment(await this.#objects.get(entry.object));
    if (sha256(raw) !== entry.sha256) throw new Error(`archive segment ${entry.object} does not match its index entry`);
    return decodeRecords(raw);
  }
}
