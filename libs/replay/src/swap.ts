import {
  createPointsSink,
  createPointsStages,
  serverCapabilities,
  voidEverySeal,
  type Capabilities,
  type ClickHouseClient,
  type PointsSink,
} from '@meridian/clickhouse';
import type { LogRanges, Offsets, PointsFact } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import type { Logger } from '@meridian/observability';
import { consumerGroupsFor } from '@meridian/kafka';
import {
  catalogFeed,
  catalogTable,
  derivedTableSql,
  generationRollups,
  ROLLUP_VIEWS,
  rollupFeed,
  rollupFeedsSql,
  rollupTable,
  rollupTablesOf,
  viewDefinition,
  frozenSealsStandIn,
  frozenStandIn,
  LIVE_POINTS,
  LIVE_SEALS,
  liveGeneration,
  pointsTable,
  q,
  readRegistry,
  record,
  sealsTable,
  tableEngines,
  tableSettingsSql,
} from './generations.ts';
import type { RebuildProgress } from './progress.ts';
import { rebuildRange, type RebuildStats } from './rebuild.ts';
import { swapSql, type SealsPlace, type SwapSql } from './swap-sql.ts';
import { refuseUnswappableGeneration, refuseUnswappableLive } from './swap-checks.ts';

/** The live projector's consumer group (apps/ingest/src/projector/projector.ts names it so). */
export const projectorGroupId = (topicPrefix: string) => consumerGroupsFor(topicPrefix).projector;

export type SwapInput = {
  readonly log: LogRanges;
  readonly topic: string;
  readonly topicPrefix: string;
  /** Bound to the live database. */
  readonly clickhouse: ClickHouseClient;
  /** Name of that database (an identifier): the frozen stand-in names it. */
  readonly database: string;
  readonly generation: number;
  readonly batchRows: number;
  /** First offsets the generation was built from (its --from), so catching up never reads before them. */
  readonly starts?: Offsets;
  readonly logger?: Logger;
  readonly onProgress?: (phase: string, progress: RebuildProgress) => void;
  readonly onPhase?: (phase: string) => void;
  /** Called while live writes are held, just before the tables change names (tests look at the frozen state here). */
  readonly whileFrozen?: () => Promise<void>;
  /** How long to wait for the live projector to reach the new generation's positions before freezing (default 20 s). */
  readonly waitForLiveMs?: number;
  readonly codec?: EventCodec<PointsFact>;
};

export type SwapResult = {
  readonly generation: number;
  /** The generation swapped out, kept as points_g<N> until dropped. */
  readonly retired: number;
  /** How long live writes into `points` were held. */
  readonly frozenMs: number;
  /** Per partition, the last batch offset both the old and the new table hold at the swap. */
  readonly positions: Record<string, number>;
  readonly catchUp: readonly RebuildStats[];
  /** Whether the live projector was made to re-read its positions (when there was no live table to freeze). */
  readonly nudged: boolean;
};

/**
 * Swaps generation N in as the live `points` (and its catalog as the live `metric_catalog`)
 * while live ingestion keeps running, without losing or doubling a row.
 *
 * The live projector keeps, per partition, the highest batch offset it has written in memory
 * and resumes from its position in `points` (max(kafka_offset), or the last staged seal in
 * `points_seals` if later) only when it (re)joins its group or an insert fails. So the new
 * table must hold exactly the batches and staged shares the old one holds at the moment of the
 * swap: then the projector's positions are right for either table. `points_seals` is frozen and
 * swapped with `points` (swap-sql.ts): a staged share attached to the old table whose seal is
 * not recorded yet cannot be recorded while frozen, and its retried seal lands in N.
 *
 *   1. Catch up: project into N up to the live table's positions (twice: the second round takes
 *      what the live projector wrote during the first), never past them.
 *   2. Freeze (freezeLive): one statement puts the live table aside and a read-only stand-in in
 *      its place (a Merge table over it): downloads keep reading the same rows, inserts fail, and
 *      the live projector retries them. The old table's positions are final once every live write
 *      under way at the freeze is done, which freezeLive waits for.
 *   3. Catch up N exactly to those positions, and check they are equal.
 *   4. Swap in: one statement moves the stand-in out, N in as `points`, the live catalog's data
 *      out and N's catalog in, so the live catalog view from then on feeds on N's inserts into
 *      N's catalog. Which statements (RENAME on Ordinary databases, EXCHANGE TABLES on Atomic
 *      ones) is swap-sql.ts's choice, by the server's capabilities.
 *   5. The projector's retried insert lands in N, after the positions it knew.
 *
 * With no live table (it was dropped), there is nothing to freeze: N catches up to the end of
 * the log, and the live projector's group is made to rebalance before N is renamed in, so every
 * member re-reads its positions from N (an insert or position read fails until then).
 */
