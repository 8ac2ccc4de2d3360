import { randomBytes } from 'node:crypto';
import {
  applyDeletion,
  createPointsSink,
  createPointsStages,
  quoteIdentifier,
  ROLLUPS,
  serverCapabilities,
  untilMutationsDone,
  type ClickHouseClient,
  type PointsStages,
  type Resolution,
} from '@meridian/clickhouse';
import { isUuid, type LogRanges, type Offsets, type PartitionRange, type PointsFact } from '@meridian/domain';
import { createEventCodec, UndecodableEventError, type EventCodec } from '@meridian/events';
import type { Logger } from '@meridian/observability';
import { retry, RETRY_POLICIES } from '@meridian/retry';
import { catalogDefinition, forgetInsertTokensSql, q, viewDefinition } from './generations.ts';
import { Projection, refillStage, segmentRows, stageHeader, type Deletion, type Segment, type StagedSeal } from '@meridian/projection';
import type { RebuildProgress } from './progress.ts';

export type RebuildInput = {
  /** The log, read by ranges. */
  readonly log: LogRanges;
  /** The points topic. */
  readonly topic: string;
  /** Prefix of the rebuild's own consumer group (the environment's topic prefix). */
  readonly groupPrefix: string;
  /** A client bound to the database of `table`. */
  readonly clickhouse: ClickHouseClient;
  /** The table written: a generation (points_g<N>) or `points` of a separate database. Never the live one. */
  readonly table: string;
  /**
   * The table of `table`'s staged seals (points_seals_g<N>, or points_seals of a separate
   * database): it counts in the positions, and staged uploads are sealed into `table`
   * through it, with `catalog`. Without it, a range holding a staged upload is refused.
   */
  readonly seals?: string;
  /** First offset to project per partition (inclusive); the table's own positions win when they are further (a resumed rebuild). */
  readonly starts: Offsets;
  /** Offset to stop before per partition (exclusive). */
  readonly ends: Offsets;
  /** Most rows per INSERT (one Native block, all or nothing). */
  readonly batchRows: number;
  readonly codec?: EventCodec<PointsFact>;
  /**
   * Keep only uploads whose UploadSealed marker is inside the range (per partition): at a cut in
   * time, an upload whose transaction straddles the cut is left out whole, as all-or-nothing wants.
   */
  readonly sealedOnly?: boolean;
  /**
   * The table holding `table`'s metric catalog (fed by a view on each insert). Required with
   * sealedOnly: deleting rows does not reach the catalog, so it is recomputed after deletions;
   * and with staged uploads: a staged share is attached, which feeds no view.
   */
  readonly catalog?: string;
  /** The tables holding `table`'s rollups (migration 010), by resolution: kept with the catalog, for the same two reasons. */
  readonly rollups?: Readonly<Record<Resolution, string>>;
  readonly signal?: AbortSignal;
  readonly onProgress?: (progress: RebuildProgress) => void;
  readonly progressEveryMs?: number;
  /** Measure the distance to the end of the log for the progress line (one offsets request every 2 s). */
  readonly measureLag?: boolean;
  readonly logger?: Logger;
};

export type RebuildStats = {
  /** Records read (every offset that held a record for the reader). */
  readonly events: number;
  readonly points: number;
  readonly batches: number;
  readonly seals: number;
  /** Batches of staged uploads, passed over (their shares come in at their seals). */
  readonly stagedBatches: number;
  /** Staged shares sealed into the table (their points are in `points`, their seals in `seals`). */
  readonly stagedSeals: number;
  /** Deletions' markers applied to the table. */
  readonly deletions: number;
  /** Point batches that cannot be projected (the live projector dead-letters the same ones). */
  readonly rejected: number;
  /** Records that are not events Meridian can decode (skipped, as live). */
  readonly undecodable: number;
  readonly inserts: number;
  /** Batches of uploads not sealed inside the range, removed again (sealedOnly). */
  readonly unsealedBatches: number;
  readonly ms: number;
  /** The table's position per partition afterwards: its highest PointBatch offset, or staged seal if later (-1: none). */
  readonly positions: Offsets;
};

