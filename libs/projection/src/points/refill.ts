import { STAGE_HEADER, type ConsumedMessage, type LogRanges, type PointsFact } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { batchProblem, segmentRows, type Segment } from './segment.ts';
import type { StagedSeal } from './state.ts';

/** Where a refill writes: a stage's sink (libs/clickhouse's PointsSink has this shape). */
export type StageSink = { insert(segments: readonly Segment[]): Promise<void> };

/**
 * What a refill left out: batches the log holds but no points table may, so the stage is checked
 * against the seal's numbers less these, and a bad record never keeps a seal waiting.
 */
export type Omitted = { readonly points: number; readonly batches: number };

/** The attempt a record's meridian-stage header names (a shortcut for its `stage` field), if it has one. */
export function stageHeader(message: Pick<ConsumedMessage, 'headers'>): string | undefined {
  const value = message.headers?.[STAGE_HEADER];
  const first = Array.isArray(value) ? (value as ReadonlyArray<Buffer | string>)[0] : (value as Buffer | string | undefined);
  return first === undefined ? undefined : first.toString();
}

/** A staged seal as the stages' seal takes it (libs/clickhouse's StagedShare has this shape). */
export function sealedShare(seal: StagedSeal) {
  return {
    partition: seal.partition,
    sealOffset: seal.offset,
    taskId: seal.task_id,
    attempt: seal.attempt,
    points: seal.points,
    batches: seal.batches,
  };
}

export type RefillDeps = {
  readonly log: Pick<LogRanges, 'readRanges'>;
  readonly codec: EventCodec<PointsFact>;
  readonly topic: string;
  /** The read's own consumer group (deleted after it). */
  readonly groupId: string;
  /** Most rows per stage insert (MERIDIAN_PROJECTOR_BATCH_ROWS); a batch is never split. */
  readonly batchRows: number;
  /**
   * A batch of the share no points table may hold: the live projector dead-letters it and fails
   * its task, as the direct path does; a rebuild counts it.
   */
  readonly bad: (message: ConsumedMessage, taskId: string, reason: string) => Promise<void>;
};

/**
 * Fills a staged share's stage from the log (the stage is only a cache; a
 * rebuild has no stage of its own and always fills it so, the same way):
 * reads [first offset, seal) of its partition and inserts the batches of its attempt (by
 * header, else by the decoded `stage`), whole, in inserts of at most batchRows rows. Records of
 * other uploads in the range (direct ones, other attempts') are passed over. Returns what it
 * left out, so the stage is checked against the seal less that.
 */
export async function refillStage(deps: RefillDeps, seal: StagedSeal, stage: StageSink): Promise<Omitted> {
  let omittedPoints = 0;
  let omittedBatches = 0;
  let buffered: Segment[] = [];
  let rows = 0;
  const insert = async () => {
    if (buffered.length > 0) await stage.insert(buffered);
    buffered = [];
    rows = 0;
  };
  const range = { topic: deps.topic, partition: seal.partition, start: seal.firstOffset, end: seal.offset };
  for await (const batch of deps.log.readRanges([range], { groupId: deps.groupId, sequential: true })) {
    for (const message of batch.messages) {
      const header = stageHeader(message);
      if (header !== undefined && header !== seal.attempt) continue;
      let fact: PointsFact;
      try {
        fact = deps.codec.decode(message.value ?? Buffer.alloc(0));
      } catch (error) {
        // Undecodable without a header: not known to be this share's (the direct path dead-lettered it).
        if (header === undefined) continue;
        throw error;
      }
      if (fact.type !== 'PointBatch' || fact.stage !== seal.attempt) continue;
      if (fact.timestamps.length === 0) {
        omittedBatches += 1; // no rows, as the direct path skips it
        continue;
      }
      const problem = batchProblem(fact);
      if (problem !== null) {
        omittedPoints += fact.timestamps.length;
        omittedBatches += 1;
        await deps.bad(message, fact.task_id, problem);
        continue;
      }
      const segment: Segment = { batch: fact, partition: seal.partition, offset: Number(message.offset) };
      const n = segmentRows(segment);
      if (rows > 0 && rows + n > deps.batchRows) await insert();
      buffered.push(segment);
      rows += n;
    }
  }
  await insert();
  return { points: omittedPoints, batches: omittedBatches };
}