export async function swapIn(input: SwapInput): Promise<SwapResult> {
  const { clickhouse: client, generation: n } = input;
  const phase = (p: string) => input.onPhase?.(p);
  const caps = await serverCapabilities(client);
  const sql = swapSql(caps);
  const registry = await readRegistry(client);
  const m = liveGeneration(registry);
  if (m === n) throw new Error(`generation ${n} is live already`);
  const tables = await tableEngines(client);
  const newTable = pointsTable(n);
  const { live, alreadyFrozen } = await prepareSwap(client, caps, sql, tables, m, n);

  const { end } = await input.log.offsets(input.topic);
  const partitions = [...end.keys()].sort((a, b) => a - b);
  const catchUp: RebuildStats[] = [];
  const project = catchUpProjector(input, partitions, catchUp);

  let frozenAt: number | null = null;
  const newSink = createPointsSink(client, newTable, { sealsTable: sealsTable(n) });
  if (live === 'MergeTree') {
    frozenAt = await catchUpAndFreeze(input, tables, m, partitions, newSink, project);
  } else if (alreadyFrozen) {
    frozenAt = performance.now();
  }

  const sealsEngine = tables.get(LIVE_SEALS);
  const seals: SealsPlace = frozenAt !== null && (live === 'MergeTree' || sealsEngine === 'Merge') ? 'standIn' : sealsEngine === 'MergeTree' ? 'live' : 'none';
  let reached: Reached;
  try {
    reached =
      frozenAt !== null
        ? await reachFrozenPositions(input, caps, sql, m, partitions, newSink, project, seals)
        : await reachEndOfLog(input, partitions, newSink, project);
    if (input.whileFrozen) await input.whileFrozen();

    phase('swapping the tables');
    for (const feed of [catalogFeed(n), ...ROLLUP_VIEWS.map((view) => rollupFeed(view, n))]) await client.command({ query: `DROP TABLE IF EXISTS ${q(feed)}` });
    await client.command({ query: sql.swapIn(m, n, reached.standInPlace, seals) });
  } catch (error) {
    if (frozenAt !== null) await unfreeze(client, m, n).catch((e: unknown) => input.logger?.error({ err: e }, 'could not put the live table back'));
    throw error;
  }
  const { positions, nudged } = reached;
  const frozenMs = frozenAt === null ? 0 : performance.now() - frozenAt;
  for (const statement of sql.afterSwap(m, n)) await client.command({ query: statement });
  // Sealed buckets (migration 011) speak of the old generation's rollups: a mark of every metric
  // voids them, those of a pass under way too (migration 013), and the seal pass seals N's anew.
  await voidEverySeal(client, caps, `swap:${n}`);
  await record(client, m, 'retired', { table: pointsTable(m), catalog: catalogTable(m), by: n });
  await record(client, n, 'live', { positions: Object.fromEntries(positions), frozen_ms: Math.round(frozenMs), nudged });
  return { generation: n, retired: m, frozenMs, positions: Object.fromEntries([...positions].map(([p, o]) => [String(p), o])), catchUp, nudged };
}

