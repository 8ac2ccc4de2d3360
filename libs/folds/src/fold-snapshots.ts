import { decodeSnapshot, encodeSnapshot, snapshotPosition, type Snapshot, type SnapshotStore, type StateCodec } from '@meridian/domain';
import { withTimeout, type Logger } from '@meridian/observability';

/**
 * The newest snapshot of `topic` this build can read, or null. One that cannot be read (damaged,
 * of another version, or covering offsets past the log's end: a topic made anew under the same
 * name) is skipped with a warning for the next older one; with none, the fold starts at offset 0.
 */
export async function newestReadableSnapshot<S>(
  store: SnapshotStore,
  codec: StateCodec<S>,
  topic: string,
  ends: ReadonlyMap<number, number>,
  logger: Logger,
  listTimeoutMs: number,
): Promise<(Snapshot<S> & { position: number }) | null> {
  let positions: number[];
  try {
    // Bounded: an unreachable store costs a start from offset 0, never a start that hangs.
    positions = await withTimeout(store.positions(), listTimeoutMs, 'the snapshot store');
  } catch (err) {
    logger.warn({ err, topic }, 'snapshots could not be listed; folding the log from offset 0');
    return null;
  }
  for (const position of positions) {
    try {
      const snapshot = decodeSnapshot(codec, topic, await store.read(position));
      for (const [partition, next] of snapshot.offsets) {
        if (next > (ends.get(partition) ?? 0)) throw new Error(`it covers partition ${partition} up to ${next}, past the log's end`);
      }
      return { ...snapshot, position };
    } catch (err) {
      logger.warn({ err, topic, position }, 'snapshot skipped: it cannot be read');
    }
  }
  return null;
}

export type SnapshotWriterOptions<S> = {
  readonly store: SnapshotStore;
  readonly codec: StateCodec<S>;
  readonly topic: string;
  readonly logger: Logger;
  /** MERIDIAN_SNAPSHOT_EVERY_EVENTS (0: never), MERIDIAN_SNAPSHOT_MIN_INTERVAL_MS, MERIDIAN_SNAPSHOT_KEEP. */
  readonly everyEvents: number;
  readonly minIntervalMs: number;
  readonly keep: number;
  /** The state and the next offsets it covers; called between two applies, where they match. */
  readonly capture: () => Snapshot<S>;
  /** The fold's position now (the sum of its next offsets). */
  readonly position: () => number;
};

/**
 * Writes a snapshot once the fold is `everyEvents` offsets past the newest snapshot this process
 * has seen (its own, the one it started from, or another process's found at write time), at most
 * every `minIntervalMs`, and keeps the newest `keep`. Writes run from a timer, never inside an
 * apply, so the state and its offsets are taken together between two events.
 */
export class SnapshotWriter<S> {
  private seen: number;
  private lastAttempt = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly options: SnapshotWriterOptions<S>;

  constructor(options: SnapshotWriterOptions<S>, seen: number) {
    this.options = options;
    this.seen = seen;
  }

  /** Called after each event is folded: cheap unless a snapshot is due. */
  applied(): void {
    if (this.timer || this.running || this.stopped || this.options.everyEvents === 0) return;
    if (this.options.position() - this.seen < this.options.everyEvents) return;
    const wait = Math.max(0, this.lastAttempt + this.options.minIntervalMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.write().finally(() => {
        this.running = null;
        this.applied(); // still due (the write failed): try again after the interval
      });
    }, wait);
    this.timer.unref();
  }

  private async write(): Promise<void> {
    const { store, codec, topic, logger } = this.options;
    this.lastAttempt = Date.now();
    try {
      this.seen = Math.max(this.seen, (await store.positions())[0] ?? 0);
      if (this.options.position() - this.seen < this.options.everyEvents) return; // another process wrote one
      // Taken and serialized in one synchronous step: no event is folded in between.
      const started = performance.now();
      const snapshot = this.options.capture();
      const document = encodeSnapshot(codec, topic, snapshot);
      const position = snapshotPosition(snapshot.offsets);
      const took = Math.round(performance.now() - started);
      await store.put(position, document);
      this.seen = position;
      await store.prune(this.options.keep);
      logger.info({ topic, position, offsets: Object.fromEntries(snapshot.offsets), bytes: document.length, serialize_ms: took }, 'snapshot written');
    } catch (err) {
      logger.warn({ err, topic }, 'snapshot not written; trying again later');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
