import { DomainError, END_TIMESTAMP_MS, MIN_TIMESTAMP_MS, seriesName, type Label } from '@meridian/domain';
import type { ProtocolLimits } from './limits.ts';

/**
 * What every decoder makes of a push: the series to write, as columns, and what it refused.
 * `name` is the canonical series name (`seriesName` of @meridian/domain), the one entitlements
 * and downloads see; `metric` and `labels` are its parts (labels sorted by name, the metric
 * name not among them), for a store that keeps the labels beside the name.
 */
export type DecodedSeries = {
  readonly name: string;
  readonly metric: string;
  readonly labels: readonly Label[];
  /** Epoch milliseconds, in the order sent; the same index in `values` is the point's value. */
  readonly timestamps: number[];
  readonly values: number[];
};

/** One refusal: where (a series name, a line number, a data point), why, and how many points it cost. */
export type Rejected = { readonly where: string; readonly reason: string; readonly points: number };

export type DecodedPush = {
  readonly series: DecodedSeries[];
  /** The first refusals (up to `maxRejectionsListed`), in input order. */
  readonly rejected: Rejected[];
  /** Every point refused, listed or not. */
  readonly rejectedPoints: number;
  /** Points written: the sum of the series' lengths. */
  readonly samples: number;
  /**
   * Points dropped by rule, not refused (no error is owed for them): Prometheus stale markers
   * and OTLP points flagged as having no recorded value (they mark an end, not a value), and
   * Influx string fields (text, where a series holds numbers).
   */
  readonly dropped: { readonly staleMarkers: number; readonly stringFields: number };
};

/** A request refused whole: malformed (400) or past a request-wide bound (413). */
export function malformed(reason: string): DomainError {
  return new DomainError('validation', reason, [{ field: 'body', reason }]);
}

export function tooLarge(reason: string): DomainError {
  return new DomainError('payload_too_large', reason, [{ field: 'body', reason }]);
}

/** Code points of a string (what metric name lengths count). */
export function codePointLength(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) n--;
    }
  }
  return n;
}

export type OpenResult = { readonly ok: true; readonly series: DecodedSeries } | { readonly ok: false; readonly reason: string };

/**
 * Gathers a push's series by canonical name (a series sent twice in one request is one
 * series) and enforces the bounds as it goes, so that a hostile body is refused before it has
 * cost more than its bytes: the request-wide bounds throw, the per-series ones refuse the series.
 */
export class SeriesCollector {
  readonly limits: ProtocolLimits;
  private readonly byName = new Map<string, DecodedSeries>();
  private readonly rejected: Rejected[] = [];
  private rejectedPoints = 0;
  private samplesSeen = 0;
  private written = 0;
  private stale = 0;
  private strings = 0;
  private refusedSeries = 0;

  constructor(limits: ProtocolLimits) {
    this.limits = limits;
  }

  /** The series `metric` with `labels`, made on first use, or why it cannot be written. */
  open(metric: string, labels: readonly Label[]): OpenResult {
    const { maxLabels, maxLabelNameLength, maxLabelValueLength } = this.limits;
    if (labels.length > maxLabels) return { ok: false, reason: `has ${labels.length} labels, more than ${maxLabels}` };
    for (const [name, value] of labels) {
      // Code points are at most UTF-16 units: count them only past the bound.
      if (name.length > maxLabelNameLength && codePointLength(name) > maxLabelNameLength)
        return { ok: false, reason: `label name ${JSON.stringify(name.slice(0, 40))}... is longer than ${maxLabelNameLength} characters` };
      if (value.length > maxLabelValueLength && codePointLength(value) > maxLabelValueLength)
        return { ok: false, reason: `the value of label ${name} is longer than ${maxLabelValueLength} characters` };
    }
    const named = seriesName(metric, labels);
    if (!named.ok) return named;
    let series = this.byName.get(named.name);
    if (series === undefined) {
      this.countSeries();
      series = { name: named.name, metric, labels: named.labels, timestamps: [], values: [] };
      this.byName.set(named.name, series);
    }
    return { ok: true, series };
  }

  /** The series of a name made and checked before (a SeriesNameCache hit), made on first use. */
  openNamed(named: { readonly name: string; readonly metric: string; readonly labels: readonly Label[] }): DecodedSeries {
    let series = this.byName.get(named.name);
    if (series === undefined) {
      this.countSeries();
      series = { name: named.name, metric: named.metric, labels: named.labels, timestamps: [], values: [] };
      this.byName.set(named.name, series);
    }
    return series;
  }

  /**
   * Adds one point, or answers why it is refused (the caller records it with its place):
   * a timestamp outside 1970 to 2105, a value that is not a finite number (NaN that is not a
   * stale marker, an infinity).
   */
  add(series: DecodedSeries, timestampMs: number, value: number): string | null {
    this.countSamples(1);
    if (!(timestampMs >= MIN_TIMESTAMP_MS && timestampMs < END_TIMESTAMP_MS)) {
      return `timestamp ${timestampMs} ms is outside 1970-01-01 to 2105-12-31`;
    }
    if (!Number.isFinite(value)) return `value ${value} is not a finite number`;
    series.timestamps.push(timestampMs);
    series.values.push(value);
    this.written++;
    return null;
  }

  /** A stale marker or a point without a value: counted, not written. */
  staleMarker(): void {
    this.countSamples(1);
    this.stale++;
  }

  /** A string field of line protocol: counted, not written. */
  stringField(): void {
    this.countSamples(1);
    this.strings++;
  }

  /** Refuses a whole series (its `points` points) with a reason. */
  refuseSeries(where: string, reason: string, points: number): void {
    this.refusedSeries++;
    if (this.byName.size + this.refusedSeries > this.limits.maxSeries) throw this.seriesBound();
    this.countSamples(points);
    this.refusePoints(where, reason, points);
  }

  /** Counts samples that are refused by the caller without a series (a bad line, a bad data point). */
  countSamples(points: number): void {
    this.samplesSeen += points;
    if (this.samplesSeen > this.limits.maxSamples) {
      throw tooLarge(`more than ${this.limits.maxSamples} samples in one request: send fewer per request`);
    }
  }

  /** Records refused points without counting them as samples again. */
  refusePoints(where: string, reason: string, points: number): void {
    this.rejectedPoints += points;
    if (this.rejected.length < this.limits.maxRejectionsListed) this.rejected.push({ where, reason, points });
  }

  /** Points refused so far (to tell whether one input item lost any). */
  get refusedSoFar(): number {
    return this.rejectedPoints;
  }

  private countSeries(): void {
    if (this.byName.size + 1 + this.refusedSeries > this.limits.maxSeries) throw this.seriesBound();
  }

  private seriesBound(): DomainError {
    return tooLarge(`more than ${this.limits.maxSeries} series in one request: send fewer per request`);
  }

  result(): DecodedPush {
    const series: DecodedSeries[] = [];
    for (const s of this.byName.values()) if (s.values.length > 0) series.push(s);
    return {
      series,
      rejected: this.rejected,
      rejectedPoints: this.rejectedPoints,
      samples: this.written,
      dropped: { staleMarkers: this.stale, stringFields: this.strings },
    };
  }
}
