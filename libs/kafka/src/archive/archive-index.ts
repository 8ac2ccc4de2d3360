/**
 * The objects of an archive as its code sees them: the service bucket, through a narrow port
 * (libs/platform adapts the MinIO blob store to it), so this library never imports minio.
 */
export type ArchiveObjects = {
  put(key: string, bytes: Buffer): Promise<void>;
  /** The object's bytes; rejects when there is none. */
  get(key: string): Promise<Buffer>;
  /** Every key under `prefix`, in key order; with `startAfter`, only those after it. */
  list(prefix: string, startAfter?: string): Promise<string[]>;
  remove(key: string): Promise<void>;
};

/**
 * One archived segment: the committed records of offsets [first, end) of one partition (offsets
 * in the range without a record were transaction markers or aborted records), verified against
 * the log before this entry was written.
 */
export type SegmentEntry = {
  readonly topic: string;
  readonly partition: number;
  readonly first: number;
  readonly end: number;
  readonly records: number;
  /** Bytes of the uncompressed framing and of the stored (zstd) object. */
  readonly bytes: number;
  readonly storedBytes: number;
  /** SHA-256 of the uncompressed framing. */
  readonly sha256: string;
  /** The smallest and largest record timestamp (ms), null without records. */
  readonly minTimestamp: number | null;
  readonly maxTimestamp: number | null;
  readonly object: string;
};

/** A segment as its index key names it, before its entry is read. */
export type SegmentRef = { readonly partition: number; readonly first: number; readonly end: number };

const WIDTH = 20;
const pad = (n: number) => String(n).padStart(WIDTH, '0');

/** Under the service bucket: `_archive/<topic>/` (the topic carries the deployment's prefix). */
export const archivePrefix = (topic: string): string => `_archive/${topic}/`;

/**
 * A segment's object and its index entry are named by partition, first and end offset: the same
 * range read again writes the same object under the same key (a retry overwrites, never adds),
 * and a range read with another end is another key, which no entry names until it is verified.
 */
export const segmentKey = (topic: string, r: SegmentRef): string => `${archivePrefix(topic)}segments/${r.partition}/${pad(r.first)}-${pad(r.end)}.zst`;
export const indexKey = (topic: string, r: SegmentRef): string => `${archivePrefix(topic)}index/${r.partition}/${pad(r.first)}-${pad(r.end)}.json`;
export const segmentsOf = (topic: string, partition: number, first: number): string => `${archivePrefix(topic)}segments/${partition}/${pad(first)}-`;

export const indexOf = (topic: string, partition: number, first: number): string => `${archivePrefix(topic)}index/${partition}/${pad(first)}-`;

const REF = /\/(\d+)\/(\d{20})-(\d{20})\.(json|zst)$/;

export function parseRef(key: string): SegmentRef | null {
  const m = REF.exec(key);
  return m ? { partition: Number(m[1]), first: Number(m[2]), end: Number(m[3]) } : null;
}

/**
 * Per partition, the archived segments that continue one another from the first one: [first,
 * end) ranges sorted, taking at each position the one reaching furthest (two archivers that
 * raced may have written overlapping ranges of the same records; the overlap is read once).
 */
export async function archiveChains(objects: ArchiveObjects, topic: string): Promise<Map<number, SegmentRef[]>> {
  const refs = (await objects.list(`${archivePrefix(topic)}index/`)).map(parseRef).filter((r): r is SegmentRef => r !== null);
  const byPartition = new Map<number, SegmentRef[]>();
  for (const r of refs) byPartition.set(r.partition, [...(byPartition.get(r.partition) ?? []), r]);
  const chains = new Map<number, SegmentRef[]>();
  for (const [p, list] of byPartition) chains.set(p, chainOf(list));
  return chains;
}

/**
 * One sweep over the refs sorted by first offset: a ref passed over at one position ends no
 * further than the one taken there, so it can never extend the chain later (the index of a
 * long-lived archive holds many thousands of refs; a scan per step would be quadratic).
 */
export function chainOf(refs: readonly SegmentRef[]): SegmentRef[] {
  const sorted = [...refs].sort((a, b) => a.first - b.first || b.end - a.end);
  const chain: SegmentRef[] = [];
  let at = sorted[0]?.first ?? 0;
  let i = 0;
  for (;;) {
    let best: SegmentRef | undefined;
    for (; i < sorted.length && sorted[i]!.first <= at; i++) {
      const r = sorted[i]!;
      if (r.end > at && (!best || r.end > best.end)) best = r;
    }
    if (!best) return chain;
    chain.push(best);
    at = best.end;
  }
}

/** Where a partition's archive begins and ends: [first, end), or null when nothing is archived. */
export function chainSpan(chain: readonly SegmentRef[] | undefined): { first: number; end: number } | null {
  if (!chain || chain.length === 0) return null;
  return { first: chain[0]!.first, end: chain[chain.length - 1]!.end };
}

export async function readEntry(objects: ArchiveObjects, topic: string, ref: SegmentRef): Promise<SegmentEntry> {
  return JSON.parse((await objects.get(indexKey(topic, ref))).toString('utf8')) as SegmentEntry;
}
