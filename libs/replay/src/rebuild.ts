import { randomBytes } from 'node:crypto';
import { createPointsSink, type ClickHouseClient, type Resolution } from '@meridian/clickhouse';
import type { LogRanges, Offsets, PointsFact } from '@meridian/domain';
import { createEventCodec, UndecodableEventError, type EventCodec } from '@meridian/events';
import type { Logger } from '@meridian/observability';
import { Projection, segmentRows, stageHeader } from '@meridian/projection';
import { rebuildMarkers } from './points-rebuild/markers.ts';
import { planRanges } from './points-rebuild/plan.ts';
import { progressReporter } from './points-rebuild/progress-reporter.ts';
import { OpenUploads, removeUnsealed } from './points-rebuild/unsealed.ts';
import { noCounts, rebuildWriter } from './points-rebuild/writer.ts';
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
 * the same decisions (state.ts), the same rows (native-block.ts, one Native block per insert) and the
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
  const partitions = [...input.ends.keys()].sort((a, b) => a - b);
  const stored = await sink.maxOffsets(partitions);
  const projection = new Projection(input.batchRows);
  const { ranges, position, total } = planRanges(input.topic, partitions, input.starts, input.ends, stored, projection);
  const counts = noCounts();
  const open = new OpenUploads(partitions);
  const report = progressReporter(input, ranges, position, total, counts, started);
  const writer = rebuildWriter(input, sink, projection, counts);
  const { sealStaged, applyMarker } = rebuildMarkers(input, codec, writer, projection, counts);

  for await (const batch of input.log.readRanges(ranges, {
    groupId: `${input.groupPrefix}replay-${input.table}-${randomBytes(4).toString('hex')}`,
    sequential: false,
    ...(input.signal ? { signal: input.signal } : {}),
  })) {
    const p = batch.partition;
    for (const message of batch.messages) {
      const offset = Number(message.offset);
      counts.events++;
      // A staged batch is known by its header, undecoded, as live: its seal brings its rows in.
      const staged = stageHeader(message);
      let fact: PointsFact | null = null;
      if (staged === undefined) {
        try {
          fact = codec.decode(message.value ?? Buffer.alloc(0));
        } catch (error) {
          if (!(error instanceof UndecodableEventError)) throw error;
          counts.undecodable++;
          continue;
        }
      }
      const decision = fact === null ? projection.decideStaged(p, offset, staged!) : projection.decide(p, offset, fact);
      switch (decision.kind) {
        case 'buffer': {
          if (projection.wouldOverflow(decision.rows)) await writer.flush();
          projection.add(decision.segment, 0); // no clock: the rebuild flushes by size only
          counts.batches++;
          counts.points += segmentRows(decision.segment);
          if (input.sealedOnly) open.batch(p, decision.segment.batch.task_id, offset);
          break;
        }
        case 'seal':
          counts.seals++;
          open.sealed(p, decision.seal.task_id);
          break;
        case 'reject':
          counts.rejected++;
          break;
        case 'skip':
          break;
        case 'staged':
          counts.stagedBatches++;
          break;
        case 'stagedSeal':
          // Sealed here whatever the cut: a staged share is never among an open upload's batches
          // (they are not in the table before the seal), so a cut between two partitions' seals
          // leaves the sealed partitions' shares, as live `points` holds them at that moment.
          counts.seals++;
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
  await writer.flush();
  await writer.inflight();

  const unsealedBatches = input.sealedOnly ? await removeUnsealed(input, open) : 0;
  report(true);
  const positions = await sink.maxOffsets(partitions);
  return { ...counts, unsealedBatches, ms: performance.now() - started, positions };
}
