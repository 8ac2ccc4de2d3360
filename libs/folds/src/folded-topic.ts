import type { EventLike, EventCodec } from '@meridian/events';
import { snapshotPosition, unavailable, type LogWriter, type Position, type StateCodec } from '@meridian/domain';
import { appendEvents, type TopicFollower } from '@meridian/kafka';
import { withTimeout } from '@meridian/observability';
import { newestReadableSnapshot, SnapshotWriter } from './fold-snapshots.ts';
import type { FoldContext } from './fold-context.ts';
import { untilDone } from '@meridian/runtime';

/** Opt-in per fold: start from the newest snapshot plus the log's tail, and (a writer) write snapshots. */
export type FoldSnapshots<S> = {
  readonly codec: StateCodec<S>;
  /** True in a process that writes snapshots; otherwise it only starts from them. */
  readonly writes?: boolean;
};

export type FoldOptions<E extends EventLike, S> = {
  readonly topic: string;
  /** Names the follower's consumer group (api, ingest, cli). */
  readonly role: string;
  readonly codec: EventCodec<E>;
  readonly initial: () => S;
  readonly apply: (state: S, event: E) => void;
  /** False for a topic no transaction ever writes: syncToEnd then reads its end once. */
  readonly writtenInTransactions?: boolean;
  readonly snapshots?: FoldSnapshots<S>;
};

/** How a fold started: the snapshot it read (null: the log from offset 0) and the events it read after it until caught up. */
export type FoldStart = { readonly snapshotPosition: number | null; readonly offsets: Readonly<Record<number, number>>; readonly eventsRead: number };

/**
 * A topic folded into memory and kept current: the read side of accounts (tasks:
 * TasksStore, bounded by the read model). `start` resolves once the fold has caught up with the
 * log as it was at start. With snapshots it begins from the newest readable one (a cache of the
 * log: without one it folds from offset 0).
 */
export class FoldedTopic<E extends EventLike, S> {
  private current: S;
  private readonly follower: TopicFollower<E>;
  private readonly context: FoldContext;
  private readonly options: FoldOptions<E, S>;
  private writer: SnapshotWriter<S> | null = null;
  private started: FoldStart | null = null;
  /** The command running now: commands of one process run one at a time. */
  private commands: Promise<unknown> = Promise.resolve();

  constructor(context: FoldContext, options: FoldOptions<E, S>) {
    this.context = context;
    this.options = options;
    this.current = options.initial();
    this.follower = context.log.follower<E>({
      topic: options.topic,
      groupPrefix: `${context.groupPrefix}${options.role}-`,
      codec: options.codec,
      logger: context.logger.child({ component: options.topic }),
      apply: (event) => {
        options.apply(this.current, event);
        this.writer?.applied();
      },
      writtenInTransactions: options.writtenInTransactions,
    });
  }

  /** The folded state; replaced once at start when a snapshot is read, so read it through here each time. */
  get state(): S {
    return this.current;
  }

  get ready(): boolean {
    return this.follower.ready;
  }

  /** How this fold started (null until it has caught up); the api's /metrics shows `eventsRead`. */
  get startup(): FoldStart | null {
    return this.started;
  }

  /** Follows the topic, retrying what a fresh or busy Kafka answers at first (see untilDone). */
  async start(): Promise<void> {
    const { topic, snapshots } = this.options;
    const { limits, logger } = this.context;
    const began = performance.now();
    const store = snapshots ? this.context.snapshots(topic) : null;
    let from: ReadonlyMap<number, number> = new Map();
    let position: number | null = null;
    await untilDone(
      `following ${topic}`,
      async () => {
        await this.context.log.connectAdmin();
        if (store && snapshots && position === null) {
          const ends = await this.context.log.endOffsets(topic);
          const snapshot = await newestReadableSnapshot(store, snapshots.codec, topic, ends, logger, limits.readyTimeoutMs);
          if (snapshot) {
            this.current = snapshot.state;
            from = snapshot.offsets;
            position = snapshot.position;
          }
        }
        await this.follower.start(from);
      },
      logger,
      this.context.startRetry,
    );
    if (store && snapshots?.writes) {
      this.writer = new SnapshotWriter<S>(
        {
          store,
          codec: snapshots.codec,
          topic,
          logger,
          everyEvents: limits.snapshotEveryEvents,
          minIntervalMs: limits.snapshotMinIntervalMs,
          keep: limits.snapshotKeep,
          capture: () => ({ state: this.current, offsets: this.follower.nextOffsets() }),
          position: () => snapshotPosition(this.follower.nextOffsets()),
        },
        position ?? 0,
      );
    }
    await this.follower.caughtUp;
    this.started = { snapshotPosition: position, offsets: Object.fromEntries(from), eventsRead: this.follower.readAtStart };
    logger.info(
      { topic, snapshot: position, snapshot_offsets: this.started.offsets, events_read: this.started.eventsRead, ms: Math.round(performance.now() - began) },
      position === null ? 'fold caught up from offset 0' : 'fold caught up from a snapshot',
    );
  }

  /** Resolves once the event at `position` has been folded here. */
  waitFor(position: Position | null): Promise<void> {
    return this.follower.waitFor(position);
  }

  /** Resolves once every event written so far (to the given partitions, or all) has been folded here. */
  syncToEnd(partitions?: readonly number[]): Promise<void> {
    return this.follower.syncToEnd(10_000, partitions);
  }

  /**
   * Runs a command: decides on the log as it is now (read to its end first, so a command of
   * another process that was already acknowledged counts), appends the events under `key`, and
   * resolves once they are folded here, so the caller reads its own write. Commands of this
   * process run one at a time, so two concurrent requests never decide on the same state.
   * Processes that race each other are ordered by the log, and the fold keeps the first write.
   */
  execute(key: string, decide: (state: S) => E[], producer: LogWriter): Promise<E[]> {
    const { ackTimeoutMs } = this.context.limits;
    const run = async () => {
      await this.syncToEnd();
      const events = decide(this.state);
      let position: Position | null;
      try {
        // Bounded like an upload's append, so one stuck send cannot hold every command behind it.
        position = await withTimeout(appendEvents(producer, this.options.codec, this.options.topic, key, events), ackTimeoutMs, 'kafka');
      } catch (cause) {
        throw unavailable('kafka', 'the event log did not acknowledge the change in time; retry later', cause);
      }
      await this.waitFor(position);
      return events;
    };
    const result = this.commands.then(run, run);
    this.commands = result.catch(() => undefined);
    return result;
  }

  async stop(): Promise<void> {
    await this.writer?.stop();
    await this.follower.stop();
  }
}
