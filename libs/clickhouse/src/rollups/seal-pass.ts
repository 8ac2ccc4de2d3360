import { randomUUID } from 'node:crypto';
import { cancelQueries } from '../download/cancel.ts';
import { queryText, type ConnOptions } from '../download/http.ts';
import { unescape } from '../series.ts';
import { checkBuckets } from './read.ts';
import { countsTable, insertDedupedSealsSql, insertMergedSealsSql, sealCandidatesSql, sealTotalsSql, type BucketCount } from './sealed-sql.ts';
import { bucketSpan, namesTable, ROLLUPS, type Resolution } from './sql.ts';

/** What one pass did, per resolution. */
export type SealPassStats = {
  readonly resolution: Resolution;
  /** Metrics with a closed bucket not sealed at its count, when the pass began. */
  readonly metricsBehind: number;
  /** Buckets the pass looked at (at most maxBuckets). */
  readonly buckets: number;
  /** Of them, those the exactness check found clean (sealed from the rollup's states). */
  readonly clean: number;
  /** Those where a timestamp repeats (sealed from the deduplicated raw points). */
  readonly replaced: number;
};

export type SealPassOptions = {
  /** Most buckets one pass seals, per resolution. */
  readonly maxBuckets: number;
  /** The rollups it seals (both by default). */
  readonly resolutions?: readonly Resolution[];
  /** The deduplicated points replaced buckets are computed from (`points`). */
  readonly source?: string;
  /** Epoch ms; a bucket still open at this time (its end after it) is left for a later pass. */
  readonly now?: () => number;
};

/** How a pass's statement is sent: its query id (under the pass's own, so a stop can kill them all) and the signal that abandons it. */
export type PassQuery = { readonly queryId?: string; readonly signal?: AbortSignal };

/** Longest a stopped pass waits for the server to kill its statements: a stop must not hang on a server that does not answer. */
const KILL_WAIT_MS = 5_000;

/** Buckets per statement: the external tables and the IN sets stay small. */
const CHUNK = 20_000;

const parseCandidates = (text: string): BucketCount[] =>
  text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const [name, bucket, rows, marks] = l.split('\t');
      return { metric_name: unescape(name!), bucket: Number(bucket), rows: Number(rows), marks: Number(marks ?? 0) };
    });

/**
 * The pass's first step for one metric: its closed buckets (bucket < closedBefore) not sealed at
 * their count and marks, at most `limit`, each with the marks covering it, read now: before the
 * count the seals are written with (checkChunk's).
 */
export async function sealCandidates(
  conn: ConnOptions,
  resolution: Resolution,
  metric: string,
  closedBefore: number,
  limit: number,
  query: PassQuery = {},
): Promise<BucketCount[]> {
  return parseCandidates(await queryText(conn, { sql: sealCandidatesSql(resolution, closedBefore, limit), tables: [namesTable([metric])], ...query }));
}

/** A chunk of buckets checked: each with the count the check read and the marks read before it. */
export type CheckedChunk = { readonly clean: BucketCount[]; readonly replaced: BucketCount[] };

/** The second step: the exactness check of some candidates, which reads each bucket's count (after its marks). */
export async function checkChunk(conn: ConnOptions, resolution: Resolution, chunk: readonly BucketCount[], query: PassQuery = {}): Promise<CheckedChunk> {
  const marks = new Map(chunk.map((c) => [`${c.bucket}\u0000${c.metric_name}`, c.marks]));
  const checked = (await checkBuckets(conn, resolution, chunk, query)).map((c) => ({
    clean: c.clean,
    count: { metric_name: c.metric_name, bucket: c.bucket, rows: c.count, marks: marks.get(`${c.bucket}\u0000${c.metric_name}`)! },
  }));
  return { clean: checked.filter((c) => c.clean).map((c) => c.count), replaced: checked.filter((c) => !c.clean).map((c) => c.count) };
}

