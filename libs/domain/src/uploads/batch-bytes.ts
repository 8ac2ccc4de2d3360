/**
 * Upper bounds on what a point batch takes in the points topic, before the producer compresses
 * it, in either layout (PointBatch v4's columns or v5's packed series), so that a batch cut at a
 * byte budget fits a produce request the broker accepts (its message.max.bytes) whatever its
 * names: a push of thousands of long-labelled series would otherwise make one batch of
 * megabytes that the broker refuses, and refuses again at every retry.
 */

/** The record's framing, the task id, updated_at and the key (a name of the batch: at most 256 characters). */
const BATCH_BASE_BYTES = 4096;
/** A point of a one-metric batch: a timestamp (an Avro long, at most 10 bytes; packed, 8) and a value (8). */
const POINT_BYTES = 18;
/** A point of a batch of several metrics: its metric's index too (v4), or its own run of a series (v5: two varints). */
const INDEXED_POINT_BYTES = 24;
/** A metric of a batch beyond its UTF-8 bytes: the string's length, and its series' header when packed. */
const NAME_OVERHEAD_BYTES = 32;

/** The most bytes a name takes in a batch: a UTF-16 unit is at most 3 UTF-8 bytes (a pair, 4). */
export const nameBytes = (name: string): number => name.length * 3 + NAME_OVERHEAD_BYTES;

/** The most bytes a point takes in a batch over `names` metrics. */
const pointBytes = (names: number): number => (names > 1 ? INDEXED_POINT_BYTES : POINT_BYTES);

/** The most bytes a batch of `points` points over `names` metrics whose nameBytes sum to `namesBytes` encodes to. */
export function batchBytes(namesBytes: number, names: number, points: number): number {
  return BATCH_BASE_BYTES + namesBytes + points * pointBytes(names);
}

/**
 * How many more points a batch of `points` points over `names` metrics (their nameBytes summing to
 * `namesBytes`) takes within `bytes`: the one rule both batchers cut by.
 */
export function pointsWithin(bytes: number, namesBytes: number, names: number, points: number): number {
  return Math.max(0, Math.floor((bytes - batchBytes(namesBytes, names, 0)) / pointBytes(names)) - points);
}

/** When a batch is cut: at `points` points, or before a point that would take it past `bytes` (its estimate above). */
export type BatchBounds = { readonly points: number; readonly bytes: number };
