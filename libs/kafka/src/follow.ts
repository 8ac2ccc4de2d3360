import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, Kafka } from 'kafkajs';
import type { EventCodec, EventLike } from '@meridian/events';
import type { Logger } from '@meridian/observability';
import type { Position } from '@meridian/domain';
import { topicEnds } from './range-reader.ts';

export type FollowerOptions<E extends EventLike> = {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly topic: string;
  readonly groupPrefix: string;
  readonly codec: EventCodec<E>;
  readonly logger: Logger;
  /** Applies one event to in-memory state; must not throw for well-formed events. */
  readonly apply: (event: E, position: Position) => void;
  /** False for a topic no transaction ever writes (accounts): its end, read once, holds every acknowledged event. */
  readonly writtenInTransactions?: boolean;
  /**
   * Runs before the events of each fetched batch are applied (one at a time, in order): where
   * applying needs an answer from elsewhere, asked once for the whole batch.
   */
  readonly prepare?: (events: ReadonlyArray<{ event: E; position: Position }>) => Promise<void>;
};

/**
 * Reads a topic into memory and keeps following it: from the beginning (accounts), or
 * from given positions on (tasks: the read model holds what comes before). Each follower has a
 * consumer group of its own and commits nothing, so every instance sees every event.
 */
export class TopicFollower<E extends EventLike> {
  private readonly consumer: Consumer;
  private readonly applied = new Map<number, number>();
  private targets: Map<number, number> | null = null;
  private waiters: Array<{ position: Position; resolve: () => void }> = [];
  private caughtUpResolve!: () => void;
  readonly caughtUp: Promise<void>;
  private isCaughtUp = false;
  private eventsReadAtStart = 0;

  private readonly options: FollowerOptions<E>;

