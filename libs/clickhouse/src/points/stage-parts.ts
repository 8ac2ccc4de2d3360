import { createHash, randomUUID } from 'node:crypto';
import type { Omitted } from '@meridian/projection';
import type { BlockBuffer } from './native-block.ts';
import { deduplicatedInsertSettings, serverCapabilities } from '../capabilities.ts';
import type { ClickHouseSettings } from '@clickhouse/client';
import type { ClickHouseClient } from '../client.ts';
import { noneRunningWithin } from '../server-work.ts';
import { createPointsSink, type PointsSink } from './sink.ts';
import { rollupStatesSql, type Resolution } from '../rollups/sql.ts';
import type { Fence, StagedShare, StageTargets } from './stage.ts';

const ATTEMPT = /^[0-9a-f]{16}$/;

const IDENTIFIER = /^[.A-Za-z_][.A-Za-z0-9_]*$/;
/** Back-quoted (the 18.16 catalog's data table is `.inner.metric_catalog`). */
export const quoted = (name: string) => {
  if (!IDENTIFIER.test(name)) throw new Error(`not a table name: ${name}`);
  return `\`${name}\``;
};

/** The task part of a stage's name: 64 bits of its id's SHA-256 (a task id is user-influenced text, never in a name). */
export const taskDigest = (taskId: string) => createHash('sha256').update(taskId).digest('hex').slice(0, 16);

export function checked(share: StagedShare): StagedShare {
  if (!ATTEMPT.test(share.attempt)) throw new Error(`not an attempt id: ${share.attempt}`);
  for (const n of [share.partition, share.sealOffset, share.points, share.batches]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not a seal of a staged share: ${JSON.stringify(share)}`);
  }
  return share;
}

/** The first and last timestamp (ms) of a stage's rows. */
export type Span = { readonly first: number; readonly last: number };

/**
 * A task id that may be written as a string literal in a stage's DDL as it is: the api's are
 * UUIDs. Any other (a hand-written log) makes a stage whose inserts carry the task on every row.
 */
const PLAIN_TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The names a points table's stages are made of, checked: its tables quoted, the stages' prefix and patterns. */
export type StageNames = ReturnType<typeof stageNames>;

export function stageNames(targets: StageTargets) {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(targets.points)) throw new Error(`not a points table: ${targets.points}`);
  const points = quoted(targets.points);
  const catalog = quoted(targets.catalog);
  const seals = quoted(targets.seals);
  // Stages are named after their points table, so a rebuild's never meet the live projector's.
  const prefix = `${targets.points}_stage_`;
  /** A stage's name (task digest, attempt, partition), and the second stage that carries the rest of a partly attached one. */
  const stageTable = `^${prefix}[0-9a-f]{16}_[0-9a-f]{16}_p[0-9]+(_rest)?$`;
  /** Every ATTACH is named, so one still running after its client died can be waited for (the sink's positions wait too). */
  const attachPrefix = `points-attach:${targets.points}:`;
  const attachId = /^points-attach:[A-Za-z_][A-Za-z0-9_]*:[0-9a-f-]{36}$/;
  const tableOf = (taskId: string, attempt: string, partition: number) => {
    if (!ATTEMPT.test(attempt) || !Number.isInteger(partition) || partition < 0) throw new Error(`not a stage: ${attempt}, ${partition}`);
    return `${prefix}${taskDigest(taskId)}_${attempt}_p${partition}`;
  };
  return { points, catalog, seals, prefix, stageTable, attachPrefix, attachId, tableOf };
}

/** What a seal reads of a stage and of the points table. */
export type StageReads = ReturnType<typeof stageReads>;

export function stageReads(client: ClickHouseClient, targets: StageTargets, names: StageNames) {
  const { points, stageTable } = names;
  async function rows<T>(query: string): Promise<T[]> {
    return (await client.query({ query, format: 'JSONEachRow' })).json<T>();
  }
  const number = async (query: string) => Number((await rows<{ n: string }>(`SELECT toString((${query})) AS n`))[0]!.n);
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

  async function stageTables(filter: string): Promise<string[]> {
    return (
      await rows<{ name: string }>(
        `SELECT name FROM system.tables WHERE database = currentDatabase() AND match(name, '${stageTable}') AND ${filter} ORDER BY name`,
      )
    ).map((r) => r.name);
  }

  return { rows, number, isMergeTree, columns, heldShare, inPoints, stageTables };
}

/** What a seal and the stages' upkeep write: named writes into points and the catalog, stages made and dropped. */
export type StageWrites = ReturnType<typeof stageWrites>;

export function stageWrites(client: ClickHouseClient, targets: StageTargets, names: StageNames, insertWaitMs: number) {
  const { points, attachPrefix, attachId, tableOf } = names;
  const sink = createPointsSink(client, targets.points, { catalogTable: targets.catalog, rollupTables: targets.rollups ?? {} });
  const rollupTargets = (Object.entries(targets.rollups ?? {}) as [Resolution, string][]).map(([resolution, table]) => ({ resolution, table }));

  /** A stage's share of a rollup's states (ATTACH runs no view), under a token of its seal where the rollup keeps tokens. */
  async function addRollupShare(rollup: { resolution: Resolution; table: string }, stage: string, share: StagedShare, fence: Fence): Promise<void> {
    fence();
    await named(
      `INSERT INTO ${quoted(rollup.table)} ${rollupStatesSql(rollup.resolution, stage)}`,
      deduplicatedInsertSettings(await serverCapabilities(client), `${rollup.table}:seal:${share.partition}=${share.sealOffset}`),
    );
  }

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

  return { sink, rollupTargets, addRollupShare, named, attach, stopInserts, dropTable, open };
}
