import { telemetrySeries, type Series, type SeriesKind } from './telemetry.ts';

/**
 * A fleet of scraped series, as a store of telemetry receives it: each series one of the kinds of
 * telemetry.ts (random walks, counters, levels, noisy gauges, in turn), scraped every 10, 15 or
 * 60 s (in turn, so a third of the series each) with jittered timestamps, all over the same span
 * of time, so the slower series hold fewer points. Handed out window by window, every series'
 * points of the window together, the way agents push every so often. Seeded by the names: two
 * systems fed the same fleet get the same points.
 */
export type FleetSeries = { readonly name: string; readonly kind: SeriesKind; readonly intervalMs: number; readonly points: number };

export type Fleet = {
  readonly series: readonly FleetSeries[];
  /** Points in all: `points` of the options, give or take a point a series. */
  readonly points: number;
  /** The first scrape and the span the fleet covers, in ms. */
  readonly t0: number;
  readonly spanMs: number;
  /** Every series' points, window after window of `windowMs` (the last may be short), each series' points in time order. */
  windows(windowMs: number): Generator<Series[]>;
};

export const FLEET_INTERVALS_MS: readonly number[] = [10_000, 15_000, 60_000];
const KINDS: readonly SeriesKind[] = ['walk', 'counter', 'level', 'noisy'];

export function telemetryFleet(options: { readonly series: number; readonly points: number; readonly t0: number; readonly prefix?: string }): Fleet {
  const prefix = options.prefix ?? 'fleet';
  const shapes = Array.from({ length: options.series }, (_, i) => ({
    name: `${prefix}_${KINDS[i % KINDS.length]}_${i}`,
    kind: KINDS[i % KINDS.length]!,
    intervalMs: FLEET_INTERVALS_MS[i % FLEET_INTERVALS_MS.length]!,
  }));
  // One span for all: points = span × Σ 1/interval.
  const perMs = shapes.reduce((sum, s) => sum + 1 / s.intervalMs, 0);
  const spanMs = Math.max(1, Math.round(options.points / perMs));
  const series = shapes.map((s) => ({ ...s, points: Math.max(1, Math.round(spanMs / s.intervalMs)) }));
  return {
    series,
    points: series.reduce((n, s) => n + s.points, 0),
    t0: options.t0,
    spanMs,
    *windows(windowMs) {
      const sources = series.map((s) => ({ ...s, source: telemetrySeries(s.name, options.t0, s.intervalMs, s.kind), taken: 0 }));
      for (let end = windowMs; sources.some((s) => s.taken < s.points); end += windowMs) {
        const window: Series[] = [];
        for (const s of sources) {
          const due = Math.min(s.points, Math.ceil(end / s.intervalMs)) - s.taken;
          if (due <= 0) continue;
          window.push(s.source.next(due));
          s.taken += due;
        }
        yield window;
      }
    },
  };
}
