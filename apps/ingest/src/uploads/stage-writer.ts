import { withTimeout, type Logger } from '@meridian/observability';
import { segmentRows, type Segment } from '@meridian/projection';
import { BlockBuffer } from '@meridian/clickhouse';

/** Where a staged upload's rows are written aside (libs/clickhouse's PointsStages implements it). */
export interface UploadStage {
  /**
   * The stage of one attempt's share of a partition, created if missing; its inserts are whole
   * Native blocks (encoded into `blocks`), and `signal` gives one up (nothing stored unless the
   * server had all of it).
   */
  open(taskId: string, attempt: string, partition: number, blocks?: BlockBuffer): Promise<StageInserts>;
  /** Drops every stage of a task, whatever its attempt. */
  drop(taskId: string): Promise<void>;
}

/** What writes into one stage (libs/clickhouse's PointsSink). */
export type StageInserts = { insert(segments: readonly Segment[], signal?: AbortSignal): Promise<void> };

export type StageWriterOptions = {
  readonly taskId: string;
  /** This run of the upload (16 hex digits, random): its stages and its seals name it. */
  readonly attempt: string;
  /** Most rows per staging insert (MERIDIAN_PROJECTOR_BATCH_ROWS). */
  readonly batchRows: number;
  /** Longest wait for the stage inserts at finish or abandon, and for room over the whole upload (MERIDIAN_STAGE_FINISH_TIMEOUT_MS). */
  readonly finishTimeoutMs: number;
  /**
   * The command consumer's heartbeat, called at least every BEAT_EVERY_MS while the writer holds
   * the upload (room(), finish()): its waits may outlast the consumer's session timeout.
   */
  readonly heartbeat?: () => Promise<void>;
};

/** How often a wait of the writer's heartbeats (kafkajs sends one only once its interval has passed). */
const BEAT_EVERY_MS = 1000;

/** Whether `event`, which never rejects, happens within `ms`. */
const within = (event: Promise<unknown>, ms: number): Promise<boolean> =>
  withTimeout(event, ms, 'a stage insert').then(
    () => true,
    () => false,
  );

/**
 * Writes waiting for their turn that one partition may have (besides the one under way) while
 * the upload goes on: past it the upload waits for room (room()). Parsing can outrun
 * ClickHouse's inserts into the stages (the machine's cores are shared): in the 2-column case
 * of `make bench-ingest` it did, by about half, and a stage given up for that costs more than
 * the wait, since its seal refills it from the log (5 s for 10M points, after the commit).
 */
const ROOM_WAITING_PER_PARTITION = 1;

/**
 * The hard bound on a partition's waiting writes: one request's acknowledgement can add two
 * (its bytes bound, over batchRows) past room()'s check. A partition whose next write finds
 * this many waiting is given up at once rather than held in memory (with batchRows, this bounds
 * what the writer holds per partition to about five inserts).
 */
export const MOST_WAITING_PER_PARTITION = 3;

/**
 * Writes a staged upload's acknowledged batches aside into its stages while it is parsed,
 * one stage per points partition, in inserts of at most `batchRows`
 * rows of whole batches, one insert in flight. The stage is only a cache: the seal checks it
 * and refills it from the log when it is not what the seal says. So a failed insert (refused,
 * or of unknown outcome) marks its partition's stage broken: no retry, no more inserts there,
 * a warning, and the upload goes on; ClickHouse being down never fails an upload. A slow one
 * slows it (room(): the upload waits while a partition's writes pile up), but holds it past
 * finishTimeoutMs neither there nor at the end (the inserts still under way are then given up,
 * and the stages count as broken), nor fills the job's memory (MOST_WAITING_PER_PARTITION).
 *
 * Its first act is to drop the task's stages of earlier runs (a run killed before its commit
 * leaves them, and none of them will ever be sealed), so they go at the task's next run, not
 * at the sweeper's TTL.
 */
