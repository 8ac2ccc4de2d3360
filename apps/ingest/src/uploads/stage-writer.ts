import { withTimeout, type Logger } from '@meridian/observability';
import { segmentRows, type Segment } from '@meridian/projection';

/** Where a staged upload's rows are written aside (libs/clickhouse's PointsStages implements it). */
export interface UploadStage {
  /**
   * The stage of one attempt's share of a partition, created if missing; its inserts are whole
   * Native blocks, and `signal` gives one up (nothing stored unless the server had all of it).
   */
  open(taskId: string, attempt: string, partition: number): Promise<{ insert(segments: readonly Segment[], signal?: AbortSignal): Promise<void> }>;
  /** Drops every stage of a task, whatever its attempt. */
  drop(taskId: string): Promise<void>;
}

export type StageWriterOptions = {
  readonly taskId: string;
  /** This run of the upload (16 hex digits, random): its stages and its seals name it. */
  readonly attempt: string;
  /** Most rows per staging insert (MERIDIAN_PROJECTOR_BATCH_ROWS). */
  readonly batchRows: number;
  /** Longest wait for the stage inserts at finish or abandon (MERIDIAN_STAGE_FINISH_TIMEOUT_MS). */
  readonly finishTimeoutMs: number;
};

/**
 * Writes waiting for their turn that one partition may have (besides the one under way): a
 * partition whose next write finds it has this many waiting already is behind (ClickHouse is
 * slower than the upload), and its stage is given up at once rather than held in memory
 * (with batchRows, this bounds what the writer holds per partition to about five inserts).
 * One was too few: the inserts of every partition take turns, and at 1.1M rows/s of parsing
 * one slow insert broke a partition in two of three 10M-row uploads of `make bench-ingest`'s
 * download-layout case, whose seal then refilled it from the log (2.4 s more).
 */
export const MOST_WAITING_PER_PARTITION = 3;

/**
 * Writes a staged upload's acknowledged batches aside into its stages while it is parsed
 * (issue 15), one stage per points partition, in inserts of at most `batchRows`
 * rows of whole batches, one insert in flight. The stage is only a cache: the seal checks it
 * and refills it from the log when it is not what the seal says. So a failed insert (refused,
 * or of unknown outcome) marks its partition's stage broken: no retry, no more inserts there,
 * a warning, and the upload goes on; ClickHouse being down never fails an upload, nor does a
 * slow one hold it past finishTimeoutMs (the inserts still under way are given up, and their
 * partitions counted broken), nor fill the job's memory: a partition whose writes pile up
 * (MOST_WAITING_PER_PARTITION) is counted broken at once and its rows dropped.
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
  private inFlight: Promise<void>;

  constructor(stage: UploadStage, options: StageWriterOptions, logger: Logger) {
    this.stage = stage;
    this.options = options;
    this.attempt = options.attempt;
    this.logger = logger;
    this.inFlight = stage.drop(options.taskId).catch((error: unknown) => logger.warn({ err: error }, 'dropping the stages of this task\'s earlier runs failed; the sweeper will'));
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
   * Writes what is buffered and waits for every insert, at most finishTimeoutMs: the stages
   * are then as complete as they will be. Past the bound the inserts under way are given up
   * and their partitions count as broken (the seal waits for any that still runs on the server,
   * then refills). Never throws.
   */
  async finish(): Promise<void> {
    // The last writes hold no more than the buffers did: not bounded.
    for (const [partition, buffer] of this.buffers) if (buffer.segments.length > 0) this.write(partition, buffer.segments, false);
    this.buffers.clear();
    await this.settled('finishing');
  }

  /** The upload aborted: waits for the insert in flight (at most finishTimeoutMs), then drops the task's stages (best effort: the sweeper drops what is left). */
  async abandon(): Promise<void> {
    this.buffers.clear();
    await this.settled('abandoning');
    await this.stage.drop(this.options.taskId).catch((error: unknown) => this.logger.warn({ err: error, attempt: this.attempt }, 'dropping an aborted upload\'s stages failed; the sweeper will'));
  }

  private async settled(what: string): Promise<void> {
    try {
      await withTimeout(this.inFlight, this.options.finishTimeoutMs, `the staging inserts (${what})`);
    } catch (error) {
      for (const partition of this.writing.keys()) this.broken.add(partition);
      this.giveUp.abort(error);
      this.logger.warn({ err: error, attempt: this.attempt, partitions: [...this.writing.keys()] }, 'staging inserts given up (MERIDIAN_STAGE_FINISH_TIMEOUT_MS); these partitions\' stages will be refilled from the log at the seal');
    }
  }

  /** Queues an insert of these rows behind the others; `bounded`: past MOST_WAITING_PER_PARTITION the partition breaks instead. */
  private write(partition: number, segments: Segment[], bounded: boolean): void {
    const waiting = this.waiting.get(partition) ?? [];
    if (bounded && waiting.length >= MOST_WAITING_PER_PARTITION) {
      this.broken.add(partition);
      this.waiting.delete(partition);
      this.buffers.delete(partition);
      this.logger.warn({ attempt: this.attempt, partition }, 'staging inserts fall behind the upload; this partition\'s stage is given up and will be refilled from the log at the seal');
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
        await (await this.stage.open(this.options.taskId, this.attempt, partition)).insert(rows, this.giveUp.signal);
      } catch (error) {
        this.broken.add(partition);
        this.logger.warn({ err: error, attempt: this.attempt, partition }, 'staging insert failed; this partition\'s stage will be refilled from the log at the seal');
      } finally {
        const left = this.writing.get(partition)! - 1;
        if (left === 0) this.writing.delete(partition);
        else this.writing.set(partition, left);
      }
    });
  }
}
