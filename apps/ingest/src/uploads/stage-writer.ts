import type { Logger } from '@meridian/observability';
import { segmentRows, type Segment } from '@meridian/projection';

/** Where a staged upload's rows are written aside (libs/clickhouse's PointsStages implements it). */
export interface UploadStage {
  /** The stage of one attempt's share of a partition, created if missing; its inserts are whole Native blocks. */
  open(attempt: string, partition: number): Promise<{ insert(segments: readonly Segment[]): Promise<void> }>;
  /** Drops every stage of an attempt. */
  drop(attempt: string): Promise<void>;
}

/**
 * Writes a staged upload's acknowledged batches aside into its stages while it is parsed
 * (issue 15, design D), one stage per points partition, in inserts of at most `batchRows`
 * rows of whole batches, one insert in flight. The stage is only a cache: the seal checks it
 * and refills it from the log when it is not what the seal says. So a failed insert (refused,
 * or of unknown outcome) marks its partition's stage broken: no retry, no more inserts there,
 * a warning, and the upload goes on; ClickHouse being down never fails an upload.
 */
export class StageWriter {
  readonly attempt: string;
  private readonly stage: UploadStage;
  private readonly batchRows: number;
  private readonly logger: Logger;
  private readonly buffers = new Map<number, { segments: Segment[]; rows: number }>();
  private readonly broken = new Set<number>();
  private inFlight: Promise<void> = Promise.resolve();

  constructor(stage: UploadStage, attempt: string, batchRows: number, logger: Logger) {
    this.stage = stage;
    this.attempt = attempt;
    this.batchRows = batchRows;
    this.logger = logger;
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
      if (this.broken.has(segment.partition)) continue;
      const buffer = this.buffers.get(segment.partition) ?? { segments: [], rows: 0 };
      const rows = segmentRows(segment);
      if (buffer.rows > 0 && buffer.rows + rows > this.batchRows) {
        this.write(segment.partition, buffer.segments);
        buffer.segments = [];
        buffer.rows = 0;
      }
      buffer.segments.push(segment);
      buffer.rows += rows;
      this.buffers.set(segment.partition, buffer);
    }
  }

  /** Writes what is buffered and waits for every insert: the stages are then as complete as they will be. */
  async finish(): Promise<void> {
    for (const [partition, buffer] of this.buffers) if (buffer.segments.length > 0) this.write(partition, buffer.segments);
    this.buffers.clear();
    await this.inFlight;
  }

  /** The upload aborted: waits for the insert in flight, then drops the attempt's stages (best effort: the sweeper drops what is left). */
  async abandon(): Promise<void> {
    this.buffers.clear();
    await this.inFlight;
    await this.stage.drop(this.attempt).catch((error: unknown) => this.logger.warn({ err: error, attempt: this.attempt }, 'dropping an aborted upload\'s stages failed; the sweeper will'));
  }

  private write(partition: number, segments: readonly Segment[]): void {
    this.inFlight = this.inFlight.then(async () => {
      if (this.broken.has(partition)) return;
      try {
        await (await this.stage.open(this.attempt, partition)).insert(segments);
      } catch (error) {
        this.broken.add(partition);
        this.logger.warn({ err: error, attempt: this.attempt, partition }, 'staging insert failed; this partition\'s stage will be refilled from the log at the seal');
      }
    });
  }
}
