import type { PointBatch } from '@meridian/domain';

/** A PointBatch as the projection takes it: where it sits in the log, its rows, and whether it can be projected. */

/** One PointBatch fact and where it sits in the points topic. */
export type Segment = { readonly batch: PointBatch; readonly partition: number; readonly offset: number };

/** Rows a segment contributes: one per point. */
export function segmentRows(segment: Segment): number {
  return segment.batch.timestamps.length;
}

/** Why a decoded batch cannot be projected, or null when it can. */
export function batchProblem(batch: PointBatch): string | null {
  if (batch.timestamps.length !== batch.values.length) {
    return `PointBatch has ${batch.timestamps.length} timestamps but ${batch.values.length} values`;
  }
  if (batch.timestamps.length > 0xffffffff) return 'PointBatch has more rows than row_in_batch (UInt32) can number';
  for (const ts of batch.timestamps) if (!Number.isSafeInteger(ts)) return `PointBatch timestamp ${ts} is not an integer of ms`;
  const names = batch.names ?? [];
  if (names.length > 0) {
    const index = batch.name_index ?? [];
    if (index.length !== batch.timestamps.length)
      return `PointBatch has ${names.length} names and ${index.length} name indexes for ${batch.timestamps.length} points`;
    for (const i of index) if (!Number.isInteger(i) || i < 0 || i >= names.length) return `PointBatch name index ${i} is not one of its ${names.length} names`;
  } else if ((batch.name_index ?? []).length > 0) {
    return 'PointBatch has name indexes without names';
  }
  if (!Number.isSafeInteger(batch.updated_at)) return `PointBatch updated_at ${batch.updated_at} is not an integer of ms`;
  return null;
}
