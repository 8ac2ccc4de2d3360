import type { Producer } from 'kafkajs';
import type { EventLike, EventCodec } from '@meridian/events';
import { DomainError } from '@meridian/domain';
import { appendEvents, TopicFollower, type Position } from '@meridian/kafka';
import { withTimeout } from '@meridian/observability';
import type { Platform } from './platform.ts';
import { untilDone } from './until-done.ts';

export type FoldOptions<E extends EventLike, S> = {
  readonly topic: string;
  /** Names the follower's consumer group (api, ingest, cli). */
  readonly role: string;
  readonly codec: EventCodec<E>;
  readonly initial: () => S;
  readonly apply: (state: S, event: E) => void;
  /** False for a topic no transaction ever writes: syncToEnd then reads its end once. */
  readonly writtenInTransactions?: boolean;
};

/**
 * A topic folded into memory and kept current: the read side of accounts and files (tasks: TasksStore, bounded by the read model).
 * `start` resolves once the fold has caught up with the log as it was at start.
 */
export class FoldedTopic<E extends EventLike, S> {
  readonly state: S;
  private readonly follower: TopicFollower<E>;
  private readonly platform: Platform;
  private readonly options: FoldOptions<E, S>;
  /** The command running now: commands of one process run one at a time. */
  private commands: Promise<unknown> = Promise.resolve();

  constructor(platform: Platform, options: FoldOptions<E, S>) {
    this.platform = platform;
    this.options = options;
    const state = options.initial();
    this.state = state;
    this.follower = new TopicFollower<E>({
      kafka: platform.kafka,
      admin: platform.admin,
      topic: options.topic,
      groupPrefix: `${platform.settings.MERIDIAN_TOPIC_PREFIX}${options.role}-`,
      codec: options.codec,
      logger: platform.logger.child({ component: options.topic }),
      apply: (event) => options.apply(state, event),
      writtenInTransactions: options.writtenInTransactions,
    });
  }

  get ready(): boolean {
    return this.follower.ready;
  }

  /** Follows the topic, retrying what a fresh or busy Kafka answers at first (see untilDone). */
  async start(): Promise<void> {
    await untilDone(`following ${this.options.topic}`, async () => {
      await this.platform.admin.connect();
      await this.follower.start();
    }, this.platform.logger, this.platform.startRetry);
    await this.follower.caughtUp;
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
  execute(key: string, decide: (state: S) => E[], producer: Producer): Promise<E[]> {
    const ackTimeoutMs = this.platform.settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS;
    const run = async () => {
      await this.syncToEnd();
      const events = decide(this.state);
      let position: Position | null;
      try {
        // Bounded like an upload's append, so one stuck send cannot hold every command behind it.
        position = await withTimeout(appendEvents(producer, this.options.codec, this.options.topic, key, events), ackTimeoutMs, 'kafka');
      } catch (cause) {
        throw new DomainError('unavailable', 'the event log did not acknowledge the change in time; retry later', [], { cause });
      }
      await this.waitFor(position);
      return events;
    };
    const result = this.commands.then(run, run);
    this.commands = result.catch(() => undefined);
    return result;
  }

  stop(): Promise<void> {
    return this.follower.stop();
  }
}