/**
 * Projects a range of the points topic into a table, with the live projector's own pieces:
 * the same decisions (state.ts), the same rows (rows.ts, one Native block per insert) and the
 * same exactly-once sink (the table's max(kafka_offset) per partition is where a resumed
 * rebuild continues). Nothing else: no clock, no random value and no side effect reaches the
 * rows (no dead-lettering, no announcing), so the rows are a pure function of the range.
 *
 * Staged uploads are deferred to their seals exactly as live: a staged batch is passed
 * over (by its header, undecoded, as live), and at a staged seal inside the range the rows
 * before it are flushed and stored, then the share is sealed into the table with the live seal
 * procedure (stage.ts) against the table's own seals and catalog, its stage always filled from
 * the log (refill.ts: a rebuild has no stage written aside). The seal is recorded in the seals
 * table, which counts in the positions, so a resumed rebuild neither repeats nor skips it, and
 * a share attached before a crash is found attached. A staged upload whose seal is beyond the
 * range leaves nothing, as in live `points` before its seal.
 *
 * One insert is in flight while the next block is read and decoded.
 */
export async function rebuildRange(input: RebuildInput): Promise<RebuildStats> {
  const started = performance.now();
  const codec = input.codec ?? createEventCodec<PointsFact>();
  const sink = createPointsSink(input.clickhouse, input.table, input.seals === undefined ? {} : { sealsTable: input.seals });
  let stages: PointsStages | null = null;
  const partitions = [...input.ends.keys()].sort((a, b) => a - b);
  const stored = await sink.maxOffsets(partitions);
  const projection = new Projection(input.batchRows);
  const ranges: PartitionRange[] = [];
  const position = new Map<number, number>();
  for (const p of partitions) {
    const start = Math.max(input.starts.get(p) ?? 0, (stored.get(p) ?? -1) + 1);
    const end = input.ends.get(p)!;
    projection.setSinkMax(p, start - 1);
    position.set(p, Math.min(start, end));
    if (end > start) ranges.push({ topic: input.topic, partition: p, start, end });
  }
  const total = ranges.reduce((n, r) => n + (r.end - r.start), 0);

  let events = 0;
  let points = 0;
  let batches = 0;
  let seals = 0;
  let stagedBatches = 0;
  let stagedSeals = 0;
  let rejected = 0;
  let undecodable = 0;
  let inserts = 0;
  let deletions = 0;
  let lag: number | null = null;
  /** sealedOnly: per partition, the offsets of the batches of each upload not sealed there yet. */
  const open = new Map<number, Map<string, number[]>>(partitions.map((p) => [p, new Map()]));

  const remaining = () => ranges.reduce((n, r) => n + (r.end - position.get(r.partition)!), 0);
  const snapshot = (): RebuildProgress => ({ events, points, elapsedMs: performance.now() - started, remaining: remaining(), total, lag });
  let lastReport = 0;
  let lagBusy = false;
  let lastLag = 0;
  const report = (force = false) => {
    const now = performance.now();
    if (input.measureLag && !lagBusy && now - lastLag >= 2000) {
      lagBusy = true;
      lastLag = now;
      input.log
        .offsets(input.topic)
        .then(({ end }) => {
          lag = [...end].reduce((n, [p, e]) => n + Math.max(0, e - (position.get(p) ?? e)), 0);
        })
        .catch(() => undefined)
        .finally(() => {
          lagBusy = false;
        });
    }
    if (!input.onProgress || (!force && now - lastReport < (input.progressEveryMs ?? 1000))) return;
    lastReport = now;
    input.onProgress(snapshot());
  };

  let inflight: Promise<void> = Promise.resolve();
  async function insert(segments: readonly Segment[]): Promise<void> {
    const last = new Map<number, number>();
    for (const s of segments) last.set(s.partition, Math.max(last.get(s.partition) ?? -1, s.offset));
    await retry(
      async () => {
        try {
          await sink.insert(segments);
        } catch (error) {
          // The insert may have landed whole or not at all (one Native block): ask the table.
          await sink.settle().catch(() => undefined);
          const now = await sink.maxOffsets([...last.keys()]).catch(() => null);
          if (!now || ![...last].every(([p, o]) => (now.get(p) ?? -1) >= o)) throw error;
        }
      },
      {
        ...RETRY_POLICIES.rebuildInsert,
        retriable: () => true,
        ...(input.signal ? { signal: input.signal } : {}),
        onRetry: (error, attempt) => input.logger?.warn({ err: error, attempt }, `insert into ${input.table} failed; retrying`),
      },
    );
    inserts++;
  }
  /** Hands the buffered rows to the insert after the one in flight; waits for that one first. */
  async function flush(): Promise<void> {
    const { segments } = projection.pending();
    if (segments.length === 0) return;
    const todo = [...segments];
    projection.stored(todo);
    projection.clearBuffer();
    const previous = inflight;
    await previous;
    inflight = insert(todo);
    // Surface a failure at the next flush or at the end, whichever comes first.
    inflight.catch(() => undefined);
  }

  /** Moves a staged share into the table, as the live projector does into `points` (every row before it is stored first). */
  async function sealStaged(seal: StagedSeal): Promise<void> {
    if (input.seals === undefined || input.catalog === undefined) {
      throw new Error(
        `points partition ${seal.partition} offset ${seal.offset} seals a staged upload: a rebuild into ${input.table} needs its seals and catalog tables`,
      );
    }
    await flush();
    await inflight;
    stages ??= createPointsStages(input.clickhouse, {
      points: input.table,
      catalog: input.catalog,
      seals: input.seals,
      ...(input.rollups ? { rollups: input.rollups } : {}),
    });
    const into = stages;
    const share = {
      partition: seal.partition,
      sealOffset: seal.offset,
      taskId: seal.task_id,
      attempt: seal.attempt,
      points: seal.points,
      batches: seal.batches,
    };
    const refill = {
      log: input.log,
      codec,
      topic: input.topic,
      batchRows: input.batchRows,
      groupId: `${input.groupPrefix}replay-${input.table}-refill-${randomBytes(4).toString('hex')}`,
      // The live projector dead-letters such a batch and fails its task; either way no table holds it.
      bad: async () => {
        bad++;
      },
    };
    let bad = 0;
    // The rows the seal moved in: not the share's rows a --from copied from live already.
    let moved = 0;
    await retry(
      async () => {
        bad = 0;
        ({ points: moved } = await into.seal(share, (stage) => refillStage(refill, seal, stage)));
      },
      {
        ...RETRY_POLICIES.rebuildInsert,
        retriable: () => true,
        ...(input.signal ? { signal: input.signal } : {}),
        onRetry: (error, attempt) => input.logger?.warn({ err: error, attempt }, `sealing a staged upload into ${input.table} failed; retrying`),
      },
    );
    rejected += bad;
    projection.sealed(seal);
    stagedSeals++;
    points += moved;
  }

  /** Applies a deletion's marker to the table, as the live projector does to `points` (every row before it is stored first). */
  async function applyMarker(deletion: Deletion): Promise<void> {
    if (input.seals === undefined || input.catalog === undefined) {
      throw new Error(
        `points partition ${deletion.partition} offset ${deletion.offset} deletes points: a rebuild into ${input.table} needs its seals and catalog tables`,
      );
    }
    await flush();
    await inflight;
    const targets = { points: input.table, catalog: input.catalog, seals: input.seals, ...(input.rollups ? { rollups: input.rollups } : {}) };
    const { task_id: taskId, partition, offset, metrics, fromMs, toMs, rollups } = deletion;
    await retry(() => applyDeletion(input.clickhouse, targets, { taskId, partition, offset, metrics, fromMs, toMs, rollups }), {
      ...RETRY_POLICIES.rebuildInsert,
      retriable: () => true,
      ...(input.signal ? { signal: input.signal } : {}),
      onRetry: (error, attempt) => input.logger?.warn({ err: error, attempt }, `deleting points from ${input.table} failed; retrying`),
    });
    projection.deleted(deletion);
    deletions++;
  }

  for await (const batch of input.log.readRanges(ranges, {
    groupId: `${input.groupPrefix}replay-${input.table}-${randomBytes(4).toString('hex')}`,
    sequential: false,
    ...(input.signal ? { signal: input.signal } : {}),
  })) {
    const p = batch.partition;
    for (const message of batch.messages) {
      const offset = Number(message.offset);
      events++;
      // A staged batch is known by its header, undecoded, as live: its seal brings its rows in.
      const staged = stageHeader(message);
      let fact: PointsFact | null = null;
      if (staged === undefined) {
        try {
          fact = codec.decode(message.value ?? Buffer.alloc(0));
        } catch (error) {
          if (!(error instanceof UndecodableEventError)) throw error;
          undecodable++;
          continue;
        }
      }
      const decision = fact === null ? projection.decideStaged(p, offset, staged!) : projection.decide(p, offset, fact);
      switch (decision.kind) {
        case 'buffer': {
          if (projection.wouldOverflow(decision.rows)) await flush();
          projection.add(decision.segment, 0); // no clock: the rebuild flushes by size only
          batches++;
          points += segmentRows(decision.segment);
          if (input.sealedOnly) {
            const tasks = open.get(p)!;
            const offsets = tasks.get(decision.segment.batch.task_id) ?? [];
            offsets.push(offset);
            tasks.set(decision.segment.batch.task_id, offsets);
          }
          break;
        }
        case 'seal':
          seals++;
          open.get(p)!.delete(decision.seal.task_id);
          break;
        case 'reject':
          rejected++;
          break;
        case 'skip':
          break;
        case 'staged':
          stagedBatches++;
          break;
        case 'stagedSeal':
          // Sealed here whatever the cut: a staged share is never among an open upload's batches
          // (they are not in the table before the seal), so a cut between two partitions' seals
          // leaves the sealed partitions' shares, as live `points` holds them at that moment.
          seals++;
          await sealStaged(decision.seal);
          break;
        case 'delete':
          await applyMarker(decision.deletion);
          break;
      }
    }
    const lastMessage = batch.messages[batch.messages.length - 1];
    const range = ranges.find((r) => r.partition === p)!;
    position.set(p, batch.done ? range.end : Math.max(position.get(p)!, Number(lastMessage?.offset ?? -1) + 1));
    report();
  }
  for (const r of ranges) position.set(r.partition, r.end);
  await flush();
  await inflight;

  let unsealedBatches = 0;
  if (input.sealedOnly) {
    // One upload is one transaction over several partitions, each sealed on its own; a cut in
    // time can fall between its seals. Unsealed in any partition, it goes from every partition.
    const doomed = new Set<string>();
    for (const tasks of open.values()) {
      for (const [task, offsets] of tasks) {
        doomed.add(task);
        unsealedBatches += offsets.length;
      }
    }
    if (doomed.size > 0) {
      if (input.catalog === undefined) throw new Error(`a rebuild into ${input.table} that deletes unsealed uploads needs its catalog table`);
      await deleteUploads(input.clickhouse, input.table, [...doomed]);
      // The positions are back before the deleted batches: a catch-up projects them again, in
      // blocks whose tokens the table and its catalog must not hold any more.
      const rollups = Object.entries(input.rollups ?? {}).map(([resolution, table]) => ({ view: ROLLUPS[resolution as Resolution].table, table }));
      const rollupTargets = Object.fromEntries(rollups.map((r) => [r.view, r.table]));
      for (const statement of forgetInsertTokensSql(input.table, input.catalog, await serverCapabilities(input.clickhouse), undefined, rollupTargets)) {
        await input.clickhouse.command({ query: statement });
      }
      await recomputeCatalog(input.clickhouse, input.table, input.catalog);
      for (const { view, table } of rollups) await recomputeDerived(input.clickhouse, table, viewDefinition(view).select(input.table));
    }
  }
  report(true);
  const positions = await sink.maxOffsets(partitions);
  return {
    events,
    points,
    batches,
    seals,
    stagedBatches,
    stagedSeals,
    deletions,
    rejected,
    undecodable,
    inserts,
    unsealedBatches,
    ms: performance.now() - started,
    positions,
  };
}