  constructor(options: FollowerOptions<E>) {
    this.options = options;
    this.consumer = options.kafka.consumer({
      groupId: `${options.groupPrefix}follower-${randomUUID()}`,
      maxWaitTimeInMs: 250,
      sessionTimeout: 10_000,
    });
    this.caughtUp = new Promise((resolve) => {
      this.caughtUpResolve = resolve;
    });
    // Transaction markers (control records) take offsets but never reach eachMessage: a log whose
    // last record is a commit marker would never look caught up. Each processed batch, markers
    // included, moves the applied offset to the batch's end.
    this.consumer.on(this.consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      const last = Number(payload.lastOffset);
      if (payload.topic !== options.topic || !(last > (this.applied.get(payload.partition) ?? -1))) return;
      this.applied.set(payload.partition, last);
      this.settle();
    });
    // The group commits nothing, so each join (the first, and a rejoin after a Kafka restart or a
    // coordinator move) would start every partition at its beginning: seek past what is applied
    // (or where `start` was told to begin).
    this.consumer.on(this.consumer.events.GROUP_JOIN, () => {
      for (const [partition, offset] of this.applied) this.consumer.seek({ topic: options.topic, partition, offset: String(offset + 1) });
    });
  }

  /** Events read from Kafka before the follower caught up with the log as it was at start (skipped re-reads included). */
  get readAtStart(): number {
    return this.eventsReadAtStart;
  }

  /**
   * Per partition, the next offset to read: everything before it has been applied (or was an
   * aborted record or a transaction marker, which a read-committed consumer passes over). Read
   * between two applies, it matches the folded state exactly.
   */
  nextOffsets(): Map<number, number> {
    return new Map([...this.applied].map(([partition, offset]) => [partition, offset + 1]));
  }

  get ready(): boolean {
    return this.isCaughtUp;
  }

  /**
   * Starts following, from `from` (per partition, the next offset to read: where a snapshot of
   * the fold ends, or just past what the tasks read model covers) or from the beginning. Safe to
   * call again after it failed (a fresh cluster may answer "not the leader" for a moment): a
   * failed start leaves the consumer disconnected.
   */
  async start(from: ReadonlyMap<number, number> = new Map()): Promise<void> {
    for (const [partition, next] of from) if (next > 0) this.applied.set(partition, Math.max(this.applied.get(partition) ?? -1, next - 1));
    try {
      await this.follow();
    } catch (error) {
      await this.consumer.disconnect().catch(() => undefined);
      throw error;
    }
  }

  private async follow(): Promise<void> {
    const { admin, topic, codec, logger } = this.options;
    // The end of the log at start: once applied up to here, the fold is as current as the log was.
    const ends = await admin.fetchTopicOffsets(topic).catch((error: unknown) => {
      // A topic another process created a moment ago may be known to this broker without its
      // partitions yet (a cluster of several brokers): kafkajs then fails with a TypeError of its
      // own. It passes once the metadata has propagated, so it is said as a retriable failure.
      if (!(error instanceof TypeError)) throw error;
      throw Object.assign(new Error(`the partitions of ${topic} are not known yet`, { cause: error }), { retriable: true });
    });
    this.targets = new Map(ends.map((p) => [p.partition, Number(p.high) - 1]));
    await this.consumer.connect();
    await this.consumer.subscribe({ topic, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const partition = batch.partition;
        const events: Array<{ event: E; position: Position }> = [];
        for (const message of batch.messages) {
          const offset = Number(message.offset);
          if (!this.isCaughtUp) this.eventsReadAtStart++;
          // Each event is applied once. A join seeks past what is applied, but a seek back or a
          // batch fetched again may still bring an event twice; folds that count (a task's open
          // runs) must not count a re-read.
          if (offset <= (this.applied.get(partition) ?? -1)) continue;
          try {
            events.push({ event: codec.decode(message.value ?? Buffer.alloc(0)), position: { partition, offset } });
          } catch (error) {
            logger.error({ err: error, topic, partition, offset }, 'event skipped: it cannot be decoded');
          }
        }
        if (events.length > 0 && this.options.prepare) await this.options.prepare(events);
        for (const { event, position } of events) {
          if (position.offset <= (this.applied.get(partition) ?? -1)) continue;
          try {
            this.options.apply(event, position);
          } catch (error) {
            logger.error({ err: error, topic, partition, offset: position.offset }, 'event skipped: it cannot be applied');
          }
          this.applied.set(partition, position.offset);
          this.settle();
        }
      },
    });
    this.settle();
  }

  /** Resolves once the event at `position` (or a later one) has been applied here. */
  waitFor(position: Position | null, timeoutMs = 10_000): Promise<void> {
    if (position === null || this.hasApplied(position)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`event ${position.partition}/${position.offset} not applied within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        position,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /**
   * Resolves once everything in the topic now has been applied: read-your-writes across processes.
   * The end Kafka reports to a read-committed client can lag a transaction that has just
   * committed (its markers land a moment later), so the end is read again until it holds still.
   */
  async syncToEnd(timeoutMs = 10_000, partitions?: readonly number[]): Promise<void> {
    let previous = '';
    for (let round = 0; round < 4; round++) {
      const ends = [...(await topicEnds(this.options.admin, this.options.topic))].filter(
        ([partition, end]) => end > 0 && (partitions === undefined || partitions.includes(partition)),
      );
      const key = ends.map(([partition, end]) => `${partition}:${end}`).join(',');
      if (key === previous) return;
      previous = key;
      await Promise.all(ends.map(([partition, end]) => this.waitFor({ partition, offset: end - 1 }, timeoutMs)));
      if (this.options.writtenInTransactions === false) return;
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async stop(): Promise<void> {
    await this.consumer.disconnect();
  }

  private hasApplied(p: Position): boolean {
    return (this.applied.get(p.partition) ?? -1) >= p.offset;
  }

  private settle(): void {
    if (!this.isCaughtUp && this.targets && [...this.targets].every(([p, end]) => (this.applied.get(p) ?? -1) >= end)) {
      this.isCaughtUp = true;
      this.caughtUpResolve();
    }
    if (this.waiters.length > 0) {
      const still: typeof this.waiters = [];
      for (const w of this.waiters) {
        if (this.hasApplied(w.position)) w.resolve();
        else still.push(w);
      }
      this.waiters = still;
    }
  }
}
