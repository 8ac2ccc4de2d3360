import type { PointsFact } from '@meridian/domain';
import { batchProblem, segmentRows, type Segment } from './segment.ts';

/** An UploadSealed marker seen at `offset` of `partition`, waiting to be announced. */
export type Seal = { readonly task_id: string; readonly partition: number; readonly offset: number };

/**
 * The seal of a staged upload's share of one partition: its batches, in
 * [firstOffset, offset) and marked with `attempt`, were never buffered; the seal procedure
 * (libs/clickhouse's PointsStages.seal) moves them into the points table at this offset.
 */
export type StagedSeal = Seal & { readonly attempt: string; readonly points: number; readonly batches: number; readonly firstOffset: number };

/**
 * A deletion's marker seen at `offset` of `partition`: the rows of `metrics` in [fromMs, toMs]
 * from this partition's earlier offsets leave the table; the marker is then announced like a seal.
 */
export type Deletion = Seal & {
  readonly metrics: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
  /** Whether the rollups' buckets overlapping the range are computed again (a user's deletion), or kept (retention's). */
  readonly rollups: boolean;
};

/** What to do with one decoded message of the points topic. */
export type Decision =
  | { readonly kind: 'skip'; readonly why: string }
  | { readonly kind: 'buffer'; readonly segment: Segment; readonly rows: number }
  /** A staged upload's batch: its rows come in at its attempt's seal, never through the buffer. */
  | { readonly kind: 'staged'; readonly attempt: string }
  /**
   * A seal to announce. `leftStage`: a staged share's seal at or below the position (recorded),
   * read again; a crash between recording it and dropping its stage may have left that stage.
   */
  | { readonly kind: 'seal'; readonly seal: Seal; readonly leftStage?: string }
  /** A staged share to move in now: flush the buffer (every row before it), then seal it. */
  | { readonly kind: 'stagedSeal'; readonly seal: StagedSeal }
  /** A deletion to apply now: flush the buffer (every row before it), delete, record it, then announce it. */
  | { readonly kind: 'delete'; readonly deletion: Deletion }
  | { readonly kind: 'reject'; readonly reason: string };

const ATTEMPT = /^[0-9a-f]{16}$/;

/**
 * The projector's memory, without I/O: the sink's position per partition (the highest
 * PointBatch offset stored in ClickHouse, the authority on what is projected), the rows
 * buffered for the next insert, and the seals to announce once those rows are in.
 *
 * Messages at or below the sink's position are done: their rows are stored (a PointBatch)
 * or they were dead-lettered before any later row was written (garbage). Seals at or below
 * it are announced again, since a crash may have come between the insert and the
 * announcement; announcing twice is harmless (the task fold is idempotent).
 *
 * The position counts staged seals too (the sink reads max(kafka_offset) of points and
 * max(seal_offset) of the seals table): every record at or below it is handled, direct
 * batches inserted and staged shares attached. A staged batch below the position whose seal
 * lies above it is no gap: that seal brings it in.
 */
export class Projection {
  private readonly sinkMax = new Map<number, number>();
  private segments: Segment[] = [];
  private seals: Seal[] = [];
  private bufferedRows = 0;
  private bufferedSince: number | null = null;
  readonly batchRows: number;

  constructor(batchRows: number) {
    if (!Number.isInteger(batchRows) || batchRows < 1) throw new Error(`batchRows must be a positive integer, got ${batchRows}`);
    this.batchRows = batchRows;
  }

  /** Forgets everything: after a rebalance the sink positions must be read again and the buffer is void. */
  reset(): void {
    this.sinkMax.clear();
    this.clearBuffer();
  }

  knows(partition: number): boolean {
    return this.sinkMax.has(partition);
  }

  /** The highest PointBatch offset stored for `partition` (-1: none). */
  setSinkMax(partition: number, offset: number): void {
    this.sinkMax.set(partition, offset);
  }

  sinkPosition(partition: number): number | undefined {
    return this.sinkMax.get(partition);
  }

  /** True when the message at `offset` has been fully handled according to the sink. */
  inSink(partition: number, offset: number): boolean {
    const max = this.sinkMax.get(partition);
    if (max === undefined) throw new Error(`sink position of partition ${partition} not loaded`);
    return offset <= max;
  }

  /**
   * A record known as staged by its header alone (not decoded: a staged upload's batches are
   * most of its bytes). The header is a shortcut for the batch's `stage` field.
   */
  decideStaged(partition: number, offset: number, attempt: string): Decision {
    if (this.inSink(partition, offset)) return { kind: 'skip', why: 'already handled' };
    return { kind: 'staged', attempt };
  }

