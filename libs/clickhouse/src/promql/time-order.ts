import { withRoom } from './row-binary.ts';

/**
 * A series' samples as ClickHouse's groupArray hands them over: in the order its threads read
 * the parts, so a few runs each ascending by time (a part is sorted by name and time). They are
 * put in time order by merging the runs (stable), which costs one pass where they already are;
 * whether a timestamp repeats (uploaded again) is then seen between neighbours.
 */
export type TimeSorted = { readonly ts: number[]; readonly vs: number[]; readonly n: number; readonly repeats: boolean };

/** The arrays a merge writes into, reused from series to series (grown to the longest): see row-binary.ts for why. */
export type MergeScratch = { ts: number[]; vs: number[] };

export const mergeScratch = (): MergeScratch => ({ ts: [], vs: [] });

/** Where each ascending run of the first n starts (non-decreasing: a repeated timestamp stays in its run), and n at the end. */
function runStarts(ts: readonly number[], n: number): number[] {
  const starts = [0];
  for (let i = 1; i < n; i++) if (ts[i]! < ts[i - 1]!) starts.push(i);
  starts.push(n);
  return starts;
}

/**
 * Merges neighbouring runs pairwise until one is left, each pass from one pair of arrays into the
 * other (the input's and the spare's, which both end up overwritten); on equal times the earlier
 * run's sample comes first. Answers the pair that holds the result.
 */
function mergeRuns(ts: number[], vs: number[], starts: number[], spare: MergeScratch): { ts: number[]; vs: number[] } {
  const n = starts[starts.length - 1]!;
  let [a, b] = [ts, vs];
  let [ta, va] = [withRoom(spare.ts, n), withRoom(spare.vs, n)];
  let bounds = starts;
  while (bounds.length > 2) {
    const next = [0];
    for (let r = 0; r + 1 < bounds.length; r += 2) {
      const [lo, mid] = [bounds[r]!, bounds[r + 1]!];
      const hi = r + 2 < bounds.length ? bounds[r + 2]! : mid;
      let [i, j, k] = [lo, mid, lo];
      while (i < mid && j < hi) {
        const fromLeft = a[i]! <= a[j]!;
        const from = fromLeft ? i++ : j++;
        ta[k] = a[from]!;
        va[k++] = b[from]!;
      }
      for (; i < mid; i++, k++) [ta[k], va[k]] = [a[i]!, b[i]!];
      for (; j < hi; j++, k++) [ta[k], va[k]] = [a[j]!, b[j]!];
      next.push(hi);
    }
    [a, b, ta, va, bounds] = [ta, va, a, b, next];
  }
  return { ts: a, vs: b };
}

/**
 * The first n samples in time order (in ts and vs themselves, or in the spare arrays: the first
 * n of the answer's), and whether some timestamp comes more than once.
 */
export function timeSorted(ts: number[], vs: number[], n = ts.length, spare: MergeScratch = mergeScratch()): TimeSorted {
  const starts = runStarts(ts, n);
  const sorted = starts.length > 2 ? mergeRuns(ts, vs, starts, spare) : { ts, vs };
  let repeats = false;
  for (let i = 1; i < n && !repeats; i++) repeats = sorted.ts[i] === sorted.ts[i - 1];
  return { ...sorted, n, repeats };
}

/**
 * The newest row of each timestamp, in time order, as a download with latest_only keeps it:
 * the greatest (updated_at, Kafka partition, offset, row in batch). For the few series where a
 * timestamp repeats (timeSorted says so), read again with their versions.
 */
export function newestPerTimestamp(ts: readonly number[], vs: readonly number[], versions: readonly (readonly number[])[]): { ts: number[]; vs: number[] } {
  const newerFirst = (i: number, j: number): number => {
    if (ts[i] !== ts[j]) return ts[i]! - ts[j]!;
    for (const v of versions) if (v[i] !== v[j]) return v[j]! - v[i]!;
    return 0;
  };
  const order = ts.map((_, i) => i).sort(newerFirst);
  const out = { ts: [] as number[], vs: [] as number[] };
  for (const i of order) {
    if (out.ts.length > 0 && out.ts[out.ts.length - 1] === ts[i]) continue;
    out.ts.push(ts[i]!);
    out.vs.push(vs[i]!);
  }
  return out;
}
