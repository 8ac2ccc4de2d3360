import { createClickHouse, ensureDatabase, migrate, type ClickHouseClient } from '@meridian/clickhouse';
import type { Offsets, PointsFact } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import type { ReplayDeps } from './deps.ts';
import { describeOffsets, resolveEnds, resolveStarts, type Bound } from './bounds.ts';
import {
  catalogTable,
  countRows,
  createGeneration,
  ensureRegistry,
  LIVE_POINTS,
  LIVE_SEALS,
  liveCatalogData,
  liveRollupsData,
  rollupTablesOf,
  nextGeneration,
  pointsTable,
  q,
  readRegistry,
  record,
  sealsTable,
  tableEngines,
} from './generations.ts';
import type { RebuildProgress } from './progress.ts';
import { rebuildRange, type RebuildStats } from './rebuild.ts';
import { refuseReplicated, swapIn, type SwapResult } from './swap.ts';
import { verifyTables, type Verification } from './verify.ts';

export type SwapMode = 'never' | 'always' | 'if-verified';

export type RebuildPointsOptions = {
  readonly from?: Bound;
  readonly to?: Bound;
  /** Rebuild into `points` of this separate database (created with the migrations) instead of a new generation; never swapped. */
  readonly database?: string;
  readonly swap?: SwapMode;
  /** Rows per INSERT (default MERIDIAN_PROJECTOR_BATCH_ROWS). */
  readonly batchRows?: number;
  readonly onProgress?: (phase: string, progress: RebuildProgress) => void;
  readonly onPhase?: (phase: string) => void;
  readonly whileFrozen?: () => Promise<void>;
  /** How long a swap waits for the live projector to reach the new generation before freezing (default 20 s). */
  readonly waitForLiveMs?: number;
  /** Decodes the points topic (default: schemas/); tests pass one with a newer schema version. */
  readonly codec?: EventCodec<PointsFact>;
  readonly signal?: AbortSignal;
};

export type RebuildPointsResult = {
  readonly generation: number | null;
  readonly database: string;
  readonly table: string;
  readonly starts: Record<string, number>;
  readonly ends: Record<string, number>;
  readonly copiedRows: number;
  readonly stats: RebuildStats;
  readonly verification: Verification | null;
  readonly swap: SwapResult | null;
  /** Why a requested swap did not happen. */
  readonly notSwapped: string | null;
};

const record_ = (o: Offsets) => Object.fromEntries([...o].sort((a, b) => a[0] - b[0]).map(([p, x]) => [String(p), x]));

/**
 * `meridian replay rebuild points`: projects the points topic (or a range of it) into a new
 * generation beside the live table, verifies it against the live table and swaps it in when
 * asked; or, with a database, into that separate database (a point-in-time copy).
 *
 * `from` (a time or offsets) rebuilds only the log after it: the rows of earlier batches are
 * copied from the live table, so the generation is complete. `to` as a time keeps only uploads
 * sealed by then (an upload is all or nothing).
 *
 * Stays one function: its phases (create, copy, rebuild, verify, swap) are named calls already; what is left
 * here is their order and the bounds and generation they share.
 */
