import { createHash, randomUUID } from 'node:crypto';
import type { BlockBuffer, Omitted } from '@meridian/projection';
import { deduplicatedInsertSettings, serverCapabilities } from '../capabilities.ts';
import type { ClickHouseSettings } from '@clickhouse/client';
import type { ClickHouseClient } from '../client.ts';
import { noneRunningWithin } from '../server-work.ts';
import { createPointsSink, type PointsSink } from './sink.ts';
import { ROLLUPS, rollupStatesSql, type Resolution } from '../rollups/sql.ts';

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

const ATTEMPT = /^[0-9a-f]{16}$/;

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

const IDENTIFIER = /^[.A-Za-z_][.A-Za-z0-9_]*$/;
/** Back-quoted (the 18.16 catalog's data table is `.inner.metric_catalog`). */
const quoted = (name: string) => {
  if (!IDENTIFIER.test(name)) throw new Error(`not a table name: ${name}`);
  return `\`${name}\``;
};

/** The task part of a stage's name: 64 bits of its id's SHA-256 (a task id is user-influenced text, never in a name). */
const taskDigest = (taskId: string) => createHash('sha256').update(taskId).digest('hex').slice(0, 16);

function checked(share: StagedShare): StagedShare {
  if (!ATTEMPT.test(share.attempt)) throw new Error(`not an attempt id: ${share.attempt}`);
  for (const n of [share.partition, share.sealOffset, share.points, share.batches]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not a seal of a staged share: ${JSON.stringify(share)}`);
  }
  return share;
}

/** The first and last timestamp (ms) of a stage's rows. */
type Span = { readonly first: number; readonly last: number };

/**
 * A task id that may be written as a string literal in a stage's DDL as it is: the api's are
 * UUIDs. Any other (a hand-written log) makes a stage whose inserts carry the task on every row.
 */
const PLAIN_TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export function createPointsStages(client: ClickHouseClient, targets: StageTargets = LIVE_STAGE_TARGETS, options: PointsStagesOptions = {}): PointsStages {
  const insertWaitMs = options.insertWaitMs ?? 30_000;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(targets.points)) throw new Error(`not a points table: ${targets.points}`);
  const points = quoted(targets.points);
  const catalog = quoted(targets.catalog);
  const seals = quoted(targets.seals);
  const sink = createPointsSink(client, targets.points, { catalogTable: targets.catalog, rollupTables: targets.rollups ?? {} });
  // Stages are named after their points table, so a rebuild's never meet the live projector's.
  const prefix = `${targets.points}_stage_`;
  /** A stage's name (task digest, attempt, partition), and the second stage that carries the rest of a partly attached one. */
  const stageTable = `^${prefix}[0-9a-f]{16}_[0-9a-f]{16}_p[0-9]+(_rest)?$`;
  /** Every ATTACH is named, so one still running after its client died can be waited for (the sink's positions wait too). */
  const attachPrefix = `points-attach:${targets.points}:`;
  const attachId = /^points-attach:[A-Za-z_][A-Za-z0-9_]*:[0-9a-f-]{36}$/;

  const rollupTargets = (Object.entries(targets.rollups ?? {}) as [Resolution, string][]).map(([resolution, table]) => ({ resolution, table }));

  /** A stage's share of a rollup's states (ATTACH runs no view), under a token of its seal where the rollup keeps tokens. */
  async function addRollupShare(rollup: { resolution: Resolution; table: string }, stage: string, share: StagedShare, fence: Fence): Promise<void> {
    fence();
    await named(
      `INSERT INTO ${quoted(rollup.table)} ${rollupStatesSql(rollup.resolution, stage)}`,
      deduplicatedInsertSettings(await serverCapabilities(client), `${rollup.table}:seal:${share.partition}=${share.sealOffset}`),
    );
  }

  async function rows<T>(query: string): Promise<T[]> {
    return (await client.query({ query, format: 'JSONEachRow' })).json<T>();
  }
  const number = async (query: string) => Number((await rows<{ n: string }>(`SELECT toString((${query})) AS n`))[0]!.n);
  const tableOf = (taskId: string, attempt: string, partition: number) => {
    if (!ATTEMPT.test(attempt) || !Number.isInteger(partition) || partition < 0) throw new Error(`not a stage: ${attempt}, ${partition}`);
    return `${prefix}${taskDigest(taskId)}_${attempt}_p${partition}`;
  };
  /** Names are made by tableOf (validated), never from user text. */
  /** A MergeTree table: a stage made `AS points` while a replay swap had `points` frozen is a Merge over other rows. */
  const isMergeTree = async (table: string) =>
    (await number(`SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = '${table}' AND engine = 'MergeTree'`)) === 1;
  /** Columns in order (DESCRIBE: 18.16's system.columns has no position). */
  const columns = async (table: string) => (await rows<{ name: string; type: string }>(`DESCRIBE TABLE ${table}`)).map((c) => `${c.name} ${c.type}`).join(', ');

  /**
   * Whether the stage holds exactly the seal's share (points' structure, its count of rows and of
   * batches, all of its partition), and if so the span of its timestamps, read in the same scan.
   */
  async function heldShare(stage: string, share: StagedShare, omitted: Omitted = { points: 0, batches: 0 }): Promise<Span | null> {
    if (!(await isMergeTree(stage))) return null;
    if ((await columns(stage)) !== (await columns(targets.points))) return null;
    const [held] = await rows<{ n: string; b: string; other: string; first: string; last: string }>(
      `SELECT toString(count()) AS n, toString(uniqExact(kafka_offset)) AS b, toString(countIf(kafka_partition != ${share.partition})) AS other, toString(min(ts)) AS first, toString(max(ts)) AS last FROM ${stage}`,
    );
    if (Number(held!.n) !== share.points - omitted.points || Number(held!.b) !== share.batches - omitted.batches || Number(held!.other) !== 0) return null;
    const span = { first: Number(held!.first), last: Number(held!.last) };
    if (!Number.isSafeInteger(span.first) || !Number.isSafeInteger(span.last))
      throw new Error(`stage ${stage} spans ${held!.first}..${held!.last}, not integer milliseconds`);
    return span;
  }

  /**
   * Rows of the stage's batches that points holds already: by metric and within the stage's span
   * of time (a primary-key range each), so a seal reads what the upload could have put there,
   * not the whole history of its metrics. The span's bounds are integers read from the stage.
   */
  const inPoints = (stage: string, partition: number, span: Span) =>
    `SELECT kafka_offset FROM ${points} WHERE metric_name IN (SELECT DISTINCT metric_name FROM ${stage}) AND ts >= ${span.first} AND ts <= ${span.last} AND kafka_partition = ${partition} AND kafka_offset IN (SELECT DISTINCT kafka_offset FROM ${stage})`;

  /**
   * Runs a write of the seal into points or the catalog under an attach id: one still running
   * after its client died is waited for (here, and by the sink's positions), so its outcome is
   * known before anything decides from what points or the catalog hold.
   */
  async function named(query: string, settings: ClickHouseSettings = {}): Promise<void> {
    const queryId = `${attachPrefix}${randomUUID()}`;
    try {
      await client.command({ query, query_id: queryId, clickhouse_settings: settings });
    } catch (error) {
      // Its outcome is known once the server is done with it; the caller's retry then finds what it did.
      await settle(queryId);
      throw error;
    }
  }

  const attach = (stage: string) => named(`ALTER TABLE ${points} ATTACH PARTITION tuple() FROM ${stage}`);

  async function settle(queryId: string): Promise<void> {
    if (!attachId.test(queryId)) throw new Error(`unexpected query id ${queryId}`);
    if (!(await noneRunningWithin(client, `query_id = '${queryId}'`, 300_000))) throw new Error(`attach ${queryId} still running after 300000 ms`);
  }

  /**
   * Inserts into the stage still running on the server (a writer that gave them up leaves them
   * running) are waited for, at most insertWaitMs, then killed: the stage is only a cache, so a
   * hung insert must not hold the partition's projection. Returns whether any was killed (the
   * stage is then refilled, whatever the killed ones left in it).
   */
  async function stopInserts(stage: string): Promise<boolean> {
    const running = `startsWith(query_id, 'points-insert:${stage}:')`;
    if (await noneRunningWithin(client, running, insertWaitMs)) return false;
    await client.command({ query: `KILL QUERY WHERE ${running} SYNC` });
    if (!(await noneRunningWithin(client, running, 300_000))) throw new Error(`inserts into ${stage} still running after KILL QUERY`);
    return true;
  }

  const dropTable = (table: string) => client.command({ query: `DROP TABLE IF EXISTS ${table}` });

  async function stageTables(filter: string): Promise<string[]> {
    return (
      await rows<{ name: string }>(
        `SELECT name FROM system.tables WHERE database = currentDatabase() AND match(name, '${stageTable}') AND ${filter} ORDER BY name`,
      )
    ).map((r) => r.name);
  }

  async function open(taskId: string, attempt: string, partition: number, blocks?: BlockBuffer): Promise<PointsSink> {
    const stage = tableOf(taskId, attempt, partition);
    await client.command({ query: `CREATE TABLE IF NOT EXISTS ${stage} AS ${points}` });
    if (!PLAIN_TASK_ID.test(taskId)) return createPointsSink(client, stage, blocks === undefined ? {} : { blocks });
    // Every row of the stage has this task and partition: as the stage's column defaults, the
    // inserts need not carry them (ATTACH PARTITION FROM compares names and types, not defaults,
    // on 18.16 and 26.9 alike, and points keeps its own columns). Again on every open: a process
    // killed between the two statements left the stage without them.
    await client.command({
      query: `ALTER TABLE ${stage} MODIFY COLUMN task_id String DEFAULT '${taskId}', MODIFY COLUMN kafka_partition UInt16 DEFAULT ${partition}`,
    });
    return createPointsSink(client, stage, { share: { taskId, partition }, ...(blocks === undefined ? {} : { blocks }) });
  }

  return {
    tableOf,
    open,

    async seal(given, refill, fence = () => {}) {
      const share = checked(given);
      const stage = tableOf(share.taskId, share.attempt, share.partition);
      const rest = `${stage}_rest`;
      const recorded = await number(`SELECT count() FROM ${seals} WHERE kafka_partition = ${share.partition} AND seal_offset = ${share.sealOffset}`);
      if (recorded > 0) {
        await dropTable(stage);
        await dropTable(rest);
        return { how: 'recorded before', refilled: false, points: 0 };
      }

      // A writer that gave up on a slow stage insert (it then counts the stage broken) leaves it
      // running on the server: the stage is only checked once no insert into it is under way,
      // so no late block can land after the check (and be attached twice over the refill).
      const killed = await stopInserts(stage);
      let refilled = false;
      // The rows the stage holds: the seal's, less what a refill left out (heldShare checked them).
      let held = share.points;
      let span = killed ? null : await heldShare(stage, share);
      if (span === null) {
        await dropTable(stage);
        const omitted = await refill(await open(share.taskId, share.attempt, share.partition));
        refilled = true;
        held = share.points - omitted.points;
        span = await heldShare(stage, share, omitted);
        if (span === null)
          throw new Error(`stage ${stage} does not hold the ${share.points} points in ${share.batches} batches its seal states, even refilled from the log`);
      }

      const attached = await number(`SELECT count() FROM (${inPoints(stage, share.partition, span)})`);
      let how: SealOutcome['how'] = 'found attached';
      let moved = 0;
      if (attached === 0) {
        fence();
        await attach(stage);
        // ATTACH runs no materialized view: the stage's share of the catalog goes in explicitly,
        // under a token of its seal where the catalog keeps tokens (an equal block of another
        // upload's share must not be dropped as a repeat of this one).
        fence();
        await named(
          `INSERT INTO ${catalog} SELECT metric_name, countState() AS points, minState(ts) AS first_ts, maxState(ts) AS last_ts FROM ${stage} GROUP BY metric_name`,
          deduplicatedInsertSettings(await serverCapabilities(client), `${targets.catalog}:seal:${share.partition}=${share.sealOffset}`),
        );
        // The rollups likewise, each under a token of its own.
        for (const rollup of rollupTargets) await addRollupShare(rollup, stage, share, fence);
        how = 'attached';
        moved = held;
      } else {
        // The stage's own count, not the seal's: a refill that left out a bad batch holds less.
        if (attached < (await number(`SELECT count() FROM ${stage}`))) {
          // A server that died inside a multi-part ATTACH: some of the stage's parts are in. Parts
          // hold whole batches (each stage insert is of whole batches), so the rest is the batches
          // points lacks, carried by a second stage.
          await dropTable(rest);
          await client.command({ query: `CREATE TABLE ${rest} AS ${points}` });
          await client.command({ query: `INSERT INTO ${rest} SELECT * FROM ${stage} WHERE kafka_offset NOT IN (${inPoints(stage, share.partition, span)})` });
          moved = await number(`SELECT count() FROM ${rest}`);
          fence();
          await attach(rest);
        }
        // Whatever of the catalog and rollup steps was done before the crash: each gets what it lacks.
        fence();
        const offsets = await rows<{ o: string }>(`SELECT DISTINCT toString(kafka_offset) AS o FROM ${stage}`);
        await sink.repairCatalog(offsets.map((r) => ({ partition: share.partition, offset: Number(r.o) })));
      }
      fence();
      // Named like the attach: a swap's freeze waits for every write of a seal under way (replay's freezeLive).
      await client.insert({
        table: targets.seals,
        format: 'JSONEachRow',
        values: [{ kafka_partition: share.partition, seal_offset: share.sealOffset, task_id: share.taskId, attempt: share.attempt }],
        query_id: `${attachPrefix}${randomUUID()}`,
      });
      await dropTable(stage);
      await dropTable(rest);
      return { how, refilled, points: moved };
    },

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
