import { archiveChains, archivePrefix, chainOf, indexKey, parseRef, type ArchiveObjects, type SegmentRef } from './archive-index.ts';

/** Per partition, the last segment of its archive chain: where the archive ends, as a pass last saw it. */
export type ChainEnds = ReadonlyMap<number, SegmentRef>;

const lastOf = (chain: readonly SegmentRef[]): SegmentRef | undefined => chain[chain.length - 1];

async function partitionRefs(objects: ArchiveObjects, topic: string, partition: number, startAfter?: string): Promise<SegmentRef[]> {
  const keys = await objects.list(`${archivePrefix(topic)}index/${partition}/`, startAfter);
  return keys.map(parseRef).filter((r): r is SegmentRef => r !== null);
}

/**
 * Where each partition's archive ends, listing only the index keys after the ends `kept` from
 * the pass before (S3's StartAfter): a pass lists what was written since, not the whole index,
 * which grows by a segment every few seconds at a high ingest rate. Without `kept` (the first
 * pass, or after a failed one) the whole index is listed once.
 *
 * The index only grows and every key listed was there, so the chain of what is known ends no
 * further than the chain of the whole index (chainOf takes the furthest reach at each position):
 * a racing archiver's segment sorted before a kept end can only make this pass archive again what
 * is archived already, which the chain reads once, and make the trim keep more, never less. A
 * new key that does not continue the kept chain (another archiver wrote from elsewhere) has
 * its partition's index listed whole again.
 */
export async function chainEnds(objects: ArchiveObjects, topic: string, partitions: Iterable<number>, kept?: ChainEnds): Promise<Map<number, SegmentRef>> {
  const ends = new Map<number, SegmentRef>();
  if (!kept) {
    for (const [p, chain] of await archiveChains(objects, topic)) {
      const last = lastOf(chain);
      if (last) ends.set(p, last);
    }
    return ends;
  }
  for (const p of [...partitions].sort((a, b) => a - b)) {
    const known = kept.get(p);
    const added = await partitionRefs(objects, topic, p, known && indexKey(topic, known));
    let chain = chainOf(known ? [known, ...added] : added);
    if (chain.length < added.length + (known ? 1 : 0)) chain = chainOf(await partitionRefs(objects, topic, p));
    const last = lastOf(chain);
    if (last) ends.set(p, last);
  }
  return ends;
}