  decide(partition: number, offset: number, fact: PointsFact): Decision {
    switch (fact.type) {
      case 'PointBatch': {
        if (fact.stage != null) return this.decideStaged(partition, offset, fact.stage);
        if (this.inSink(partition, offset)) return { kind: 'skip', why: 'already in the sink' };
        const problem = batchProblem(fact);
        if (problem) return { kind: 'reject', reason: problem };
        if (fact.timestamps.length === 0) return { kind: 'skip', why: 'no points' };
        return { kind: 'buffer', segment: { batch: fact, partition, offset }, rows: segmentRows({ batch: fact, partition, offset }) };
      }
      case 'UploadSealed': {
        const seal = { task_id: fact.task_id, partition, offset };
        if (fact.stage == null) return { kind: 'seal', seal };
        // At or below the position a staged seal is recorded: only its announcement, and the drop of its stage, may be missing.
        if (this.inSink(partition, offset))
          return ATTEMPT.test(fact.stage.attempt) ? { kind: 'seal', seal, leftStage: fact.stage.attempt } : { kind: 'seal', seal };
        const { attempt, first_offset: firstOffset, batches } = fact.stage;
        if (
          !ATTEMPT.test(attempt) ||
          !Number.isSafeInteger(firstOffset) ||
          firstOffset < 0 ||
          firstOffset + batches > offset ||
          !Number.isSafeInteger(batches) ||
          batches < 1 ||
          !Number.isSafeInteger(fact.points) ||
          fact.points < 0
        ) {
          return {
            kind: 'reject',
            reason: `a staged seal that cannot be: attempt ${JSON.stringify(attempt)}, ${batches} batches from offset ${firstOffset}, ${fact.points} points, at offset ${offset}`,
          };
        }
        return { kind: 'stagedSeal', seal: { ...seal, attempt, points: fact.points, batches, firstOffset } };
      }
      case 'PointsDeleted': {
        const seal = { task_id: fact.task_id, partition, offset };
        // At or below the position a deletion is applied and recorded: only its announcement may be missing.
        if (this.inSink(partition, offset)) return { kind: 'seal', seal };
        if (!Number.isSafeInteger(fact.from_ms) || !Number.isSafeInteger(fact.to_ms) || fact.from_ms > fact.to_ms) {
          return { kind: 'reject', reason: `a deletion that cannot be: from ${fact.from_ms} to ${fact.to_ms}, at offset ${offset}` };
        }
        return { kind: 'delete', deletion: { ...seal, metrics: fact.metrics, fromMs: fact.from_ms, toMs: fact.to_ms, rollups: fact.rollups } };
      }
      default: {
        if (this.inSink(partition, offset)) return { kind: 'skip', why: 'already handled' };
        return { kind: 'reject', reason: `unexpected event type ${(fact as { type: string }).type} on the points topic` };
      }
    }
  }

  /** True when adding `rows` would make the next insert larger than batchRows (and it is not empty). */
  wouldOverflow(rows: number): boolean {
    return this.bufferedRows > 0 && this.bufferedRows + rows > this.batchRows;
  }

  add(segment: Segment, now: number): void {
    const last = this.segments.findLast((s) => s.partition === segment.partition);
    if (last && last.offset >= segment.offset) throw new Error(`segment ${segment.partition}/${segment.offset} buffered out of order`);
    this.segments.push(segment);
    this.bufferedRows += segmentRows(segment);
    this.bufferedSince ??= now;
  }

  /** A seal waits like a row: one alone in the buffer is written once it has lingered, whatever ends the next batch. */
  addSeal(seal: Seal, now: number): void {
    this.seals.push(seal);
    this.bufferedSince ??= now;
  }

  get rows(): number {
    return this.bufferedRows;
  }

  get hasSeals(): boolean {
    return this.seals.length > 0;
  }

  get isEmpty(): boolean {
    return this.segments.length === 0 && this.seals.length === 0;
  }

  get isFull(): boolean {
    return this.bufferedRows >= this.batchRows;
  }

  /** How long the oldest buffered row or seal has waited. */
  age(now: number): number {
    return this.bufferedSince === null ? 0 : now - this.bufferedSince;
  }

  /** What the next flush writes and then announces. */
  pending(): { readonly segments: readonly Segment[]; readonly seals: readonly Seal[]; readonly rows: number } {
    return { segments: this.segments, seals: this.seals, rows: this.bufferedRows };
  }

  /** Records that these segments are in the sink (an insert succeeded, or was found to have landed). */
  stored(segments: readonly Segment[]): void {
    for (const s of segments) {
      if ((this.sinkMax.get(s.partition) ?? -1) < s.offset) this.sinkMax.set(s.partition, s.offset);
    }
  }

  /** Records that a staged share is in the sink at its seal's offset (the seal procedure is done). */
  sealed(seal: StagedSeal): void {
    if (this.segments.some((s) => s.partition === seal.partition))
      throw new Error(`staged seal ${seal.partition}/${seal.offset} with rows of its partition still buffered`);
    if ((this.sinkMax.get(seal.partition) ?? -1) < seal.offset) this.sinkMax.set(seal.partition, seal.offset);
  }

  /** Records that a deletion is applied and recorded at its marker's offset (the buffer was flushed before it). */
  deleted(deletion: Deletion): void {
    if (this.segments.some((s) => s.partition === deletion.partition))
      throw new Error(`deletion ${deletion.partition}/${deletion.offset} with rows of its partition still buffered`);
    if ((this.sinkMax.get(deletion.partition) ?? -1) < deletion.offset) this.sinkMax.set(deletion.partition, deletion.offset);
  }

  /** Drops every buffered segment the sink already holds (after an insert of unknown outcome). */
  dropStored(): void {
    this.segments = this.segments.filter((s) => !this.inSink(s.partition, s.offset));
    this.bufferedRows = this.segments.reduce((n, s) => n + segmentRows(s), 0);
    if (this.isEmpty) this.bufferedSince = null;
  }

  clearBuffer(): void {
    this.segments = [];
    this.seals = [];
    this.bufferedRows = 0;
    this.bufferedSince = null;
  }
}