export class StageWriter {
  readonly attempt: string;
  private readonly stage: UploadStage;
  private readonly options: StageWriterOptions;
  private readonly logger: Logger;
  private readonly buffers = new Map<number, { segments: Segment[]; rows: number }>();
  private readonly broken = new Set<number>();
  /** Inserts queued or in flight, per partition. */
  private readonly writing = new Map<number, number>();
  /** The rows of the writes waiting for their turn, per partition (dropped when it breaks). */
  private readonly waiting = new Map<number, Segment[][]>();
  private readonly giveUp = new AbortController();
  /** Where every stage insert's block is encoded: they run one at a time. */
  private readonly blocks = new BlockBuffer();
  /** Each partition's stage, opened at its first insert. */
  private readonly stages = new Map<number, Promise<StageInserts>>();
  /** Told when an insert ends (room() waits on it). */
  private onWriteEnd: Array<() => void> = [];
  /** What room() has waited so far, over all its calls. */
  private roomWaitedMs = 0;
  private inFlight: Promise<void>;

  constructor(stage: UploadStage, options: StageWriterOptions, logger: Logger) {
    this.stage = stage;
    this.options = options;
    this.attempt = options.attempt;
    this.logger = logger;
    this.inFlight = stage
      .drop(options.taskId)
      .catch((error: unknown) => logger.warn({ err: error }, "dropping the stages of this task's earlier runs failed; the sweeper will"));
  }

  /** Partitions whose stage took a failed insert: their seals will refill them. */
  get brokenPartitions(): ReadonlySet<number> {
    return this.broken;
  }

  /**
   * Takes batches the log acknowledged, with their partition and offset; starts an insert for
   * a partition whose buffer reached batchRows (after the one in flight). Never throws.
   */
  add(segments: readonly Segment[]): void {
    for (const segment of segments) {
      const { partition } = segment;
      if (this.giveUp.signal.aborted) this.broken.add(partition);
      if (this.broken.has(partition)) continue;
      let buffer = this.buffers.get(partition) ?? { segments: [], rows: 0 };
      const rows = segmentRows(segment);
      if (buffer.rows > 0 && buffer.rows + rows > this.options.batchRows) {
        this.write(partition, buffer.segments, true);
        if (this.broken.has(partition)) continue;
        buffer = { segments: [], rows: 0 };
      }
      buffer.segments.push(segment);
      buffer.rows += rows;
      this.buffers.set(partition, buffer);
    }
  }

  /**
   * Resolves once every partition has room for its next write (at most
   * ROOM_WAITING_PER_PARTITION waiting): the upload calls it before each batch, so parsing
   * goes at ClickHouse's pace rather than past it. Waits at most finishTimeoutMs over all its
   * calls: past it every insert under way or waiting is given up and every stage of the upload
   * counts as broken (refilled at the seals), as at finish. Heartbeats while it waits; throws
   * only what the heartbeat throws.
   */
  async room(): Promise<void> {
    while (this.crowded()) {
      const left = this.options.finishTimeoutMs - this.roomWaitedMs;
      if (left <= 0) {
        this.giveUpAll(new Error(`the stages had no room for ${this.options.finishTimeoutMs} ms in all`), 'waiting for room');
        return;
      }
      const started = performance.now();
      await within(new Promise<void>((resolve) => this.onWriteEnd.push(resolve)), Math.min(left, BEAT_EVERY_MS));
      this.roomWaitedMs += performance.now() - started;
      await this.options.heartbeat?.();
    }
  }

  /**
   * Writes what is buffered and waits for every insert, at most finishTimeoutMs: the stages
   * are then as complete as they will be. Past the bound the inserts under way are given up
   * and their partitions count as broken (the seal waits for any that still runs on the server,
   * then refills). Heartbeats while it waits; throws only what the heartbeat throws.
   */
  async finish(): Promise<void> {
    // The last writes hold no more than the buffers did: not bounded.
    for (const [partition, buffer] of this.buffers) if (buffer.segments.length > 0) this.write(partition, buffer.segments, false);
    this.buffers.clear();
    await this.settled('finishing', this.options.heartbeat);
  }

