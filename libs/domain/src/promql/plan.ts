import { labelsKey, labelValue, METRIC_NAME, onlyLabels, withoutLabels, type Labels } from '../series/labels.ts';
import type { Aggregate, Expr, Matcher, VectorSelector } from './ast.ts';
import { WINDOW_STATS_FUNCTIONS, type WindowStatsFunction } from './functions.ts';
import { badData } from './errors.ts';
import { matcherTest } from './parse.ts';
import { rollupBucketMs } from './rollup-windows.ts';

/**
 * What the metric store is asked for one selector: the series it chose and the samples of
 * them that some step can see. A step at t sees [t − offset − width, t − offset], width being
 * the range of a range selector or the lookback of an instant one; when the steps are further
 * apart than the width, only samples within width before some step are read, so a 1 h step
 * over a month does not read every sample of the month.
 */
export type SampleWindow = {
  readonly selectorId: number;
  /** The catalog names of the series, exactly as stored. */
  readonly names: readonly string[];
  /** Inclusive bounds of the samples read, epoch ms. */
  readonly fromMs: number;
  readonly toMs: number;
  /** When not null: keep a sample at ts only if (firstRefMs − ts) mod stepMs (taken non-negative) <= widthMs. */
  readonly sparse: { readonly firstRefMs: number; readonly stepMs: number; readonly widthMs: number } | null;
  /**
   * When not null, the selector is the range argument of this function, and each series is
   * reduced to the function's value per step as its samples arrive (reduce.ts; step k ends at
   * firstRefMs + k·stepMs and spans rangeMs) instead of its samples being kept.
   */
  readonly reduce: {
    readonly func: WindowStatsFunction;
    readonly firstRefMs: number;
    readonly stepMs: number;
    readonly steps: number;
    readonly rangeMs: number;
    /**
     * When not null, the function is the whole argument of this aggregation, which is folded from
     * the reduced values too: each name's group (an index into `labels`), one value per group and step.
     */
    readonly aggregate: { readonly op: StoreAggregateOp; readonly groupOf: readonly number[]; readonly labels: readonly Labels[] } | null;
  } | null;
  /**
   * When not null (reduce is then set too), every step's window is whole buckets of this width
   * and the sample at the step's time: the buckets are read from the rollup of that width.
   */
  readonly rollup: { readonly bucketMs: number } | null;
};

/** The aggregations folded from a reduced function's values (none takes a parameter). */
export const STORE_AGGREGATIONS = ['sum', 'avg', 'min', 'max', 'count'] as const;
export type StoreAggregateOp = (typeof STORE_AGGREGATIONS)[number];

type Fetch = { selector: VectorSelector; rangeMs: number; func: WindowStatsFunction | null; aggregate: Aggregate | null };

/** Every selector of a query, with its range and the function it is the range argument of when that function can be reduced per series. */
function fetchesOf(e: Expr): Fetch[] {
  switch (e.kind) {
    case 'number':
    case 'string':
      return [];
    case 'vector':
      return [{ selector: e, rangeMs: 0, func: null, aggregate: null }];
    case 'matrix':
      return [{ selector: e.selector, rangeMs: e.rangeMs, func: null, aggregate: null }];
    case 'call': {
      const reducible = (WINDOW_STATS_FUNCTIONS as readonly string[]).includes(e.func) ? (e.func as WindowStatsFunction) : null;
      return e.args.flatMap((arg) =>
        arg.kind === 'matrix' && reducible ? [{ selector: arg.selector, rangeMs: arg.rangeMs, func: reducible, aggregate: null }] : fetchesOf(arg),
      );
    }
    case 'aggregate': {
      const inner = [...(e.param ? fetchesOf(e.param) : []), ...fetchesOf(e.expr)];
      // sum by (…) (rate(x[5m])): what is reduced may be folded per group as well.
      const direct = e.expr.kind === 'call' && e.expr.args.length === 1 && e.expr.args[0]!.kind === 'matrix';
      const storable = (STORE_AGGREGATIONS as readonly string[]).includes(e.op);
      return direct && storable && inner.length === 1 && inner[0]!.func ? [{ ...inner[0]!, aggregate: e }] : inner;
    }
    case 'binary':
      return [...fetchesOf(e.lhs), ...fetchesOf(e.rhs)];
    case 'negate':
      return fetchesOf(e.expr);
    default: {
      const never: never = e;
      return never;
    }
  }
}

/** Every vector selector of a query, those of range selectors included. */
export function querySelectors(e: Expr): VectorSelector[] {
  return fetchesOf(e).map((f) => f.selector);
}

/**
 * A series the caller may read: its catalog name and the labels it parses to; with its points
 * and extent (epoch ms) when known, from which the samples a window reads are estimated.
 */
export type CatalogSeries = {
  readonly name: string;
  readonly labels: Labels;
  readonly extent?: { readonly points: number; readonly firstMs: number; readonly lastMs: number };
};

/** The samples of these series between two times, assuming each spreads its points evenly over its extent. */
function estimatedSamples(series: readonly CatalogSeries[], fromMs: number, toMs: number): number {
  let total = 0;
  for (const s of series) {
    if (!s.extent) return Number.POSITIVE_INFINITY;
    const { points, firstMs, lastMs } = s.extent;
    const overlap = Math.min(toMs, lastMs) - Math.max(fromMs, firstMs) + 1;
    if (overlap > 0) total += (points * overlap) / (lastMs - firstMs + 1);
  }
  return total;
}

