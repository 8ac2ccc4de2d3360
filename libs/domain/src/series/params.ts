import { DomainError, type FieldError } from '../errors.ts';
import { queryReader, type Pattern, type RawDownloadQuery } from '../downloads/params.ts';

/**
 * A sampled series (GET /api/v1/metrics/series): the points of one or several metrics over a
 * time range, grouped into buckets of `step` milliseconds, each bucket giving the min, max,
 * average and count of the points in it. The range is chosen like a download's (the same
 * metrics, pattern, start_date and end_date); the bucket width comes from `points` (how many
 * buckets at most) or `step` (a width in milliseconds).
 */
export type SeriesParams = {
  readonly metrics: string;
  readonly pattern: Pattern;
  /** Inclusive bounds given by the caller, epoch milliseconds; null when left out (the data's own first or last point). */
  readonly fromMs: number | null;
  readonly toMs: number | null;
  /** Exactly one of the two is set. */
  readonly points: number | null;
  readonly stepMs: number | null;
};

/** maxPoints: MERIDIAN_MAX_SERIES_POINTS (buckets per series); maxSeries: MERIDIAN_MAX_SERIES_PER_REQUEST. */
export type SeriesLimits = { readonly maxPoints: number; readonly maxSeries: number };

/** Buckets asked for when neither points nor step is given (never more than the setting). */
export const DEFAULT_SERIES_POINTS = 1000;

/**
 * Bucket widths a step is rounded up to, so bucket boundaries fall on round times (a minute,
 * an hour, a day) and stay put when the range moves. Past a day, whole days.
 */
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY_MS = 24 * HOUR;
export const NICE_STEPS_MS: readonly number[] = [
  1,
  2,
  5,
  10,
  20,
  50,
  100,
  200,
  500,
  SECOND,
  2 * SECOND,
  5 * SECOND,
  10 * SECOND,
  15 * SECOND,
  30 * SECOND,
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
  DAY_MS,
];

/**
 * How many buckets of `stepMs` the inclusive range [fromMs, toMs] touches. Buckets are aligned
 * to the epoch (a bucket starts at a multiple of the step), as the query groups them:
 * intDiv(ts, step).
 */
export function bucketCount(fromMs: number, toMs: number, stepMs: number): number {
  if (toMs < fromMs) return 0;
  return Math.floor(toMs / stepMs) - Math.floor(fromMs / stepMs) + 1;
}

/** The smallest round step at least `atLeastMs` wide: one of NICE_STEPS_MS, or whole days past a day. */
export function roundStep(atLeastMs: number): number {
  const want = Math.max(1, Math.ceil(atLeastMs));
  const nice = NICE_STEPS_MS.find((s) => s >= want);
  return nice ?? Math.ceil(want / DAY_MS) * DAY_MS;
}

/**
 * The step that covers [fromMs, toMs] in at most `points` epoch-aligned buckets, rounded to
 * a round width: the whole range is sampled, never only its start. Always at least 1 ms.
 */
export function stepForPoints(fromMs: number, toMs: number, points: number): number {
  if (!Number.isSafeInteger(points) || points < 1) throw new RangeError(`points must be a whole number of at least 1: ${points}`);
  if (toMs < fromMs) return 1;
  const span = toMs - fromMs + 1;
  let step = roundStep(span / points);
  // Alignment to the epoch can add one bucket at the edges: widen until it fits.
  while (bucketCount(fromMs, toMs, step) > points) step = roundStep(step + 1);
  return step;
}

/**
 * Validates the series parameters, every problem at once, by parameter. The bounds that need
 * the data (how many buckets a step makes over a range taken from the catalog, how many metrics
 * a substring pattern matches) are checked by `checkSeriesBounds` once the metrics are known.
 */