  /** The upload aborted: waits for the insert in flight (at most finishTimeoutMs), then drops the task's stages (best effort: the sweeper drops what is left). */
  async abandon(): Promise<void> {
    this.buffers.clear();
    await this.settled('abandoning');
    await this.stage
      .drop(this.options.taskId)
      .catch((error: unknown) => this.logger.warn({ err: error, attempt: this.attempt }, "dropping an aborted upload's stages failed; the sweeper will"));
  }

  /** Waits for every insert, at most finishTimeoutMs, calling `heartbeat` every BEAT_EVERY_MS; past it gives every stage up. */
  private async settled(what: string, heartbeat?: () => Promise<void>): Promise<void> {
    const deadline = performance.now() + this.options.finishTimeoutMs;
    const done = this.inFlight; // never rejects: each write catches its own error
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0) {
        this.giveUpAll(new Error(`the staging inserts (${what}) did not end within ${this.options.finishTimeoutMs} ms`), what);
        return;
      }
      if (await within(done, Math.min(left, BEAT_EVERY_MS))) return;
      await heartbeat?.();
    }
  }

  /** Whether a partition has more writes waiting than room() lets the upload go on with. */
  private crowded(): boolean {
    for (const [partition, writes] of this.waiting) if (writes.length > ROOM_WAITING_PER_PARTITION && !this.broken.has(partition)) return true;
    return false;
  }

  /** ClickHouse did not keep up within finishTimeoutMs: every insert is given up, and every stage of the upload (written to or not) counts as broken from now on. */
  private giveUpAll(error: unknown, what: string): void {
    for (const partition of this.writing.keys()) this.broken.add(partition);
    this.waiting.clear();
    this.buffers.clear();
    this.giveUp.abort(error);
    this.logger.warn(
      { err: error, attempt: this.attempt, partitions: [...this.writing.keys()], while: what },
      "staging inserts given up (MERIDIAN_STAGE_FINISH_TIMEOUT_MS); these partitions' stages will be refilled from the log at the seal",
    );
  }

  private opened(partition: number): Promise<StageInserts> {
    let stage = this.stages.get(partition);
    if (stage === undefined) {
      stage = this.stage.open(this.options.taskId, this.attempt, partition, this.blocks);
      this.stages.set(partition, stage);
    }
    return stage;
  }

  /** Queues an insert of these rows behind the others; `bounded`: past MOST_WAITING_PER_PARTITION the partition breaks instead. */
  private write(partition: number, segments: Segment[], bounded: boolean): void {
    const waiting = this.waiting.get(partition) ?? [];
    if (bounded && waiting.length >= MOST_WAITING_PER_PARTITION) {
      this.broken.add(partition);
      this.waiting.delete(partition);
      this.buffers.delete(partition);
      this.logger.warn(
        { attempt: this.attempt, partition },
        "staging inserts fall behind the upload; this partition's stage is given up and will be refilled from the log at the seal",
      );
      return;
    }
    waiting.push(segments);
    this.waiting.set(partition, waiting);
    this.writing.set(partition, (this.writing.get(partition) ?? 0) + 1);
    this.inFlight = this.inFlight.then(async () => {
      // Its rows, unless the partition broke meanwhile (they were dropped with it).
      const rows = this.waiting.get(partition)?.shift();
      try {
        if (rows === undefined || this.broken.has(partition) || this.giveUp.signal.aborted) return;
        await (await this.opened(partition)).insert(rows, this.giveUp.signal);
      } catch (error) {
        this.broken.add(partition);
        this.logger.warn(
          { err: error, attempt: this.attempt, partition },
          "staging insert failed; this partition's stage will be refilled from the log at the seal",
        );
      } finally {
        const left = this.writing.get(partition)! - 1;
        if (left === 0) this.writing.delete(partition);
        else this.writing.set(partition, left);
        const waiters = this.onWriteEnd;
        this.onWriteEnd = [];
        for (const wake of waiters) wake();
      }
    });
  }
}
