import type { Admin, Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Offsets, PartitionRange, RangeBatch, RangeReadOptions } from '@meridian/domain';

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/**
 * Where a range read stands in each partition: the position it has reached, which partitions are
 * finished and, when sequential, whose turn it is. A position only moves forward, so a rebalance
 * or a redelivery can never hand a message over twice.
 */
class RangeProgress {
  readonly #ranges: Map<string, PartitionRange>;
  readonly #position: Map<string, number>;
  readonly #finished = new Set<string>();
  readonly #order: string[];
  readonly #sequential: boolean;
  #current = 0; // index in #order of the partition being read, when sequential

  constructor(ranges: readonly PartitionRange[], sequential: boolean) {
    this.#ranges = new Map(ranges.map((r) => [key(r.topic, r.partition), r]));
    if (this.#ranges.size !== ranges.length) throw new Error('a partition is listed twice');
    this.#position = new Map(ranges.map((r) => [key(r.topic, r.partition), r.start]));
    this.#order = ranges.map((r) => key(r.topic, r.partition));
    this.#sequential = sequential;
  }

  /** The range of a partition the read still wants, or undefined. */
  open(topic: string, partition: number): PartitionRange | undefined {
    const k = key(topic, partition);
    return this.#finished.has(k) ? undefined : this.#ranges.get(k);
  }

  /** Whether a partition is read now (always, unless the read is sequential and another one's turn). */
  isTurnOf(range: PartitionRange): boolean {
    return !this.#sequential || this.#order[this.#current] === key(range.topic, range.partition);
  }

  position(range: PartitionRange): number {
    return this.#position.get(key(range.topic, range.partition))!;
  }

  /** The ranges not read to their end yet, with their positions. */
  unfinished(): Array<{ readonly range: PartitionRange; readonly position: number }> {
    return [...this.#ranges].filter(([k]) => !this.#finished.has(k)).map(([k, range]) => ({ range, position: this.#position.get(k)! }));
  }

  get allDone(): boolean {
    return this.#finished.size === this.#ranges.size;
  }

  /**
   * Moves a partition's position to `reached` (never back, never past its end). When that
   * finishes it, says so, with the partition whose turn comes next when the read is sequential.
   */
  advance(range: PartitionRange, reached: number): { readonly finished: boolean; readonly next?: PartitionRange } {
    const k = key(range.topic, range.partition);
    const next = Math.min(Math.max(this.#position.get(k)!, reached), range.end);
    this.#position.set(k, next);
    if (next < range.end || this.#finished.has(k)) return { finished: false };
    this.#finished.add(k);
    if (!this.#sequential) return { finished: true };
    while (this.#current < this.#order.length && this.#finished.has(this.#order[this.#current]!)) this.#current++;
    const following = this.#order[this.#current];
    return following === undefined ? { finished: true } : { finished: true, next: this.#ranges.get(following)! };
  }
}

/** One slot between the consumer, which offers a batch and waits until it is taken, and the iterator, which takes it. */
class Handoff {
  #slot: { readonly batch: RangeBatch; readonly taken: () => void } | null = null;
  #wake: (() => void) | null = null;
  #failure: { readonly error: unknown } | null = null;

  /** Resolves once the iterator's caller is done with the batch. */
  offer(batch: RangeBatch): Promise<void> {
    return new Promise<void>((taken) => {
      this.#slot = { batch, taken };
      this.notify();
    });
  }

  take(): { readonly batch: RangeBatch; readonly taken: () => void } | null {
    const slot = this.#slot;
    this.#slot = null;
    return slot;
  }

  fail(error: unknown): void {
    this.#failure ??= { error };
    this.notify();
  }

  get failure(): { readonly error: unknown } | null {
    return this.#failure;
  }

  notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  /** Waits for a batch, a failure, the signal, or half a second (a partition can finish through END_BATCH_PROCESS only, and no event may come). */
  async wait(signal: AbortSignal | undefined): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      signal?.addEventListener('abort', () => resolve(), { once: true });
      setTimeout(resolve, 500).unref();
    });
  }
}

function rangeConsumer(kafka: Kafka, options: RangeReadOptions): Consumer {
  return kafka.consumer({
    groupId: options.groupId,
    readUncommitted: false,
    sessionTimeout: 30_000,
    heartbeatInterval: 3000,
    maxWaitTimeInMs: 250,
    maxBytesPerPartition: options.maxBytesPerPartition ?? 8 * 1024 * 1024,
    maxBytes: options.maxBytes ?? 32 * 1024 * 1024,
    retry: { retries: 10 },
  });
}

/**
 * The read's batch handler: hands the caller the messages of a batch within its partition's range,
 * in turn, then moves the partition's position to the batch's end.
 */
function eachRangeBatch(progress: RangeProgress, handoff: Handoff, advance: (range: PartitionRange, reached: number) => boolean) {
  return async ({ batch, resolveOffset, heartbeat, pause, isRunning }: EachBatchPayload): Promise<void> => {
    const range = progress.open(batch.topic, batch.partition);
    // Not wanted, or not its turn yet (resumed when it comes).
    if (!range || !progress.isTurnOf(range)) {
      pause();
      return;
    }
    const from = progress.position(range);
    const messages = batch.messages.filter((m) => Number(m.offset) >= from && Number(m.offset) < range.end);
    const last = Number(batch.lastOffset());
    if (messages.length > 0) {
      const reached = Number(messages[messages.length - 1]!.offset) + 1;
      const done = reached >= range.end || last + 1 >= range.end;
      // Wait until the caller is done with the batch, keeping the group membership alive meanwhile
      // (a rebalance is harmless: positions are kept here and offsets are committed as we go).
      const beat = setInterval(() => {
        heartbeat().catch(() => undefined);
      }, 3000);
      try {
        await handoff.offer({ topic: batch.topic, partition: batch.partition, messages, done });
      } finally {
        clearInterval(beat);
      }
      if (!isRunning()) return;
      advance(range, reached);
    }
    advance(range, last + 1);
    resolveOffset(batch.lastOffset());
    await heartbeat();
    handoff.notify();
  };
}

/**
 * Reads fixed offset ranges of the log, read-committed (aborted upload transactions and
 * transaction markers are never seen), as an async iterator with backpressure: the consumer
 * waits while the caller works on a batch, heartbeating.
 *
 * kafkajs has no manual partition assignment, so the read runs in a consumer group of its own
 * (deleted afterwards) and seeks every partition to its range start once joined. The reader keeps its own position
 * per partition and drops anything before it, so a rebalance or a redelivery can never repeat a
 * message. A partition is finished when its position reaches the range end, counting offsets
 * that hold no message for the caller (markers, aborted records).
 */
export async function* readRanges(kafka: Kafka, admin: Admin, ranges: readonly PartitionRange[], options: RangeReadOptions): AsyncGenerator<RangeBatch> {
  const todo = ranges.filter((r) => r.end > r.start);
  if (todo.length === 0) return;
  const progress = new RangeProgress(todo, options.sequential === true);
  const handoff = new Handoff();
  const consumer = rangeConsumer(kafka, options);
  const advance = (range: PartitionRange, reached: number): boolean => {
    const { finished, next } = progress.advance(range, reached);
    if (!finished) return false;
    consumer.pause([{ topic: range.topic, partitions: [range.partition] }]);
    if (next) consumer.resume([{ topic: next.topic, partitions: [next.partition] }]);
    return true;
  };

  // Batches that hold only markers or aborted records never reach eachBatch; this event still says how far they go.
  consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
    const range = progress.open(e.payload.topic, e.payload.partition);
    if (range && advance(range, Number(e.payload.lastOffset) + 1)) handoff.notify();
  });
  consumer.on(consumer.events.CRASH, (e) => {
    if (!e.payload.restart) handoff.fail(e.payload.error);
  });

  let checkedAt = Date.now();
  await consumer.connect();
  try {
    for (const topic of new Set(todo.map((r) => r.topic))) await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      // Only this read uses the group: committing what was read saves re-reading after a rebalance.
      autoCommit: true,
      autoCommitInterval: 5000,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: eachRangeBatch(progress, handoff, advance),
    });

    // run() resolves once the group is joined; a seek made now applies before the first fetch is
    // used (kafkajs drops fetched data of a partition with a seek pending).
    for (const r of todo) consumer.seek({ topic: r.topic, partition: r.partition, offset: String(r.start) });
    if (options.sequential) {
      for (const r of todo.slice(1)) consumer.pause([{ topic: r.topic, partitions: [r.partition] }]);
    }

    // Heartbeats are kafkajs's business between batches; while the caller holds a batch we wait here.
    for (;;) {
      if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
      const failure = handoff.failure;
      if (failure) throw failure.error;
      const slot = handoff.take();
      if (slot) {
        try {
          yield slot.batch;
        } finally {
          slot.taken();
        }
        continue;
      }
      if (progress.allDone) return;
      await handoff.wait(options.signal);
      if (Date.now() - checkedAt >= GONE_CHECK_MS) {
        checkedAt = Date.now();
        await failIfGone(admin, progress);
      }
    }
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await admin.deleteGroups([options.groupId]).catch(() => undefined);
  }
}

/** How long a read waits without a batch before it asks whether its records are still on the brokers. */
const GONE_CHECK_MS = 3000;

/**
 * A partition whose log now begins past the read's position lost records the read had not reached
 * (a trim of the points topic, DeleteRecords): the consumer would have skipped to the new first
 * offset, or waited for ever when that is past the range's end. The read fails instead.
 */
async function failIfGone(admin: Admin, progress: RangeProgress): Promise<void> {
  const open = progress.unfinished();
  for (const topic of new Set(open.map((o) => o.range.topic))) {
    const { low } = await topicOffsets(admin, topic);
    const gone = open.find((o) => o.range.topic === topic && (low.get(o.range.partition) ?? 0) > o.position);
    if (gone) throw new Error(`${topic}/${gone.range.partition}: offsets from ${gone.position} left the brokers while they were read`);
  }
}

/** The first and the end offset (read-committed: the last stable offset) of every partition of a topic. */
export async function topicOffsets(admin: Admin, topic: string): Promise<{ low: Offsets; end: Offsets }> {
  const rows = await admin.fetchTopicOffsets(topic);
  return {
    low: new Map(rows.map((r) => [r.partition, Number(r.low)])),
    end: new Map(rows.map((r) => [r.partition, Number(r.high)])),
  };
}

/**
 * The end offset (read-committed: the last stable offset) of every partition of a topic, in one
 * request (admin.fetchTopicEndOffsets, patches/README.md): what a reader following the topic to
 * its end asks before every command ingest takes.
 */
export async function topicEnds(admin: Admin, topic: string): Promise<Offsets> {
  const rows = await admin.fetchTopicEndOffsets(topic);
  return new Map(rows.map((r) => [r.partition, Number(r.offset)]));
}

/** Per partition, the first offset whose record timestamp is at or after `ms` (the end offset when none is). */
export async function offsetsAtTime(admin: Admin, topic: string, ms: number): Promise<Offsets> {
  const rows = await admin.fetchTopicOffsetsByTimestamp(topic, ms);
  return new Map(rows.map((r) => [r.partition, Number(r.offset)]));
}

/**
 * Makes every member of a consumer group rejoin it: a member of our own joins (which completes
 * only once every current member has rejoined) and leaves. It subscribes like the members, reads
 * nothing and commits nothing. The live projector forgets its positions on every join and reads
 * them again from `points` before its next insert.
 */
export async function nudgeGroup(kafka: Kafka, groupId: string, topic: string, timeoutMs = 120_000): Promise<void> {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 30_000, rebalanceTimeout: 60_000, heartbeatInterval: 3000 });
  let joined!: () => void;
  const done = new Promise<void>((resolve) => {
    joined = resolve;
  });
  consumer.on(consumer.events.GROUP_JOIN, () => joined());
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: false });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ pause }) => {
        pause();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      done,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the group ${groupId} did not rebalance within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  } finally {
    await consumer.disconnect();
  }
}
