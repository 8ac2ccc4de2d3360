import { readSeriesBuckets, resolutionOf, streamSamples, type ConnOptions, type SamplesRequest } from '@meridian/clickhouse';
import { rollupStepValues, type Labels, type RollupFunction, type SampleWindow, type StepValues } from '@meridian/domain';

/** A series as the catalog knows it: its labels and its first point (epoch ms), which retention moves forward. */
export type KnownSeries = { readonly labels: Labels; readonly firstMs: number };

/**
 * Series whose first raw point falls inside a bucket are read raw in that bucket (the rollup
 * outlives the raw points retention removes, so its first bucket may hold more): one read per
 * distinct such bucket; past this many, the window is read from the samples instead.
 */
const MAX_EDGE_READS = 8;

type Read = { values: Array<{ name: string; values: StepValues }>; read: number | 'too_many' };

/**
 * A window planned on a rollup (SampleWindow.rollup): each series' buckets from the rollup, the
 * samples at exactly each step's time, and the raw samples of a first bucket the raw points only
 * partly hold, reduced to the function's value per step (rollupStepValues). Every bucket read
 * counts as a sample against the query's bound. 'raw' when the window is better read from the
 * samples (too many first buckets to read raw).
 */
export async function readRollupWindow(
  conn: ConnOptions,
  w: SampleWindow,
  request: SamplesRequest,
  known: ReadonlyMap<string, KnownSeries>,
): Promise<Read | 'raw'> {
  const reduce = w.reduce!;
  const bucketMs = w.rollup!.bucketMs;
  const firstRef = reduce.firstRefMs;
  const lastRef = w.toMs;
  const fromBucket = new Map(w.names.map((n) => [n, Math.ceil((known.get(n)?.firstMs ?? 0) / bucketMs) * bucketMs]));
  // Series by the bucket-aligned start of their raw points, where a partial first bucket is in range.
  const edges = new Map<number, string[]>();
  for (const [name, from] of fromBucket) {
    const partial = from !== known.get(name)?.firstMs && from - bucketMs <= lastRef && from > w.fromMs;
    if (partial) edges.set(from, [...(edges.get(from) ?? []), name]);
  }
  if (edges.size > MAX_EDGE_READS) return 'raw';
  const buckets = await readSeriesBuckets(conn, {
    resolution: resolutionOf(bucketMs),
    names: w.names,
    fromMs: w.fromMs,
    // The bucket starting at the last step's time is not in any window: only its first sample is.
    toMs: lastRef - 1,
    maxBuckets: request.maxSamples,
    ...(request.queryId ? { queryId: request.queryId } : {}),
    ...(request.signal ? { signal: request.signal } : {}),
  });
  if (buckets === 'too_many') return { values: [], read: 'too_many' };
  let read = [...buckets.values()].reduce((n, rows) => n + rows.length, 0);
  const samples = new Map<string, Array<[number, number]>>();
  const collect = async (req: SamplesRequest): Promise<boolean> => {
    const got = await streamSamples(conn, { ...req, maxSamples: request.maxSamples - read }, (s) => {
      const list = samples.get(s.name) ?? [];
      for (let i = 0; i < s.n; i++) list.push([s.ts[i]!, s.vs[i]!]);
      samples.set(s.name, list);
    });
    if (got === 'too_many') return false;
    read += got;
    return true;
  };
  const ends = { ...request, fromMs: firstRef, toMs: lastRef, sparse: reduce.steps > 1 ? { firstRefMs: firstRef, stepMs: reduce.stepMs, widthMs: 0 } : null };
  if (!(await collect({ ...ends, ...(request.queryId ? { queryId: `${request.queryId}-ends` } : {}) }))) return { values: [], read: 'too_many' };
  for (const [i, [from, names]] of [...edges].entries()) {
    const edge = { ...request, names, fromMs: Math.max(w.fromMs, from - bucketMs), toMs: Math.min(lastRef, from - 1), sparse: null };
    if (!(await collect({ ...edge, ...(request.queryId ? { queryId: `${request.queryId}-edge-${i}` } : {}) }))) return { values: [], read: 'too_many' };
  }
  const values: Read['values'] = [];
  for (const name of w.names) {
    const rows = buckets.get(name) ?? [];
    const own = (samples.get(name) ?? []).sort((a, b) => a[0] - b[0]).filter((p, i, all) => i === 0 || p[0] !== all[i - 1]![0]);
    if (rows.length === 0 && own.length === 0) continue;
    const series = { labels: known.get(name)!.labels, buckets: rows, fromBucketMs: fromBucket.get(name)!, ts: own.map((p) => p[0]), vs: own.map((p) => p[1]) };
    values.push({ name, values: rollupStepValues(reduce.func as RollupFunction, series, reduce) });
  }
  return { values, read };
}
