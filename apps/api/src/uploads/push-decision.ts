import type { BatchBounds, OnError, PointsFact, RowError, UploadFailed, UserRecord } from '@meridian/domain';
// The JSON check worker loads this module and what it imports into an isolate of its own: the
// domain's uploads and the partitioner alone, not every domain module (PromQL's parser among
// them) nor kafkajs, which took 9–10 MB more of its memory.
import { batchKey, decideWholeUpload, pointBatchOf } from '@meridian/domain/uploads';
import { createEventCodec } from '@meridian/events';
import { partitionFor } from '@meridian/kafka/partition';

/** What deciding a push needs besides its bytes: everything a worker thread cannot ask the api for. */
export type PushRequest = {
  readonly task_id: string;
  /** Accepted at (epoch ms): every point's updated_at. */
  readonly at: number;
  readonly on_error: OnError;
  /** The caller's record as the accounts fold holds it now: write access is decided on it, per metric. */
  readonly user: UserRecord;
  /** Where a batch is cut: its points (MERIDIAN_POINT_BATCH_SIZE) and its bytes (MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION). */
  readonly batch: BatchBounds;
  /** Partitions of the points topic: a batch holds the metrics of one. */
  readonly pointsPartitions: number;
  readonly maxLineLength: number;
  readonly maxColumns: number;
  readonly maxJsonDocumentLength: number;
  /** Timestamps written as differences (PointBatch v4; MERIDIAN_POINT_BATCH_DELTAS). */
  readonly timestampDeltas: boolean;
  /** Points packed by series (PointBatch v5; MERIDIAN_POINT_BATCH_PACKED): then timestampDeltas does not matter. */
  readonly packedPoints: boolean;
};

/** One point batch of a push, encoded for the points topic under its key (a metric of the batch: every one goes to the key's partition). */
export type EncodedBatch = { readonly key: string; readonly points: number; readonly value: Uint8Array };

/** A push decided: stored (its encoded batches and counts) or refused whole (its errors). */
export type PushDecision =
  | {
      readonly kind: 'stored';
      readonly batches: readonly EncodedBatch[];
      readonly rows_total: number;
      readonly points_accepted: number;
      readonly rows_rejected: number;
      readonly errors: readonly RowError[];
      readonly metrics: readonly string[];
    }
  | { readonly kind: 'refused'; readonly end: UploadFailed };

/** The codecs by the layout they write: v5 (packed), v4 (timestamps as differences) or v3. */
const pointsCodecs = new Map(
  [
    [true, true],
    [true, false],
    [false, false],
  ].map(([writePacked, writeDeltas]) => [`${writePacked}/${writeDeltas}`, createEventCodec<PointsFact>(undefined, { writeDeltas, writePacked })]),
);
const codecFor = (request: PushRequest) => pointsCodecs.get(request.packedPoints ? 'true/true' : `false/${request.timestampDeltas}`)!;

/**
 * Decides a push whole, by the same parser and upload rules the ingest worker applies to a
 * staged upload (all or nothing, skip mode, write access per metric), and encodes its batches:
 * run on the check pool's worker thread, so the event loop only sends what comes back.
 */
export async function decidePush(bytes: Uint8Array, request: PushRequest): Promise<PushDecision> {
  const start = {
    on_error: request.on_error,
    user: () => request.user,
    batch: request.batch,
    maxBufferedPoints: request.batch.points,
    groupOf: (name: string) => partitionFor(name, request.pointsPartitions),
  };
  const { end, batches } = await decideWholeUpload(oneChunk(bytes), start, {
    maxErrors: Number.MAX_SAFE_INTEGER,
    maxLineLength: request.maxLineLength,
    maxColumns: request.maxColumns,
    maxJsonDocumentLength: request.maxJsonDocumentLength,
  });
  if (end.type === 'UploadFailed') return { kind: 'refused', end };
  return {
    kind: 'stored',
    batches: batches.map((b) => ({
      key: batchKey(b),
      points: b.timestamps.length,
      value: ownMemory(codecFor(request).encode(pointBatchOf(request.task_id, request.at, b))),
    })),
    rows_total: end.rows_total,
    points_accepted: end.points_accepted,
    rows_rejected: end.rows_rejected,
    errors: end.errors,
    metrics: end.metrics,
  };
}

/** The bytes in an ArrayBuffer of their own, so that handing them to another thread takes nothing else along. */
function ownMemory(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
}

async function* oneChunk(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}