export async function rebuildPoints(deps: ReplayDeps, options: RebuildPointsOptions = {}): Promise<RebuildPointsResult> {
  const { topics, clickhouse } = deps;
  const { log } = deps;
  const database = deps.clickhouseOptions.database;
  await deps.prepareTopics();
  const batchRows = options.batchRows ?? deps.projectorBatchRows;
  const starts = await resolveStarts(log, topics.points, options.from);
  const ends = await resolveEnds(log, topics.points, options.to);
  const sealedOnly = options.to?.kind === 'time';
  const progress = (phase: string) => (options.onProgress ? { onProgress: (p: RebuildProgress) => options.onProgress!(phase, p) } : {});

  if (options.database !== undefined) return rebuildIntoDatabase(deps, { ...options, database: options.database }, { starts, ends, batchRows, sealedOnly });

  const tables = await tableEngines(clickhouse);
  refuseReplicated(tables.get(LIVE_POINTS));
  await ensureRegistry(clickhouse);
  const liveExists = tables.get(LIVE_POINTS) === 'MergeTree';
  if (options.from && !liveExists) throw new Error('--from copies the rows before it from the live table, and there is none: rebuild from the beginning');
  const g = await nextGeneration(clickhouse);
  const table = pointsTable(g);
  options.onPhase?.(`building generation ${g} (${table})`);
  await createGeneration(clickhouse, g, {
    from: options.from ? describeBound(options.from) : null,
    to: options.to ? describeBound(options.to) : null,
    starts: record_(starts),
    ends: record_(ends),
  });

  let copiedRows = 0;
  if (options.from) {
    options.onPhase?.(`copying the rows before ${describeOffsets(starts)} from the live table`);
    copiedRows = await copyBefore(clickhouse, table, sealsTable(g), starts);
  }
  const stats = await rebuildRange({
    log,
    topic: topics.points,
    groupPrefix: deps.topicPrefix,
    clickhouse,
    table,
    seals: sealsTable(g),
    catalog: catalogTable(g),
    rollups: rollupTablesOf(g),
    starts,
    ends,
    batchRows,
    sealedOnly,
    measureLag: true,
    logger: deps.logger,
    ...progress('rebuild'),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.codec ? { codec: options.codec } : {}),
  });
  await record(clickhouse, g, 'built', { ...statsDetail(stats), copied_rows: copiedRows });

  let verification: Verification | null = null;
  if (liveExists) {
    options.onPhase?.('verifying against the live table');
    verification = await verifyTables(clickhouse, { points: LIVE_POINTS, seals: LIVE_SEALS }, { points: table, seals: sealsTable(g) }, [...ends.keys()]);
    await record(clickhouse, g, 'verified', verification);
  }

  const mode = options.swap ?? 'never';
  let swap: SwapResult | null = null;
  let notSwapped: string | null = null;
  if (mode === 'always' || (mode === 'if-verified' && verification?.ok)) {
    swap = await swapIn({
      log,
      topic: topics.points,
      topicPrefix: deps.topicPrefix,
      clickhouse,
      database,
      generation: g,
      batchRows,
      starts,
      logger: deps.logger,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.onPhase ? { onPhase: options.onPhase } : {}),
      ...(options.whileFrozen ? { whileFrozen: options.whileFrozen } : {}),
      ...(options.waitForLiveMs !== undefined ? { waitForLiveMs: options.waitForLiveMs } : {}),
      ...(options.codec ? { codec: options.codec } : {}),
    });
  } else if (mode === 'if-verified') {
    notSwapped = verification ? 'verification failed' : 'there is no live table to verify against (use --swap)';
  }
  return { generation: g, database, table, starts: record_(starts), ends: record_(ends), copiedRows, stats, verification, swap, notSwapped };
}

/** The range a rebuild projects, resolved from its bounds. */
type ResolvedRange = { readonly starts: Offsets; readonly ends: Offsets; readonly batchRows: number; readonly sealedOnly: boolean };

/** `--database`: projects into `points` of a separate database (a point-in-time copy), created with the migrations; never swapped in. */
async function rebuildIntoDatabase(
  deps: ReplayDeps,
  options: RebuildPointsOptions & { readonly database: string },
  { starts, ends, batchRows, sealedOnly }: ResolvedRange,
): Promise<RebuildPointsResult> {
  const { topics, log } = deps;
  const database = deps.clickhouseOptions.database;
  const progress = (phase: string) => (options.onProgress ? { onProgress: (p: RebuildProgress) => options.onProgress!(phase, p) } : {});
  if (options.database === database) throw new Error('--database must name another database than the live one');
  if (options.swap && options.swap !== 'never') throw new Error('a rebuild into another database is never swapped in');
  await ensureDatabase({ ...deps.clickhouseOptions, database: options.database });
  const target = createClickHouse({ ...deps.clickhouseOptions, database: options.database });
  try {
    await migrate(target);
    if ((await countRows(target, LIVE_POINTS)) > 0) throw new Error(`${options.database}.points holds rows already: choose a new database`);
    options.onPhase?.(`projecting into ${options.database}.points`);
    const stats = await rebuildRange({
      log,
      topic: topics.points,
      groupPrefix: deps.topicPrefix,
      clickhouse: target,
      table: LIVE_POINTS,
      seals: LIVE_SEALS,
      catalog: await liveCatalogData(target),
      rollups: await liveRollupsData(target),
      starts,
      ends,
      batchRows,
      sealedOnly,
      measureLag: false,
      logger: deps.logger,
      ...progress('rebuild'),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.codec ? { codec: options.codec } : {}),
    });
    return {
      generation: null,
      database: options.database,
      table: LIVE_POINTS,
      starts: record_(starts),
      ends: record_(ends),
      copiedRows: 0,
      stats,
      verification: null,
      swap: null,
      notSwapped: null,
    };
  } finally {
    await target.close();
  }
}

