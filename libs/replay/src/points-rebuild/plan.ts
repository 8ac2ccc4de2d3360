import type { Offsets, PartitionRange } from '@meridian/domain';
import type { Projection } from '@meridian/projection';

export type RebuildPlan = {
  /** The ranges still to read, per partition with anything left. */
  readonly ranges: PartitionRange[];
  /** Where the rebuild is per partition: the next offset to read (the range's end once done). */
  readonly position: Map<number, number>;
  /** Offsets in the ranges, read or not. */
  readonly total: number;
};

/**
 * Where a rebuild starts per partition: at its first offset, or after the table's own position
 * when that is further (a resumed rebuild). The projection is told the start, so what is below
 * it counts as stored.
 */
export function planRanges(
  topic: string,
  partitions: readonly number[],
  starts: Offsets,
  ends: Offsets,
  stored: ReadonlyMap<number, number>,
  projection: Pick<Projection, 'setSinkMax'>,
): RebuildPlan {
  const ranges: PartitionRange[] = [];
  const position = new Map<number, number>();
  for (const p of partitions) {
    const start = Math.max(starts.get(p) ?? 0, (stored.get(p) ?? -1) + 1);
    const end = ends.get(p)!;
    projection.setSinkMax(p, start - 1);
    position.set(p, Math.min(start, end));
    if (end > start) ranges.push({ topic, partition: p, start, end });
  }
  const total = ranges.reduce((n, r) => n + (r.end - r.start), 0);
  return { ranges, position, total };
}
