import type { Omitted } from '@meridian/projection';
import type { BlockBuffer } from './native-block.ts';
import type { ClickHouseClient } from '../client.ts';
import type { PointsSink } from './sink.ts';
import { ROLLUPS, type Resolution } from '../rollups/sql.ts';
import { stageNames, stageReads, stageWrites, taskDigest } from './stage-parts.ts';
import { sealShare } from './stage-seal.ts';

/** One staged upload's share of one points partition, as the upload's seal in that partition states it. */
export type StagedShare = {
  readonly partition: number;
  /** The seal's offset: the share becomes part of points there. */
  readonly sealOffset: number;
  readonly taskId: string;
  /** The run of the upload that wrote it (16 hex digits): names its stage tables. */
  readonly attempt: string;
  readonly points: number;
  readonly batches: number;
};

/**
 * How a seal went: attached now; found attached already (a crash after the ATTACH: only the
 * catalog and the seal's record were completed); or recorded before (a seal read again).
 * `refilled`: the stage was missing or not what the seal says, and was filled again.
 */
/** How a seal went, and the rows it moved into the points table (none when they were there already, as after a crash or under a rebuild's --from). */
export type SealOutcome = { readonly how: 'attached' | 'found attached' | 'recorded before'; readonly refilled: boolean; readonly points: number };

/**
 * Staging tables of the live points table (docs/using/behaviour.md, "Staged uploads"): an upload's
 * rows written aside per (attempt, partition) while it is parsed, in tables nobody reads, and
 * moved into `points` when its seal is committed. A stage is only a cache: at the seal it is
 * checked against what the seal says, and filled again from the log (the caller's `refill`)
 * when it is missing, short, over-full or of another structure, so losing one costs time, never
 * a point. Not for a replicated points table (an ATTACH there is replicated outside the insert
 * quorum; the cluster keeps projecting directly).
 */
export type PointsStages = {
  /**
   * The stage of one attempt's share of a partition: <points>_stage_<task>_<attempt>_p<partition>
   * (points_stage_… for the live table), where <task> is a digest of the task id (16 hex digits),
   * so that a task's next run finds the stages its killed runs left (drop).
   */
  tableOf(taskId: string, attempt: string, partition: number): string;
  /**
   * Creates the stage if it is missing (shaped AS points) and returns the sink that fills it;
   * its blocks are encoded into `blocks` when given (a writer's, shared by its stages).
   */
  open(taskId: string, attempt: string, partition: number, blocks?: BlockBuffer): Promise<PointsSink>;
  /**
   * Moves a committed share into points, exactly once whatever was done of it before a crash:
   * the stage checked (or refilled), attached unless its rows are in points already (the rest
   * of a partly attached stage through a second stage), its share added to the metric catalog
   * (which ATTACH does not feed), the seal recorded in the seals table, the stage dropped.
   * Inserts into the stage still running are waited for (insertWaitMs), then killed and the stage
   * refilled. `fence` is called right before each write into points, the catalog or the seals table.
   */
  seal(share: StagedShare, refill: (stage: PointsSink) => Promise<Omitted>, fence?: Fence): Promise<SealOutcome>;
  /**
   * Drops every stage of a task, whatever its attempt: an upload that aborted, or a task run
   * again after its earlier run was killed (those stages would wait for the sweeper). Safe
   * even for a committed attempt's stage: its seal refills it from the log.
   */
  drop(taskId: string): Promise<void>;
  /**
   * Drops the stage of a share whose seal is recorded (a seal read again: the process that
   * recorded it may have died before dropping its stage). Never attaches anything.
   */
  dropSealed(taskId: string, attempt: string, partition: number): Promise<void>;
  /** Drops the stages made at least `ageMs` ago (abandoned: a crashed upload's); returns their names. */
  sweep(ageMs: number): Promise<string[]>;
  /**
   * The stages there are now that hold rows of their own (MergeTree; not one made while a replay
   * swap had the points table frozen): a share attached whose seal is not recorded yet keeps its
   * stage until then, so a swap's frozen position can leave its rows out.
   */
  list(): Promise<string[]>;
};

/**
 * Throws once the caller no longer owns the share's partition (the projector's consumer lost it
 * in a rebalance, or is stopping). The seal calls it right before each write into points, the
 * catalog or the seals table: a seal that outlasted its ownership stops before writing, and the
 * partition's new owner seals the share (two owners each attaching it would store it twice,
 * since ATTACH FROM copies and leaves its source).
 */
export type Fence = () => void;

export type PointsStagesOptions = {
  /**
   * Longest a seal waits for inserts into its stage still running on the server (a writer gave
   * them up: MERIDIAN_STAGE_INSERT_WAIT_MS) before killing them and refilling the stage from the log.
   */
  readonly insertWaitMs?: number;
};

/**
 * The tables a share is sealed into: the live ones, or a rebuild's (a generation's points_g<N>,
 * its catalog table and points_seals_g<N>; or those of a separate database).
 */
export type StageTargets = {
  readonly points: string;
  /** Where the share's catalog states go (ATTACH runs no view): the catalog's view or its data table. */
  readonly catalog: string;
  readonly seals: string;
  /** Where the share's rollup states go (migration 010), by resolution; none for a rebuild, whose rollups are made at its swap. */
  readonly rollups?: Readonly<Record<Resolution, string>>;
};

export const LIVE_STAGE_TARGETS: StageTargets = {
  points: 'points',
  catalog: 'metric_catalog',
  seals: 'points_seals',
  rollups: { '1m': ROLLUPS['1m'].table, '1h': ROLLUPS['1h'].table },
};

export function createPointsStages(client: ClickHouseClient, targets: StageTargets = LIVE_STAGE_TARGETS, options: PointsStagesOptions = {}): PointsStages {
  const insertWaitMs = options.insertWaitMs ?? 30_000;
  const names = stageNames(targets);
  const { prefix, tableOf } = names;
  const reads = stageReads(client, targets, names);
  const { stageTables } = reads;
  const writes = stageWrites(client, targets, names, insertWaitMs);
  const { dropTable, open } = writes;

  return {
    tableOf,
    open,

    seal: (given, refill, fence) => sealShare(client, targets, names, reads, writes, given, refill, fence),

    async dropSealed(taskId, attempt, partition) {
      const stage = tableOf(taskId, attempt, partition);
      await dropTable(stage);
      await dropTable(`${stage}_rest`);
    },

    async drop(taskId) {
      for (const table of await stageTables(`startsWith(name, '${prefix}${taskDigest(taskId)}_')`)) await dropTable(table);
    },

    list: () => stageTables(`engine = 'MergeTree'`),

    async sweep(ageMs) {
      if (!Number.isInteger(ageMs) || ageMs < 0) throw new Error(`not an age: ${ageMs}`);
      const old = await stageTables(`metadata_modification_time <= now() - ${Math.floor(ageMs / 1000)}`);
      for (const table of old) await dropTable(table);
      return old;
    },
  };
}
