import type { BatchPayload, TopicOffsets } from '@meridian/domain';
import type { Logger } from '@meridian/observability';

type Committer = Pick<BatchPayload, 'uncommittedOffsets' | 'commitOffsetsIfNecessary'>;

/**
 * The group's offsets that no command's transaction commits: what the batches resolved (the
 * events without a handler), committed once `intervalMs` has passed after a batch, whether more
 * come or not. At most one OffsetCommit an interval, and a group that goes idle is not left its
 * last events behind (its lag comes to 0). A commit refused by a rebalance or a stop is left to
 * the next owner, which reads those events again.
 *
 * Such a plain commit must never move a partition back behind a command's transaction. The
 * broker keeps, per partition, the offset whose record it appended last: a transaction's offset
 * is applied at its commit only if no plain commit of that partition was appended after it, and
 * a plain commit appended after the transaction's commit replaces it. An upload joins its offset
 * at the open of its transaction and runs for seconds, while the batch's resolved offsets still
 * stand before the command. A plain commit of them then leaves the group at an ended command, and
 * the partition's next owner reads it again. So a run claims its partition first (claim): the
 * partition is left out of the plain commits until its resolved offset has passed the run's
 * commands, and a plain commit already on its way (its offsets read before the claim) is
 * answered before the run starts.
 */
export class OffsetCommits {
  readonly #intervalMs: number;
  readonly #logger: Logger;
  /** Per partition, the offset after the commands of the last run claimed: plain commits stay at or past it. */
  readonly #floors = new Map<number, number>();
  /** The plain commit on its way, if any (at most one); settled, never rejected, once it has an answer. */
  #committing: Promise<void> = Promise.resolve();
  #inFlight = false;
  #due: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(intervalMs: number, logger: Logger) {
    this.#intervalMs = intervalMs;
    this.#logger = logger;
  }

  /**
   * After a batch: commits what is resolved once the interval has passed, unless a commit is
   * already due. One still unanswered then (a slow coordinator) is not queued behind: the next
   * is due an interval later, and reads the offsets afresh.
   */
  soon(payload: Committer): void {
    if (this.#stopped) return;
    this.#due ??= setTimeout(() => {
      this.#due = undefined;
      if (this.#inFlight) this.soon(payload);
      else this.#committing = this.#commit(payload);
    }, this.#intervalMs).unref();
  }

  /**
   * Before a run whose transaction commits `next` (the offset after its last command) on
   * `partition`: resolves once no plain commit that could land after the transaction's offset is
   * on its way, and keeps the partition out of the next ones until it is resolved that far.
   */
  async claim(partition: number, next: number): Promise<void> {
    this.#floors.set(partition, next);
    await this.#committing;
  }

  /** No commit is started any more (the consumer stops). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#due);
  }

  async #commit(payload: Committer): Promise<void> {
    if (this.#stopped) return;
    this.#inFlight = true;
    try {
      const offsets = atOrPastFloors(payload.uncommittedOffsets(), this.#floors);
      if (offsets.topics.length > 0) await payload.commitOffsetsIfNecessary(offsets);
    } catch (error) {
      // Never rejected: a claim awaits it, and a run must not fail over a commit it does not need.
      this.#logger.debug({ err: error }, 'an offset commit was refused; the next owner reads those events again');
    } finally {
      this.#inFlight = false;
    }
  }
}

/** The offsets without the partitions resolved short of their floor (a run of theirs may have committed further). */
export function atOrPastFloors(offsets: TopicOffsets, floors: ReadonlyMap<number, number>): TopicOffsets {
  return {
    topics: offsets.topics
      .map(({ topic, partitions }) => ({
        topic,
        partitions: partitions.filter(({ partition, offset }) => Number(offset) >= (floors.get(Number(partition)) ?? 0)),
      }))
      .filter(({ partitions }) => partitions.length > 0),
  };
}