/** `meridian replay swap <generation>`: catches a built generation up and swaps it in. */
export async function swapGeneration(
  deps: ReplayDeps,
  generation: number,
  options: Pick<RebuildPointsOptions, 'onProgress' | 'onPhase' | 'batchRows' | 'whileFrozen'> = {},
): Promise<SwapResult> {
  const registry = await readRegistry(deps.clickhouse);
  const starts = registry.get(generation)?.detail.starts as Record<string, number> | undefined;
  return swapIn({
    log: deps.log,
    topic: deps.topics.points,
    topicPrefix: deps.topicPrefix,
    clickhouse: deps.clickhouse,
    database: deps.clickhouseOptions.database,
    generation,
    batchRows: options.batchRows ?? deps.projectorBatchRows,
    logger: deps.logger,
    ...(starts ? { starts: new Map(Object.entries(starts).map(([p, o]) => [Number(p), o])) } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(options.onPhase ? { onPhase: options.onPhase } : {}),
    ...(options.whileFrozen ? { whileFrozen: options.whileFrozen } : {}),
  });
}

/**
 * Copies the live rows of batches before `starts` (per partition) into the generation, and the
 * staged seals before them (their shares' rows are among those rows): numbers only in the SQL.
 * A staged share sealed live at or after its start whose batches lie before it comes with the
 * rows, and the rebuild's seal of it then attaches only the batches the generation lacks (stage.ts).
 */
async function copyBefore(client: ClickHouseClient, table: string, seals: string, starts: Offsets): Promise<number> {
  const before = (column: string) =>
    [...starts]
      .filter(([, o]) => o > 0)
      .map(([p, o]) => {
        if (!Number.isSafeInteger(p) || !Number.isSafeInteger(o)) throw new Error(`not a position: ${p}/${o}`);
        return `(kafka_partition = ${p} AND ${column} < ${o})`;
      });
  const parts = before('kafka_offset');
  if (parts.length === 0) return 0;
  await client.command({ query: `INSERT INTO ${q(table)} SELECT * FROM ${q(LIVE_POINTS)} WHERE ${parts.join(' OR ')}` });
  await client.command({ query: `INSERT INTO ${q(seals)} SELECT * FROM ${q(LIVE_SEALS)} WHERE ${before('seal_offset').join(' OR ')}` });
  return countRows(client, table);
}

export function describeBound(b: Bound): string {
  if (b.kind === 'time') return new Date(b.ms).toISOString();
  if (b.kind === 'offset') return `offset ${b.offset}`;
  return `offsets ${describeOffsets(b.offsets)}`;
}

export function statsDetail(s: RebuildStats): Record<string, unknown> {
  return {
    events: s.events,
    points: s.points,
    batches: s.batches,
    seals: s.seals,
    staged_batches: s.stagedBatches,
    staged_seals: s.stagedSeals,
    deletions: s.deletions,
    rejected: s.rejected,
    undecodable: s.undecodable,
    inserts: s.inserts,
    unsealed_batches: s.unsealedBatches,
    ms: Math.round(s.ms),
    positions: record_(s.positions),
  };
}