/**
 * Rewrites a catalog table from its points table, after rows were deleted (a mutation reaches
 * neither the view nor the catalog's partial states). The rows are the view's own SELECT
 * (migration 002: countState/minState/maxState per metric), so the states are the ones the
 * view writes. Only for a table nothing else writes into: the rebuild is its sole writer.
 */
async function recomputeCatalog(client: ClickHouseClient, table: string, catalog: string): Promise<void> {
  await recomputeDerived(client, catalog, catalogDefinition().select(table));
}

/** A table derived from a points table by a view (its catalog, a rollup) rewritten from the view's own SELECT, as recomputeCatalog. */
async function recomputeDerived(client: ClickHouseClient, derived: string, select: string): Promise<void> {
  await client.command({ query: `TRUNCATE TABLE ${q(derived)}` });
  await client.command({ query: `INSERT INTO ${q(derived)} ${select}` });
}

/**
 * Deletes every row of these uploads, then waits for the mutation. Task ids are UUIDs the
 * api generated; anything else is refused, so only checked UUIDs reach the SQL text (a
 * mutation runs in the background, after the request and its external data are gone).
 */
async function deleteUploads(client: ClickHouseClient, table: string, taskIds: readonly string[]): Promise<void> {
  quoteIdentifier(table); // refuses anything but a plain table name
  for (const id of taskIds) if (!isUuid(id)) throw new Error(`not a task id: ${JSON.stringify(id)}`);
  const where = `task_id IN (${taskIds.map((id) => `'${id}'`).join(', ')})`;
  await client.command({ query: `ALTER TABLE ${table} DELETE WHERE ${where}` });
  await untilMutationsDone(client, table, DELETE_UPLOADS_TIMEOUT_MS);
}

/** A rebuild's deletion of the uploads a cut leaves unsealed: minutes at most on the tables a rebuild writes. */
const DELETE_UPLOADS_TIMEOUT_MS = 3_600_000;
