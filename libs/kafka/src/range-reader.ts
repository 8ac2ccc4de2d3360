import type { Admin, Consumer, Kafka } from 'kafkajs';
import type { Offsets, PartitionRange, RangeBatch, RangeReadOptions } from '@meridian/domain';

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;

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
  const byKey = new Map(todo.map((r) => [key(r.topic, r.partition), r]));
  if (byKey.size !== todo.length) throw new Error('a partition is listed twice');
  const position = new Map(todo.map((r) => [key(r.topic, r.partition), r.start]));
  const finished = new Set<string>();
  const order = todo.map((r) => key(r.topic, r.partition));
  let current = 0; // index in `order` of the partition being read, when sequential

  const topics = [...new Set(todo.map((r) => r.topic))];

  // One slot between the consumer (producer side) and the iterator (consumer side).
  type Slot = { batch: RangeBatch; taken: () => void };
  let slot: Slot | null = null;
  let wake: (() => void) | null = null;
  const failed: { error?: unknown; happened: boolean } = { happened: false };
  let allDone = false;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };

  const consumer: Consumer = kafka.consumer({
    groupId: options.groupId,
    readUncommitted: false,
    sessionTimeout: 30_000,
    heartbeatInterval: 3000,
    maxWaitTimeInMs: 250,
    maxBytesPerPartition: options.maxBytesPerPartition ?? 8 * 1024 * 1024,
    maxBytes: options.maxBytes ?? 32 * 1024 * 1024,
    retry: { retries: 10 },
  });

  const active = (k: string) => !finished.has(k) && (!options.sequential || order[current] === k);

  const advance = (k: string, reached: number) => {
    const range = byKey.get(k)!;
    const next = Math.min(Math.max(position.get(k)!, reached), range.end);
    position.set(k, next);
    if (next >= range.end && !finished.has(k)) {
      finished.add(k);
      consumer.pause([{ topic: range.topic, partitions: [range.partition] }]);
      if (options.sequential) {
        while (current < order.length && finished.has(order[current]!)) current++;
        const following = order[current];
        if (following !== undefined) {
          const r = byKey.get(following)!;
          consumer.resume([{ topic: r.topic, partitions: [r.partition] }]);
        }
      }
      if (finished.size === byKey.size) allDone = true;
      return true;
    }
    return false;
  };

  // Batches that hold only markers or aborted records never reach eachBatch; this event still says how far they go.
  consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
    const k = key(e.payload.topic, e.payload.partition);
    if (!byKey.has(k) || finished.has(k)) return;
    if (advance(k, Number(e.payload.lastOffset) + 1)) notify();
  });
  consumer.on(consumer.events.CRASH, (e) => {
    if (!e.payload.restart && !failed.happened) {
      failed.happened = true;
      failed.error = e.payload.error;
      notify();
    }
  });

  await consumer.connect();
  try {
    for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      // Only this read uses the group: committing what was read saves re-reading after a rebalance.
      autoCommit: true,
      autoCommitInterval: 5000,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: async ({ batch, resolveOffset, heartbeat, pause, isRunning }) => {
        const k = key(batch.topic, batch.partition);
        if (!byKey.has(k) || finished.has(k)) {
          pause();
          return;
        }
        if (!active(k)) {
          pause(); // resumed when its turn comes
          return;
        }
        const range = byKey.get(k)!;
        const from = position.get(k)!;
        const messages = batch.messages.filter((m) => {
          const o = Number(m.offset);
          return o >= from && o < range.end;
        });
        const last = Number(batch.lastOffset());
        if (messages.length > 0) {
          const reached = Number(messages[messages.length - 1]!.offset) + 1;
          const done = reached >= range.end || last + 1 >= range.end;
          // Wait until the caller is done with the batch, keeping the group membership alive meanwhile
          // (a rebalance is harmless: positions are kept here and offsets are committed as we go).
          const beat = setInterval(() => { heartbeat().catch(() => undefined); }, 3000);
          try {
            await new Promise<void>((resolve) => {
              slot = { batch: { topic: batch.topic, partition: batch.partition, messages, done }, taken: resolve };
              notify();
            });
          } finally {
            clearInterval(beat);
          }
          if (!isRunning()) return;
          advance(k, reached);
        }
        advance(k, last + 1);
        resolveOffset(batch.lastOffset());
        await heartbeat();
        notify();
      },
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
      if (failed.happened) throw failed.error;
      if (slot) {
        const s: Slot = slot;
        slot = null;
        try {
          yield s.batch;
        } finally {
          s.taken();
        }
        continue;
      }
      if (allDone) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
        const onAbort = () => resolve();
        options.signal?.addEventListener('abort', onAbort, { once: true });
        // A partition can finish through END_BATCH_PROCESS only; poll now and then in case no event wakes us.
        setTimeout(resolve, 500).unref();
      });
    }
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await admin.deleteGroups([options.groupId]).catch(() => undefined);
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
  const done = new Promise<void>((resolve) => { joined = resolve; });
  consumer.on(consumer.events.GROUP_JOIN, () => joined());
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: false });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ pause }) => { pause(); },
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`the group ${groupId} did not rebalance within ${timeoutMs} ms`)), timeoutMs); })]);
    clearTimeout(timer);
  } finally {
    await consumer.disconnect();
  }
}
