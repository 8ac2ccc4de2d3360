import { randomBytes, randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { STAGE_HEADER, type PointBatch, type PointsFact } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { createProducer } from '@meridian/kafka';
import type { Segment } from '@meridian/projection';

/** One batch of an upload written by hand: its partition, its metric and its points [ts, value]. */
export type HandBatch = { readonly partition: number; readonly metric: string; readonly points: ReadonlyArray<readonly [number, number]> };

export type HandUpload = {
  readonly taskId?: string;
  /** Staged: the attempt (16 hex digits; `true`: a random one). Absent: a direct upload. */
  readonly staged?: string | true;
  readonly batches: readonly HandBatch[];
  /** Record time of the batches (CreateTime, ms); absent: the producer's clock. */
  readonly batchesAt?: number;
  /** Record time of each partition's seal; absent: batchesAt. */
  readonly sealsAt?: ReadonlyMap<number, number>;
  /** Runs inside the transaction after the first batch (e.g. another upload committed inside its range). */
  readonly between?: () => Promise<void>;
};

export type WrittenUpload = {
  readonly taskId: string;
  readonly attempt: string | null;
  /** Offset of each batch, in the order given. */
  readonly offsets: readonly number[];
  /** Each batch where it is in the log (what a stage of it holds). */
  readonly segments: readonly Segment[];
  /** Offset of each partition's seal. */
  readonly seals: ReadonlyMap<number, number>;
  readonly points: number;
};

const codec = createEventCodec<PointsFact>();

/**
 * Writes one upload to the points topic as the upload job does, in one transaction: its batches
 * (a staged one's with its attempt in `stage` and the meridian-stage header), then one seal per
 * partition it touched (a staged one's naming its share: attempt, first offset, batches).
 * Nobody writes a stage: whoever seals it fills it from the log.
 */
export async function writeUpload(kafka: Kafka, topic: string, transactionalPrefix: string, upload: HandUpload): Promise<WrittenUpload> {
  const taskId = upload.taskId ?? randomUUID();
  const attempt = upload.staged === true ? randomBytes(8).toString('hex') : (upload.staged ?? null);
  const producer = createProducer(kafka, { transactionalId: `${transactionalPrefix}hand-${randomUUID()}` });
  await producer.connect();
  try {
    const tx = await producer.transaction();
    const offsets: number[] = [];
    const segments: Segment[] = [];
    const shares = new Map<number, { first: number; batches: number; points: number }>();
    const updated_at = 1_720_000_000_000;
    const time = (at: number | undefined) => (at === undefined ? {} : { timestamp: String(at) });
    for (const [i, b] of upload.batches.entries()) {
      const batch: PointBatch = {
        type: 'PointBatch',
        task_id: taskId,
        metric_name: b.metric,
        updated_at,
        timestamps: b.points.map(([ts]) => ts),
        values: b.points.map(([, v]) => v),
        ...(attempt === null ? {} : { stage: attempt }),
      };
      const [meta] = await tx.send({
        topic,
        acks: -1,
        messages: [
          {
            partition: b.partition,
            key: taskId,
            value: codec.encode(batch),
            ...time(upload.batchesAt),
            ...(attempt === null ? {} : { headers: { [STAGE_HEADER]: attempt } }),
          },
        ],
      });
      const offset = Number(meta!.baseOffset);
      offsets.push(offset);
      segments.push({ partition: b.partition, offset, batch });
      const share = shares.get(b.partition) ?? { first: offset, batches: 0, points: 0 };
      shares.set(b.partition, { first: share.first, batches: share.batches + 1, points: share.points + b.points.length });
      if (i === 0) await upload.between?.();
    }
    const seals = new Map<number, number>();
    for (const [partition, share] of shares) {
      const seal: PointsFact = {
        type: 'UploadSealed',
        task_id: taskId,
        points: share.points,
        ...(attempt === null ? {} : { stage: { attempt, first_offset: share.first, batches: share.batches } }),
      };
      const [meta] = await tx.send({
        topic,
        acks: -1,
        messages: [{ partition, key: taskId, value: codec.encode(seal), ...time(upload.sealsAt?.get(partition) ?? upload.batchesAt) }],
      });
      seals.set(partition, Number(meta!.baseOffset));
    }
    await tx.commit();
    return { taskId, attempt, offsets, segments, seals, points: upload.batches.reduce((n, b) => n + b.points.length, 0) };
  } finally {
    await producer.disconnect();
  }
}