type SwapStatements = SwapSql;
type Project = (label: string, ends: Offsets) => Promise<RebuildStats>;
/** Where the new generation stands when the tables change names, and how it got there. */
type Reached = { positions: Offsets; standInPlace: boolean; nudged: boolean };
const plusOne = (o: Offsets) => new Map([...o].map(([p, x]) => [p, x + 1]));

/** Refuses a swap the tables do not allow, and gives generation N what it lacks of today's tables (rollups, seals). */
async function prepareSwap(
  client: ClickHouseClient,
  caps: Capabilities,
  sql: SwapStatements,
  tables: ReadonlyMap<string, string>,
  m: number,
  n: number,
): Promise<{ live: string | undefined; alreadyFrozen: boolean }> {
  refuseUnswappableGeneration(tables, caps, sql, m, n);
  await ensureRollups(client, n, tables);
  if (tables.has(sealsTable(m))) throw new Error(`${sealsTable(m)} exists already: drop generation ${m} first`);
  if (!tables.has(sealsTable(n))) {
    // A generation built before staged uploads existed: none can be in it, and its catch-up may meet some.
    if (!tables.has(LIVE_SEALS)) throw new Error(`no table ${LIVE_SEALS}: run the migrations first`);
    await client.command({ query: `CREATE TABLE ${q(sealsTable(n))} AS ${q(LIVE_SEALS)}` });
  }
  const live = tables.get(LIVE_POINTS);
  refuseReplicated(live);
  return { live, alreadyFrozen: refuseUnswappableLive(tables, caps, sql, m, n) };
}

/** Projects the log into generation N up to `ends` (exclusive), collecting each round's stats. */
function catchUpProjector(input: SwapInput, partitions: readonly number[], catchUp: RebuildStats[]): Project {
  const { clickhouse: client, generation: n } = input;
  const phase = (p: string) => input.onPhase?.(p);
  const starts = input.starts ?? new Map(partitions.map((p) => [p, 0]));
  return async (label: string, ends: Offsets) => {
    phase(label);
    const stats = await rebuildRange({
      log: input.log,
      topic: input.topic,
      groupPrefix: input.topicPrefix,
      clickhouse: client,
      table: pointsTable(n),
      // Staged shares are sealed into N as the live projector seals them into `points`.
      seals: sealsTable(n),
      catalog: catalogTable(n),
      rollups: rollupTablesOf(n),
      starts,
      ends,
      batchRows: input.batchRows,
      measureLag: true,
      ...(input.codec ? { codec: input.codec } : {}),
      ...(input.logger ? { logger: input.logger } : {}),
      ...(input.onProgress ? { onProgress: (p: RebuildProgress) => input.onProgress!(label, p) } : {}),
    });
    catchUp.push(stats);
    return stats;
  };
}

