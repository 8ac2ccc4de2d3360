import type { Label } from '@meridian/domain';
import { SeriesCollector, type DecodedPush, type DecodedSeries } from '../decoded.ts';
import { labelsFromAttributes } from '../label-names.ts';
import type { ProtocolLimits } from '../limits.ts';
import { formatFloat, otlpMetricName, type OtlpNameKind } from './metric-name.ts';
import type { HistogramPoint, NumberPoint, OtlpMetric, OtlpResourceMetrics, SummaryPoint } from './model.ts';

/**
 * OTLP metrics as series, the OpenTelemetry-to-Prometheus mapping:
 * - gauge → `name{attributes}`; sum → `name_total` when monotonic, `name` when not;
 * - histogram → `name_bucket{le="b"}` (cumulative counts, `+Inf` = count), `name_sum`, `name_count`;
 * - summary → `name{quantile="q"}`, `name_sum`, `name_count`;
 * - the resource's `service.name` (after `service.namespace` and `/` when there is one) as `job`
 *   and `service.instance.id` as `instance`, over any point attribute of those names;
 * - delta sums are stored as sent, each point the increase over its own interval, named as a
 *   non-monotonic sum (without `_total`, which promises a running count); delta histograms as
 *   sent too, each point the counts of its interval;
 * - refused per data point, with a reason: exponential histograms, an unspecified temporality,
 *   a name that cannot be written, more attributes than labels allowed;
 * - points flagged as having no recorded value are dropped and counted, as stale markers are.
 */
export function otlpToSeries(resources: readonly OtlpResourceMetrics[], limits: ProtocolLimits): OtlpDecodedPush {
  const collector = new SeriesCollector(limits);
  const refused = { dataPoints: 0 };
  for (const resource of resources) {
    const job = resource.serviceNamespace !== '' && resource.serviceName !== '' ? `${resource.serviceNamespace}/${resource.serviceName}` : resource.serviceName;
    const target: Label[] = [];
    if (job !== '') target.push(['job', job]);
    if (resource.serviceInstanceId !== '') target.push(['instance', resource.serviceInstanceId]);
    for (const metric of resource.metrics) refused.dataPoints += emitMetric(collector, metric, target);
  }
  return { ...collector.result(), rejectedDataPoints: refused.dataPoints };
}

/**
 * A decoded OTLP push, with what OTLP counts: the data points of which any sample was refused
 * (a histogram point is one data point and several samples). `rejectedPoints` counts samples.
 */
export type OtlpDecodedPush = DecodedPush & { readonly rejectedDataPoints: number };

/** The labels of a point: its attributes sanitised, then job and instance from the resource. */
function pointLabels(point: NumberPoint | HistogramPoint | SummaryPoint, target: readonly Label[]): Label[] {
  const labels = labelsFromAttributes(point.attributes);
  if (target.length === 0) return labels;
  const kept = labels.filter(([name]) => !target.some(([t]) => t === name));
  return [...kept, ...target];
}

function nameKind(metric: OtlpMetric): OtlpNameKind | null {
  switch (metric.data.kind) {
    case 'gauge':
      return 'gauge';
    case 'sum':
      return metric.data.monotonic && metric.data.temporality === 2 ? 'monotonic_counter' : 'counter';
    case 'histogram':
      return 'histogram';
    case 'summary':
      return 'summary';
    default:
      return null;
  }
}

function pointCount(metric: OtlpMetric): number {
  const data = metric.data;
  if (data.kind === 'none') return 0;
  if (data.kind === 'exponential_histogram') return data.points;
  return data.points.length;
}

