import type { LogRecord, LogTransaction, PointBatch, TopicAcknowledgement } from '@meridian/domain';
import { partitionFor } from '@meridian/kafka';
import type { Segment } from '@meridian/projection';

/** Where one points partition's share of an upload sits in the log. */
export type PartitionShare = { points: number; batches: number; firstOffset: number; lastOffset: number };

/** What one points partition has of an upload's batches so far, sent or still queued. */
export type PartitionCount = { points: number; batches: number };

export type PointBatchSenderOptions = {
  readonly topic: string;
  /** Partitions of the points topic, as the broker has them (the key's partition depends on it). */
  readonly partitions: number;
  /** Most record bytes of one partition in one request (MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION). */
  readonly maxBytesPerPartition: number;
  /** Most record bytes of one request, all partitions (MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST). */
  readonly maxBytesPerRequest: number;
  /** Told of every staged batch the log acknowledged, with its partition and offset (the stage writer). */
  readonly placed?: (segments: readonly Segment[]) => void;
};

/** A staged batch: its columns, for the stage writer, and its record's header. */
export type StagedBatch = { readonly batch: PointBatch; readonly headers: Readonly<Record<string, string>> };

type Queued = { readonly key: string; readonly value: Buffer; readonly points: number; readonly partition: number; readonly staged?: StagedBatch };

/**
 * A record's framing in a Kafka record batch (length, attributes, timestamp and offset deltas,
 * key and value lengths, header count: varints of at most 36 bytes together), rounded up. With
 * it the bound counts what the broker's message.max.bytes counts, but for the batch header
 * (61 bytes), which the bound's margin under 1 MiB covers.
 */
const RECORD_FRAMING = 40;

/**
 * Sends an upload's point batches in its transaction, several per produce request. kafkajs
 * runs one produce request at a time per broker for an idempotent or transactional producer
 * (its broker lock), so sending concurrently gains nothing; fewer, bigger requests do. Batches
 * are queued into a group until one more would take a partition's bytes past the bound (the
 * broker refuses a partition's record batch over message.max.bytes) or the request's past its
 * own (what is held in memory, and under the broker's socket.request.max.bytes with many
 * partitions); the group is then sent while the next one is built, one request in flight,
 * which keeps the order of a key's batches.
 * Each batch gets its partition here (the producer's own rule, partitionFor), so the offset of
 * every batch follows from the acknowledgement: its partition's base offset plus its place
 * among that partition's batches in the request. Counts what each partition received, for the
 * upload's seals; the last group can go in one request with the records that end the upload
 * (flush(tail): its seals and its task event), which saves a round trip or two per upload.
 */
export class PointBatchSender {
  /** Per points partition written: its points, batches and the offsets of its first and last batch. */
  readonly shares = new Map<number, PartitionShare>();
  /** Per points partition: the points and batches given to send(), acknowledged or not. */
  readonly counts = new Map<number, PartitionCount>();
  private readonly tx: Pick<LogTransaction, 'sendAll'>;
  private readonly options: PointBatchSenderOptions;
  private queued: Queued[] = [];
  private queuedBytes = new Map<number, number>();
  private queuedTotal = 0;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(tx: Pick<LogTransaction, 'sendAll'>, options: PointBatchSenderOptions) {
    this.tx = tx;
    this.options = options;
  }

  /**
   * Queues one batch; sends the queued group first when this batch would take its partition
   * past the bound (waiting for the request in flight). Throws an earlier request's error.
   */
  async send(key: string, value: Buffer, points: number, staged?: StagedBatch): Promise<void> {
    const partition = partitionFor(key, this.options.partitions);
    const headerBytes = staged === undefined ? 0 : Object.entries(staged.headers).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v) + 2, 0);
    const bytes = Buffer.byteLength(key) + value.length + headerBytes + RECORD_FRAMING;
    const full =
      (this.queuedBytes.get(partition) ?? 0) + bytes > this.options.maxBytesPerPartition || this.queuedTotal + bytes > this.options.maxBytesPerRequest;
    if (this.queued.length > 0 && full) await this.sendQueued();
    this.queued.push(staged === undefined ? { key, value, points, partition } : { key, value, points, partition, staged });
    this.queuedBytes.set(partition, (this.queuedBytes.get(partition) ?? 0) + bytes);
    this.queuedTotal += bytes;
    const count = this.counts.get(partition);
    if (count === undefined) this.counts.set(partition, { points, batches: 1 });
    else {
      count.points += points;
      count.batches += 1;
    }
  }

  /**
   * Sends what is queued and waits until every request is acknowledged; throws a failed one's
   * error. `tail`'s records go in the same request as the queued group, after it (in each
   * partition too: a seal comes after its batches), or alone when nothing is queued.
   */
  async flush(tail: readonly LogRecord[] = []): Promise<void> {
    if (this.queued.length > 0 || tail.length > 0) await this.sendQueued(tail);
    await this.inFlight;
  }

  /**
   * For an upload being abandoned, whose transaction is aborted next: drops the queued group
   * unsent (sending it would only delay the abort by up to a request's bytes) and waits for the
   * request in flight to end, whatever its outcome, since a transaction is aborted after its
   * last send ends. The sender is then empty, its failure forgotten.
   */
  async discard(): Promise<void> {
    this.queued = [];
    this.queuedBytes = new Map();
    this.queuedTotal = 0;
    await this.inFlight.catch(() => undefined);
    this.inFlight = Promise.resolve();
  }

  /** Waits for the request in flight (throwing its error), then starts the queued group's. */
  private async sendQueued(tail: readonly LogRecord[] = []): Promise<void> {
    const group = this.queued;
    this.queued = [];
    this.queuedBytes = new Map();
    this.queuedTotal = 0;
    await this.inFlight;
    const { topic } = this.options;
    const messages = group.map(({ key, value, partition, staged }) =>
      staged === undefined ? { key, value, partition } : { key, value, partition, headers: staged.headers },
    );
    const records = [
      { topic, acks: -1 as const, messages: [...messages, ...tail.filter((r) => r.topic === topic).flatMap((r) => r.messages)] },
      ...tail.filter((r) => r.topic !== topic),
    ].filter((r) => r.messages.length > 0);
    this.inFlight = this.tx.sendAll(records).then((acks) => this.acknowledged(group, acks));
    // Marked as observed: an upload abandoned mid-send must not crash the process with an
    // unhandled rejection. The error itself reaches the next send() or flush().
    this.inFlight.catch(() => undefined);
  }

  private acknowledged(group: readonly Queued[], acks: readonly TopicAcknowledgement[]): void {
    const baseOffsets = new Map(acks.filter((a) => a.topic === this.options.topic).map((a) => [a.partition, a.baseOffset]));
    const placed = new Map<number, number>();
    const staged: Segment[] = [];
    for (const { partition, points, staged: batch } of group) {
      const base = baseOffsets.get(partition);
      if (base === undefined) throw new Error(`the log acknowledged no offset for partition ${partition} of ${this.options.topic}`);
      const index = placed.get(partition) ?? 0;
      placed.set(partition, index + 1);
      const offset = Number(base) + index;
      if (batch !== undefined) staged.push({ batch: batch.batch, partition, offset });
      const share = this.shares.get(partition);
      if (share === undefined) this.shares.set(partition, { points, batches: 1, firstOffset: offset, lastOffset: offset });
      else {
        share.points += points;
        share.batches += 1;
        share.lastOffset = offset;
      }
    }
    if (staged.length > 0) this.options.placed?.(staged);
  }
}