/** Steps 1 and 2: N catches up with the live table (twice), the live projector is given time to pass N, then the live table is frozen. Returns when. */
async function catchUpAndFreeze(
  input: SwapInput,
  tables: ReadonlyMap<string, string>,
  m: number,
  partitions: readonly number[],
  newSink: PointsSink,
  project: Project,
): Promise<number> {
  const { clickhouse: client, generation: n } = input;
  const phase = (p: string) => input.onPhase?.(p);
  if (tables.get(LIVE_SEALS) !== 'MergeTree') throw new Error(`${LIVE_SEALS} is ${tables.get(LIVE_SEALS) ?? 'missing'}: run the migrations first`);
  const liveSink = createPointsSink(client, LIVE_POINTS, { sealsTable: LIVE_SEALS });
  for (const round of [1, 2]) await project(`catching up with the live table (round ${round})`, plusOne(await liveSink.maxOffsets(partitions)));
  // A generation built to the end of the log may be ahead of a live projector that lingers: give it time to pass.
  phase('waiting for the live projector to reach the new generation');
  const mine = await newSink.maxOffsets(partitions);
  const deadline = Date.now() + (input.waitForLiveMs ?? 20_000);
  while (Date.now() < deadline) {
    const theirs = await liveSink.maxOffsets(partitions);
    if (partitions.every((p) => (theirs.get(p) ?? -1) >= (mine.get(p) ?? -1))) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  phase('freezing the live table');
  return freezeLive(client, { m, n, database: input.database, partitions }, input.logger);
}

/**
 * Freezes the live table: read-only stand-ins take the names `points` and `points_seals`, the live
 * generation's tables are put aside, and once this returns nothing can write into them any more.
 * Returns when the freeze statement began: live writes are held from then on.
 *
 * The freeze statement waits for the writes holding the live tables' locks, but not for a write
 * that resolved the table while it waited: ClickHouse grants the statement the lock first, and
 * that write then goes into the table put aside, after the statement has returned. Its rows must
 * count in the positions the new generation catches up to (else the live projector, told the
 * write succeeded, never repeats it, and the swap loses it). So every live insert and attach under
 * way once the statement returns is waited for: the live sink's positions wait for them (what they
 * read through the stand-in is not used). A write that comes later finds the stand-in and is refused.
 */
export async function freezeLive(
  client: ClickHouseClient,
  at: { readonly m: number; readonly n: number; readonly database: string; readonly partitions: readonly number[] },
  logger?: Logger,
): Promise<number> {
  const sql = swapSql(await serverCapabilities(client));
  for (const statement of sql.prepareFreeze(at.m, at.n, checkDatabase(at.database))) await client.command({ query: statement });
  const frozenAt = performance.now();
  await client.command({ query: sql.freeze(at.m, at.n) });
  try {
    await createPointsSink(client, LIVE_POINTS, { sealsTable: LIVE_SEALS }).maxOffsets(at.partitions);
  } catch (error) {
    await unfreeze(client, at.m, at.n).catch((e: unknown) => logger?.error({ err: e }, 'could not put the live table back'));
    throw error;
  }
  return frozenAt;
}

/** Step 3: N catches up exactly to the frozen live table's positions; ahead of them, the live projector is made to re-read its positions. */
async function reachFrozenPositions(
  input: SwapInput,
  caps: Capabilities,
  sql: SwapStatements,
  m: number,
  partitions: readonly number[],
  newSink: PointsSink,
  project: Project,
  seals: SealsPlace,
): Promise<Reached> {
  const { clickhouse: client, generation: n } = input;
  const phase = (p: string) => input.onPhase?.(p);
  let standInPlace = true;
  let nudged = false;
  const final = await frozenPositions(client, sql.frozenData(m, n), seals === 'standIn' ? sql.frozenSeals(m, n) : undefined, partitions);
  await project('catching up with the frozen live table', plusOne(final));
  const mine = await newSink.maxOffsets(partitions);
  const behind = partitions.filter((p) => (mine.get(p) ?? -1) < (final.get(p) ?? -1));
  if (behind.length > 0) {
    throw new Error(
      `generation ${n} cannot reach the live table's positions in partitions ${behind.join(', ')} (${behind.map((p) => `${mine.get(p)} < ${final.get(p)}`).join('; ')})`,
    );
  }
  if (partitions.some((p) => (mine.get(p) ?? -1) > (final.get(p) ?? -1))) {
    if (caps.atomicDatabase)
      throw new Error(`generation ${n} is ahead of the live table (a stopped or stuck projector): on an Atomic database this swap is not implemented yet`);
    // Ahead of the frozen table (the live projector was stopped or stuck): positions in memory
    // would be wrong for the new table. Take `points` away, so no member can read positions or
    // insert, and make every member rejoin (and so forget its positions) before N comes in.
    phase('the new generation is ahead of the live table: making the live projector re-read its positions');
    await client.command({ query: `RENAME TABLE ${q(LIVE_POINTS)} TO ${q(frozenStandIn(n))}` });
    standInPlace = false;
    await nudgeGroup(input.log, projectorGroupId(input.topicPrefix), input.topic, input.logger);
    nudged = true;
  }
  return { positions: mine, standInPlace, nudged };
}

/** With no live table: N catches up to the end of the log, and the live projector's group re-reads its positions. */
async function reachEndOfLog(input: SwapInput, partitions: readonly number[], newSink: PointsSink, project: Project): Promise<Reached> {
  const phase = (p: string) => input.onPhase?.(p);
  await project('catching up with the end of the log (no live table)', (await input.log.offsets(input.topic)).end);
  phase('making the live projector re-read its positions');
  await nudgeGroup(input.log, projectorGroupId(input.topicPrefix), input.topic, input.logger);
  return { positions: await newSink.maxOffsets(partitions), standInPlace: false, nudged: true };
}

/**
 * A generation built before the rollups existed (migration 010) gets them before its catch-up:
 * tables and feeding views as a new generation's, filled from its rows. Nothing else writes into
 * points_g<N> before the catch-up, so no row is aggregated twice or missed.
 */
async function ensureRollups(client: ClickHouseClient, n: number, tables: ReadonlyMap<string, string>): Promise<void> {
  const missing = ROLLUP_VIEWS.filter((view) => !tables.has(rollupTable(view, n)));
  if (missing.length === 0) return;
  if (missing.length !== ROLLUP_VIEWS.length || ROLLUP_VIEWS.some((view) => tables.has(rollupFeed(view, n)))) {
    throw new Error(`generation ${n} has some of its rollup tables only: drop it and build it again`);
  }
  const caps = await serverCapabilities(client);
  const settings = tableSettingsSql(pointsTable(n), catalogTable(n), caps, undefined, generationRollups(n)).filter((s) =>
    ROLLUP_VIEWS.some((view) => s.includes(q(rollupTable(view, n)))),
  );
  for (const view of ROLLUP_VIEWS) await client.command({ query: derivedTableSql(viewDefinition(view), rollupTable(view, n), pointsTable(n)) });
  for (const statement of [...settings, ...rollupFeedsSql(n)]) await client.command({ query: statement });
  for (const view of ROLLUP_VIEWS) await client.command({ query: `INSERT INTO ${q(rollupTable(view, n))} ${viewDefinition(view).select(pointsTable(n))}` });
}

/**
 * The frozen live table's positions, as the live projector counts them: without the rows of a
 * staged share it attached but whose seal it has not recorded yet (the freeze refuses that
 * record). Such a share's stage is dropped only after its seal row, so its rows are those of a
 * stage still there. The projector's retried seal attaches the share into N after the swap, and N
 * must not count it before (it could not reach a position made of its batches' offsets).
 */
async function frozenPositions(client: ClickHouseClient, table: string, seals: string | undefined, partitions: readonly number[]): Promise<Offsets> {
  const positions = await createPointsSink(client, table, seals === undefined ? {} : { sealsTable: seals }).maxOffsets(partitions);
  const stages = await createPointsStages(client).list();
  if (stages.length === 0 || partitions.length === 0) return positions;
  const list = partitions
    .map((p) => {
      if (!Number.isInteger(p) || p < 0 || p > 65535) throw new Error(`not a partition number: ${p}`);
      return String(p);
    })
    .join(', ');
  const max = async (sql: string) =>
    new Map((await (await client.query({ query: sql, format: 'JSONEachRow' })).json<{ p: number; o: string }>()).map((r) => [Number(r.p), Number(r.o)]));
  const attached = stages.map((stage) => `SELECT kafka_partition, kafka_offset FROM ${q(stage)}`).join(' UNION ALL ');
  const direct = await max(
    `SELECT kafka_partition AS p, toString(max(kafka_offset)) AS o FROM ${q(table)} WHERE kafka_partition IN (${list}) AND (kafka_partition, kafka_offset) NOT IN (${attached}) GROUP BY kafka_partition`,
  );
  const sealed =
    seals === undefined
      ? new Map<number, number>()
      : await max(`SELECT kafka_partition AS p, toString(max(seal_offset)) AS o FROM ${q(seals)} WHERE kafka_partition IN (${list}) GROUP BY kafka_partition`);
  return new Map(partitions.map((p) => [p, Math.max(direct.get(p) ?? -1, sealed.get(p) ?? -1)]));
}

/**
 * Puts the frozen live table back as `points` (after a failed swap, or one that stopped midway):
 * `points` is the read-only stand-in, or missing, and the live generation's rows are aside
 * (as points_g<M> on an Ordinary database, as points_frozen_g<N> on an Atomic one).
 */
export async function unfreeze(client: ClickHouseClient, live: number, standInGeneration: number | null = null): Promise<boolean> {
  const sql = swapSql(await serverCapabilities(client));
  const tables = await tableEngines(client);
  const current = tables.get(LIVE_POINTS);
  if (current === 'MergeTree') return false;
  if (current !== undefined && current !== 'Merge') throw new Error(`${LIVE_POINTS} is a ${current}`);
  // The generation whose swap froze the live table: given, or the one whose frozen rows are found.
  const n =
    standInGeneration ??
    [...tables].map(([name, engine]) => (engine === 'MergeTree' ? /^points_frozen_g(\d+)$/.exec(name) : null)).find((x) => x !== null)?.[1];
  const frozen = n !== undefined && tables.get(sql.frozenData(live, Number(n))) === 'MergeTree' ? sql.frozenData(live, Number(n)) : pointsTable(live);
  if (tables.get(frozen) !== 'MergeTree') throw new Error(`the live generation ${live} is not aside as ${frozen}`);
  const aside =
    standInGeneration !== null
      ? { points: frozenStandIn(standInGeneration), seals: frozenSealsStandIn(standInGeneration) }
      : { points: `points_frozen_${Date.now()}`, seals: `points_seals_frozen_${Date.now()}` };
  let standIns = [aside.points];
  // The seals are frozen with points (unless a swap of an older version froze points alone).
  const frozenSeals = sql.frozenSeals(live, Number(n ?? live));
  const sealsFrozen = tables.get(LIVE_SEALS) === 'Merge' && tables.get(frozenSeals) === 'MergeTree';
  if (current === 'Merge') {
    const back = sql.unfreeze(live, Number(n ?? live), aside, sealsFrozen);
    await client.command({ query: back.statement });
    standIns = [...back.standIns];
  } else {
    const seals = sealsFrozen ? `, ${q(LIVE_SEALS)} TO ${q(aside.seals)}, ${q(frozenSeals)} TO ${q(LIVE_SEALS)}` : '';
    await client.command({ query: `RENAME TABLE ${q(frozen)} TO ${q(LIVE_POINTS)}${seals}` });
    if (sealsFrozen) standIns.push(aside.seals);
  }
  for (const standIn of standIns) await client.command({ query: `DROP TABLE IF EXISTS ${q(standIn)}` });
  for (const [name, engine] of tables)
    if (/^points_(seals_)?frozen_g\d+$/.test(name) && engine === 'Merge') await client.command({ query: `DROP TABLE IF EXISTS ${q(name)}` });
  return true;
}

/**
 * Replay builds a generation as a copy of the live table and swaps it in by RENAME. On a cluster
 * (Replicated*MergeTree) a copy would share the live table's ZooKeeper path and a RENAME keeps it,
 * and each replica would have to be swapped on its own: not built, so it is refused up front.
 */
export function refuseReplicated(liveEngine: string | undefined, table: string = LIVE_POINTS): void {
  if (liveEngine?.startsWith('Replicated')) {
    throw new Error(
      `${table} is a ${liveEngine} (CLICKHOUSE_CLUSTER): replay and swap do not run on replicated tables yet; rebuild into another database with --database`,
    );
  }
}

function checkDatabase(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`not a database name: ${name}`);
  return name;
}

/** Makes every member of a consumer group rejoin it (LogRanges.nudgeGroup), and says so. */
export async function nudgeGroup(log: LogRanges, groupId: string, topic: string, logger?: Logger): Promise<void> {
  await log.nudgeGroup(groupId, topic);
  logger?.info({ group: groupId }, 'consumer group rebalanced');
}