/** Writes a metric's points; answers how many of its data points lost a sample to a refusal. */
function emitMetric(collector: SeriesCollector, metric: OtlpMetric, target: readonly Label[]): number {
  const data = metric.data;
  const kind = nameKind(metric);
  const where = (i: number) => `metric ${JSON.stringify(metric.name.slice(0, 200))} data point ${i}`;
  const refuseAll = (reason: string): number => {
    const n = pointCount(metric);
    if (n > 0) collector.refuseSeries(`metric ${JSON.stringify(metric.name.slice(0, 200))}`, reason, n);
    return n;
  };
  if (data.kind === 'none') return 0;
  if (data.kind === 'exponential_histogram') return refuseAll('exponential histograms are not stored (configure the sender for explicit-bucket histograms)');
  if ((data.kind === 'sum' || data.kind === 'histogram') && data.temporality === 0) return refuseAll('aggregation temporality is unspecified');
  const name = otlpMetricName(metric.name, metric.unit, kind!);
  if (name === '') return refuseAll(`metric name ${JSON.stringify(metric.name)} has no character a Prometheus name can hold`);

  const points: ReadonlyArray<NumberPoint | HistogramPoint | SummaryPoint> = data.points;
  let refusedDataPoints = 0;
  for (let i = 0; i < points.length; i++) {
    const point = points[i]!;
    const refusedBefore = collector.refusedSoFar;
    const samples =
      data.kind === 'histogram'
        ? (point as HistogramPoint).bounds.length + 2 + ((point as HistogramPoint).sum === null ? 0 : 1)
        : data.kind === 'summary'
          ? (point as SummaryPoint).quantiles.length + 2
          : 1;
    if (point.noValue) {
      for (let k = 0; k < samples; k++) collector.staleMarker();
      continue;
    }
    if (point.attributes.length + point.extraAttributes > collector.limits.maxLabels) {
      collector.refuseSeries(where(i), `has ${point.attributes.length + point.extraAttributes} attributes, more than ${collector.limits.maxLabels}`, samples);
      refusedDataPoints++;
      continue;
    }
    const labels = pointLabels(point, target);
    if (data.kind === 'gauge' || data.kind === 'sum') {
      write(collector, name, labels, point.timeMs, (point as NumberPoint).value, where(i));
    } else if (data.kind === 'histogram') {
      emitHistogram(collector, name, labels, point as HistogramPoint, where(i));
    } else {
      emitSummary(collector, name, labels, point as SummaryPoint, where(i));
    }
    if (collector.refusedSoFar > refusedBefore) refusedDataPoints++;
  }
  return refusedDataPoints;
}

/** Writes one sample of one series, or records why not. */
function write(collector: SeriesCollector, metric: string, labels: readonly Label[], timeMs: number, value: number, where: string): DecodedSeries | null {
  const opened = collector.open(metric, labels);
  if (!opened.ok) {
    collector.refuseSeries(where, opened.reason, 1);
    return null;
  }
  const reason = collector.add(opened.series, timeMs, value);
  if (reason !== null) collector.refusePoints(where, reason, 1);
  return opened.series;
}

function emitHistogram(collector: SeriesCollector, name: string, labels: readonly Label[], point: HistogramPoint, where: string): void {
  const { bounds, bucketCounts } = point;
  if (bucketCounts.length !== 0 && bucketCounts.length !== bounds.length + 1) {
    collector.refuseSeries(
      where,
      `has ${bucketCounts.length} bucket counts for ${bounds.length} bounds (there must be one more count than bounds)`,
      bounds.length + 3,
    );
    return;
  }
  // The buckets are cumulative in Prometheus: each counts every value up to its bound.
  let cumulative = 0;
  for (let b = 0; b < bounds.length && bucketCounts.length > 0; b++) {
    cumulative += bucketCounts[b] ?? 0;
    write(collector, `${name}_bucket`, [...labels, ['le', formatFloat(bounds[b]!)]], point.timeMs, cumulative, where);
  }
  write(collector, `${name}_bucket`, [...labels, ['le', '+Inf']], point.timeMs, point.count, where);
  if (point.sum !== null) write(collector, `${name}_sum`, labels, point.timeMs, point.sum, where);
  write(collector, `${name}_count`, labels, point.timeMs, point.count, where);
}

function emitSummary(collector: SeriesCollector, name: string, labels: readonly Label[], point: SummaryPoint, where: string): void {
  for (const [quantile, value] of point.quantiles) {
    write(collector, name, [...labels, ['quantile', formatFloat(quantile)]], point.timeMs, value, where);
  }
  write(collector, `${name}_sum`, labels, point.timeMs, point.sum, where);
  write(collector, `${name}_count`, labels, point.timeMs, point.count, where);
}

/**
 * The OTLP answer's partial_success for a decoded push: the refused data points and a message
 * (the first reasons), or null when nothing was refused.
 */
export function otlpPartialSuccess(push: OtlpDecodedPush): { rejectedDataPoints: number; errorMessage: string } | null {
  if (push.rejectedDataPoints === 0) return null;
  const first = push.rejected
    .slice(0, 3)
    .map((r) => `${r.where}: ${r.reason}`)
    .join('; ');
  const more = push.rejected.length > 3 || push.rejectedPoints > push.rejected.reduce((n, r) => n + r.points, 0) ? '; ...' : '';
  return { rejectedDataPoints: push.rejectedDataPoints, errorMessage: `${push.rejectedDataPoints} data points refused: ${first}${more}` };
}