/**
 * The last step: the seals, the clean buckets written from the rollup's states where the count has
 * not moved, the others from the raw points with the count read before them (a point inserted
 * meanwhile raises the rollup's count above the seal's, which then never matches; a deletion
 * meanwhile adds a mark, and the seal's marks, read before, are then fewer than the bucket's).
 */
export async function writeSeals(
  conn: ConnOptions,
  resolution: Resolution,
  { clean, replaced }: CheckedChunk,
  source: string,
  query: () => PassQuery = () => ({}),
): Promise<void> {
  if (clean.length > 0) await queryText(conn, { sql: insertMergedSealsSql(resolution, ...bucketSpan(clean)), tables: [countsTable(clean)], ...query() });
  if (replaced.length > 0) {
    const [first, last] = bucketSpan(replaced);
    await queryText(conn, { sql: insertDedupedSealsSql(resolution, first, last, source), tables: [countsTable(replaced)], ...query() });
    await queryText(conn, { sql: insertMergedSealsSql(resolution, first, last, { source }), tables: [countsTable(replaced)], ...query() });
  }
}

/**
 * The seal pass (migration 011): for each rollup, the metrics whose closed buckets are not all
 * sealed at their count (one query over the rollup's and the sealed table's counts), and, from
 * the metric after the one the last pass ended on, their unsealed buckets, at most maxBuckets in
 * all, sealed. A bucket sealed at a count and marks stays answered from its sealed row until an
 * insert raises the count or a deletion's mark (migration 013) counts in its day.
 *
 * `run(signal)`: an abort (the worker stopping) ends the pass at once, and its statements still
 * running on the server are killed (an INSERT … SELECT goes on after its client has gone). What it
 * sealed so far stays: each seal is true of its bucket by itself.
 */
export function createSealPass(conn: ConnOptions, options: SealPassOptions): { run(signal?: AbortSignal): Promise<SealPassStats[]> } {
  const source = options.source ?? 'points';
  const now = options.now ?? Date.now;
  const lastMetric = new Map<Resolution, string>();
  const sealResolution = async (resolution: Resolution, query: () => PassQuery): Promise<SealPassStats> => {
    const step = ROLLUPS[resolution].stepMs;
    const closedBefore = Math.floor(now() / step) * step;
    const behind = parseCandidates(await queryText(conn, { sql: sealTotalsSql(resolution, closedBefore), ...query() })).map((r) => r.metric_name);
    // Round the metrics from the last one's successor: a metric that can never be sealed whole does not starve the others.
    const after = lastMetric.get(resolution);
    const order = after === undefined ? behind : [...behind.filter((m) => m > after), ...behind.filter((m) => m <= after)];
    let budget = options.maxBuckets;
    const stats = { resolution, metricsBehind: behind.length, buckets: 0, clean: 0, replaced: 0 };
    for (const metric of order) {
      if (budget <= 0) break;
      const candidates = await sealCandidates(conn, resolution, metric, closedBefore, budget, query());
      budget -= candidates.length;
      stats.buckets += candidates.length;
      for (let i = 0; i < candidates.length; i += CHUNK) {
        const checked = await checkChunk(conn, resolution, candidates.slice(i, i + CHUNK), query());
        await writeSeals(conn, resolution, checked, source, query);
        stats.clean += checked.clean.length;
        stats.replaced += checked.replaced.length;
      }
      lastMetric.set(resolution, metric);
    }
    return stats;
  };
  return {
    async run(signal) {
      const passId = randomUUID();
      let n = 0;
      // Distinct ids: 18.16 refuses one that is still registered.
      const query = (): PassQuery => ({ queryId: `${passId}-${n++}`, ...(signal ? { signal } : {}) });
      const out: SealPassStats[] = [];
      try {
        for (const resolution of options.resolutions ?? (['1h', '1m'] as const)) {
          signal?.throwIfAborted();
          out.push(await sealResolution(resolution, query));
        }
      } catch (error) {
        if (signal?.aborted) await cancelQueries(conn, passId, AbortSignal.timeout(KILL_WAIT_MS)).catch(() => undefined);
        throw error;
      }
      return out;
    },
  };
}
