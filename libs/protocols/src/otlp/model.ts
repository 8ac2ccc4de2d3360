import { tooLarge } from '../decoded.ts';
import type { ProtocolLimits } from '../limits.ts';

/**
 * An OTLP metrics request as both decoders (protobuf and JSON) read it: only what becomes
 * series. Attributes are [key, value as text] pairs, at most one past `maxLabels` per point
 * (the rest counted in `extraAttributes`), so that a point with too many is refused without
 * holding them.
 */
export type Attribute = readonly [key: string, value: string];

type PointBase = {
  readonly attributes: Attribute[];
  readonly extraAttributes: number;
  /** time_unix_nano in whole milliseconds (rounded down). */
  readonly timeMs: number;
  /** flags bit 0: no recorded value. */
  readonly noValue: boolean;
};

export type NumberPoint = PointBase & { readonly value: number };
export type HistogramPoint = PointBase & {
  readonly count: number;
  readonly sum: number | null;
  readonly bounds: number[];
  readonly bucketCounts: number[];
};
export type SummaryPoint = PointBase & {
  readonly count: number;
  readonly sum: number;
  readonly quantiles: Array<readonly [quantile: number, value: number]>;
};

/** 0 unspecified, 1 delta, 2 cumulative (AggregationTemporality). */
export type Temporality = 0 | 1 | 2;

export type MetricData =
  | { readonly kind: 'gauge'; readonly points: NumberPoint[] }
  | { readonly kind: 'sum'; readonly monotonic: boolean; readonly temporality: Temporality; readonly points: NumberPoint[] }
  | { readonly kind: 'histogram'; readonly temporality: Temporality; readonly points: HistogramPoint[] }
  | { readonly kind: 'summary'; readonly points: SummaryPoint[] }
  | { readonly kind: 'exponential_histogram'; readonly points: number }
  | { readonly kind: 'none' };

export type OtlpMetric = { readonly name: string; readonly unit: string; readonly data: MetricData };

export type OtlpResourceMetrics = {
  /** service.name, service.namespace, service.instance.id of the resource ('' when absent). */
  readonly serviceName: string;
  readonly serviceNamespace: string;
  readonly serviceInstanceId: string;
  readonly metrics: OtlpMetric[];
};

/**
 * What a request may cost while it is read, before any series is named: resources, scopes and
 * metrics count against maxSeries (each makes at least one series or is empty), and the numbers
 * read (a point's value; a histogram's count, sum, bounds and bucket counts; a summary's count,
 * sum and quantiles) against twice maxSamples, about what the samples they make may hold. The
 * samples written are then held to maxSamples as they are named.
 */
export class ReadBudget {
  private items = 0;
  private samples = 0;
  private readonly limits: ProtocolLimits;

  constructor(limits: ProtocolLimits) {
    this.limits = limits;
  }

  item(): void {
    if (++this.items > this.limits.maxSeries)
      throw tooLarge(`more than ${this.limits.maxSeries} resources, scopes and metrics in one request: send fewer per request`);
  }

  points(n: number): void {
    this.samples += n;
    if (this.samples > 2 * this.limits.maxSamples) throw tooLarge(`more than ${this.limits.maxSamples} samples in one request: send fewer per request`);
  }
}
