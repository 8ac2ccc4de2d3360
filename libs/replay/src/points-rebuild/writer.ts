import type { PointsSink } from '@meridian/clickhouse';
import type { Logger } from '@meridian/observability';
import type { Projection, Segment } from '@meridian/projection';
import { retry, RETRY_POLICIES } from '@meridian/retry';

/** What a rebuild counts as it goes (RebuildStats' counters). */
export type RebuildCounts = {
  events: number;
  points: number;
  batches: number;
  seals: number;
  stagedBatches: number;
  stagedSeals: number;
  deletions: number;
  rejected: number;
  undecodable: number;
  inserts: number;
};

export function noCounts(): RebuildCounts {
  return { events: 0, points: 0, batches: 0, seals: 0, stagedBatches: 0, stagedSeals: 0, deletions: 0, rejected: 0, undecodable: 0, inserts: 0 };
}

export type RebuildWriter = {
  /** Hands the buffered rows to the insert after the one in flight; waits for that one first. */
  flush(): Promise<void>;
  /** The insert in flight (a failure surfaces here, or at the next flush). */
  inflight(): Promise<void>;
};

/** A rebuild's inserts into its table: one in flight while the next block is read and decoded. */
export function rebuildWriter(
  input: { readonly table: string; readonly signal?: AbortSignal; readonly logger?: Logger },
  sink: PointsSink,
  projection: Projection,
  counts: RebuildCounts,
): RebuildWriter {
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
    counts.inserts++;
  }
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
  return { flush, inflight: () => inflight };
}