export function parseSeriesParams(query: RawDownloadQuery, limits: SeriesLimits): SeriesParams {
  const errors: FieldError[] = [];
  const { one, selection, dateBound } = queryReader(query, errors);
  const { metrics, pattern } = selection(limits.maxSeries, '(MERIDIAN_MAX_SERIES_PER_REQUEST); chart fewer at once');
  const fromMs = dateBound('start_date');
  const toMs = dateBound('end_date');
  if (fromMs !== null && toMs !== null && fromMs > toMs) errors.push({ field: 'start_date', reason: 'is after end_date' });

  const whole = (name: 'points' | 'step', max: number | null): number | null => {
    const text = one(name);
    if (text === undefined) return null;
    if (!/^\d{1,16}$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
      errors.push({ field: name, reason: `must be a whole number of at least 1${name === 'step' ? ' (milliseconds)' : ''}` });
      return null;
    }
    const n = Number(text);
    if (max !== null && n > max) {
      errors.push({ field: name, reason: `must be at most ${max} (MERIDIAN_MAX_SERIES_POINTS); a longer range takes a wider step, not more points` });
      return null;
    }
    return n;
  };
  const pointsGiven = query.points !== undefined;
  const stepGiven = query.step !== undefined;
  if (pointsGiven && stepGiven) errors.push({ field: 'step', reason: 'give points or step, not both' });
  const points = whole('points', limits.maxPoints);
  const stepMs = whole('step', null);

  if (errors.length > 0) {
    throw new DomainError('validation', `invalid series parameters: ${errors.map((e) => `${e.field} ${e.reason}`).join('; ')}`, errors);
  }
  return {
    metrics: metrics!,
    pattern: pattern!,
    fromMs,
    toMs,
    points: stepMs === null ? (points ?? Math.min(DEFAULT_SERIES_POINTS, limits.maxPoints)) : null,
    stepMs,
  };
}

/** The range and step a series is read with. */
export type SeriesWindow = { readonly fromMs: number; readonly toMs: number; readonly stepMs: number };

/**
 * The range actually charted: the caller's bounds, each left out one taken from the data (the
 * first and last point of the chosen metrics, `extent`); and its step. A range the data does
 * not reach is kept as given (its series are empty). Throws the 400 of a step that would make
 * more buckets than MERIDIAN_MAX_SERIES_POINTS, or of more series than MERIDIAN_MAX_SERIES_PER_REQUEST.
 * Null when there is nothing to chart and no range to chart it in (no metric, no bounds).
 */
export function seriesWindow(
  params: SeriesParams,
  extent: { firstMs: number; lastMs: number } | null,
  seriesCount: number,
  limits: SeriesLimits,
): SeriesWindow | null {
  if (seriesCount > limits.maxSeries) {
    throw new DomainError(
      'validation',
      `the pattern matches ${seriesCount} metrics; at most ${limits.maxSeries} are charted at once (MERIDIAN_MAX_SERIES_PER_REQUEST)`,
      [{ field: 'metrics', reason: `matches ${seriesCount} metrics, more than ${limits.maxSeries} (MERIDIAN_MAX_SERIES_PER_REQUEST); narrow the pattern` }],
    );
  }
  let fromMs = params.fromMs ?? extent?.firstMs ?? params.toMs;
  let toMs = params.toMs ?? extent?.lastMs ?? params.fromMs;
  if (fromMs === null || toMs === null) return null;
  // One bound given, the other from data on the wrong side of it: an empty stretch at the given bound.
  if (fromMs > toMs) {
    if (params.fromMs === null) fromMs = toMs;
    else toMs = fromMs;
  }
  if (params.stepMs === null) return { fromMs, toMs, stepMs: stepForPoints(fromMs, toMs, params.points!) };
  const buckets = bucketCount(fromMs, toMs, params.stepMs);
  if (buckets > limits.maxPoints) {
    throw new DomainError(
      'validation',
      `a step of ${params.stepMs} ms makes ${buckets} points over the range; at most ${limits.maxPoints} (MERIDIAN_MAX_SERIES_POINTS)`,
      [
        {
          field: 'step',
          reason: `makes ${buckets} points per series, more than ${limits.maxPoints} (MERIDIAN_MAX_SERIES_POINTS); widen the step or narrow the range`,
        },
      ],
    );
  }
  return { fromMs, toMs, stepMs: params.stepMs };
}