/** The series every matcher accepts (a missing label matches as the empty value). */
export function matchSeries(matchers: readonly Matcher[], series: readonly CatalogSeries[]): CatalogSeries[] {
  const tests = matchers.map((m) => ({ name: m.name, test: matcherTest(m) }));
  return series.filter((s) => tests.every(({ name, test }) => test(labelValue(s.labels, name))));
}

/**
 * The windows of every selector of a query evaluated from startMs to endMs every stepMs (an
 * instant query: start = end). A reducible function is reduced per series as its samples arrive when the
 * samples it would read are at least `reduceRatio` times the rows it answers instead (series ×
 * steps); null never reduces (the evaluation then computes every function from the samples).
 * A function a rollup answers, over windows of whole buckets (rollupBucketMs), is read from the
 * rollup when its range is at least rollups.minRangeMs and the samples in range (estimated from
 * the catalog) are at least rollups.minPointsPerBucket times the buckets it would read (null: never).
 */
export function planWindows(
  e: Expr,
  series: readonly CatalogSeries[],
  startMs: number,
  endMs: number,
  stepMs: number,
  lookbackMs: number,
  reduceRatio: number | null = null,
  rollups: RollupPolicy | null = null,
): SampleWindow[] {
  const steps = endMs > startMs ? Math.floor((endMs - startMs) / stepMs) + 1 : 1;
  return fetchesOf(e).map(({ selector, rangeMs, func, aggregate }) => {
    const width = rangeMs > 0 ? rangeMs : lookbackMs;
    const firstRef = startMs - selector.offsetMs;
    const lastRef = endMs - selector.offsetMs;
    const chosen = matchSeries(selector.matchers, series);
    const names = chosen.map((s) => s.name);
    const sparse = endMs > startMs && stepMs > width + 1 ? { firstRefMs: firstRef, stepMs, widthMs: width } : null;
    const fromMs = firstRef - width;
    if (!Number.isSafeInteger(fromMs) || !Number.isSafeInteger(lastRef))
      throw badData('the times the query reads (time, minus offsets and ranges) are out of range');
    const reduceStep = steps > 1 ? stepMs : 1;
    const aligned = func === null || !rollups ? null : rollupBucketMs(func, rangeMs, { firstRefMs: firstRef, stepMs: reduceStep, steps }, rollups.minRangeMs);
    const bucketMs = aligned !== null && rollupWorthIt(rollups!, chosen, fromMs, lastRef, aligned) ? aligned : null;
    const worthIt =
      bucketMs !== null ||
      (reduceRatio !== null && func !== null && (reduceRatio === 0 || estimatedSamples(chosen, fromMs, lastRef) >= reduceRatio * chosen.length * steps));
    const reduce =
      worthIt && func !== null
        ? { func, firstRefMs: firstRef, stepMs: reduceStep, steps, rangeMs, aggregate: aggregate ? groupsOf(aggregate, chosen, func) : null }
        : null;
    return { selectorId: selector.id, names, fromMs, toMs: lastRef, sparse, reduce, rollup: bucketMs === null ? null : { bucketMs } };
  });
}

/** When the rollups are read: the least range, and the least samples per bucket read (0: whatever the samples). */
export type RollupPolicy = { readonly minRangeMs: number; readonly minPointsPerBucket: number };

/**
 * Whether the samples in range are enough per bucket for a rollup read to be the cheaper: reading
 * a bucket costs far more than reading a sample, so sparse series are read raw.
 */
function rollupWorthIt(policy: RollupPolicy, chosen: readonly CatalogSeries[], fromMs: number, toMs: number, bucketMs: number): boolean {
  if (policy.minPointsPerBucket === 0) return true;
  const buckets = chosen.length * Math.ceil((toMs - fromMs) / bucketMs);
  return estimatedSamples(chosen, fromMs, toMs) >= policy.minPointsPerBucket * buckets;
}

/** Each series' group under an aggregation of a range function's results (whose labels lose the name but last_over_time's). */
function groupsOf(
  e: Aggregate,
  series: readonly CatalogSeries[],
  func: WindowStatsFunction,
): { op: StoreAggregateOp; groupOf: number[]; labels: Labels[] } | null {
  const grouping = new Set(e.grouping);
  const without = new Set([...e.grouping, METRIC_NAME]);
  const index = new Map<string, number>();
  const labels: Labels[] = [];
  const owns = series.map((s) => (func === 'last_over_time' ? s.labels : s.labels.filter(([n]) => n !== METRIC_NAME)));
  // Two series alike but for their name make the function's result an error in Prometheus: left to the evaluation, which raises it.
  if (new Set(owns.map(labelsKey)).size !== owns.length) return null;
  const groupOf = owns.map((own) => {
    const g = e.without ? withoutLabels(own, without) : onlyLabels(own, grouping);
    const key = labelsKey(g);
    let i = index.get(key);
    if (i === undefined) {
      index.set(key, (i = labels.length));
      labels.push(g);
    }
    return i;
  });
  return { op: e.op as StoreAggregateOp, groupOf, labels };
}
