import type { EventLike, EventCodec } from '@meridian/events';
import { TopicFollower, type Position } from '@meridian/kafka';
import type { Platform } from './platform.ts';

export type FoldOptions<E extends EventLike, S> = {
  readonly topic: string;
  /** Names the follower's consumer group (api, ingest, cli). */
  readonly role: string;
  readonly codec: EventCodec<E>;
  readonly initial: () => S;
  readonly apply: (state: S, event: E) => void;
};

/**
 * A topic folded into memory and kept current: the read side of accounts and tasks.
 * `start` resolves once the fold has caught up with the log as it was at start.
 */
export class FoldedTopic<E extends EventLike, S> {
  readonly state: S;
  private readonly follower: TopicFollower<E>;
  private readonly platform: Platform;

  constructor(platform: Platform, options: FoldOptions<E, S>) {
    this.platform = platform;
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
    });
  }

  get ready(): boolean {
    return this.follower.ready;
  }

  async start(): Promise<void> {
    await this.platform.admin.connect();
    await this.follower.start();
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

  stop(): Promise<void> {
    return this.follower.stop();
  }
}
