import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp, seriesName, type Labels } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { prometheusBinaries, startPrometheus, type RunningPrometheus } from '../support/prometheus.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { uploadFile } from '../support/uploads.ts';
import { seededRandom } from '../support/random.ts';

/**
 * The PromQL API against Prometheus itself (Debian's 2.42): the same points go into Meridian
 * (one CSV upload through the api, canonical series names) and into a Prometheus TSDB
 * (promtool's OpenMetrics backfill); a fixed table of queries, each as instant queries at
 * several times and as range queries over several ranges and steps, must give the same series,
 * the same timestamps and values within 1e-9 relative, both with ClickHouse reducing every
 * reducible window and with every sample read. Then promtool, a real client, queries Meridian.
 */
// Windows of whole minutes from 5 minutes on read the rollups here, so the table's _over_time
// queries at times on the minute compare the rollups with Prometheus too.
const settings = isolatedSettings({
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
  MERIDIAN_PROMQL_REDUCE_RATIO: '0',
  MERIDIAN_PROMQL_ROLLUP_MIN_RANGE: '5m',
  MERIDIAN_PROMQL_ROLLUP_MIN_POINTS_PER_BUCKET: '0',
});
let api: RunningApi;
/** The same data through an api that never reduces windows nor reads rollups: both ways are compared with Prometheus. */
let fromSamples: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let prom: RunningPrometheus;
let admin: string;
let roomsOnly: string;

const T0 = Date.UTC(2024, 0, 1) / 1000; // seconds: OpenMetrics timestamps are seconds
const HOURS = 3;

type Series = { labels: Labels; points: Array<[seconds: number, value: string]> };

/** Whole-second timestamps, about every `every` seconds with a jitter, over [from, to). */
function times(rnd: () => number, from: number, to: number, every: number): number[] {
  const out: number[] = [];
  for (let t = from; t < to; t += every) out.push(t + Math.floor(rnd() * 5) - 2);
  return out.filter((t, i) => i === 0 || t > out[i - 1]!);
}

function dataset(): Series[] {
  const rnd = seededRandom(42);
  const end = T0 + HOURS * 3600;
  const out: Series[] = [];
  const labels = (name: string, rest: Record<string, string>): Labels => [['__name__', name], ...Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : 1))];
  for (const job of ['api', 'web']) {
    for (const code of ['200', '500']) {
      for (const instance of ['a', 'b']) {
        let v = Math.floor(rnd() * 1000);
        out.push({
          labels: labels('http_requests_total', { job, code, instance }),
          points: times(rnd, T0, end, 15).map((t) => {
            v = rnd() < 0.01 ? Math.floor(rnd() * 5) : v + Math.floor(rnd() * (code === '200' ? 20 : 4));
            return [t, String(v)];
          }),
        });
      }
    }
  }
  for (const room of ['kitchen', 'hall', 'lab']) {
    let v = 18 + rnd() * 6;
    out.push({ labels: labels('temperature', { room }), points: times(rnd, T0, end, 30).map((t) => [t, String(Math.round((v += rnd() - 0.5) * 100) / 100)]) });
  }
  for (const job of ['api', 'web']) {
    const counts = [0, 0, 0, 0, 0];
    const bounds = ['0.05', '0.1', '0.5', '1', '+Inf'];
    const ts = times(rnd, T0, end, 15);
    const perBucket: Array<Array<[number, string]>> = bounds.map(() => []);
    for (const t of ts) {
      const observations = Math.floor(rnd() * 30);
      for (let o = 0; o < observations; o++) {
        const x = rnd() ** 2 * 1.5;
        bounds.forEach((b, i) => {
          if (b === '+Inf' || x <= Number(b)) counts[i]! += 1;
        });
      }
      bounds.forEach((_, i) => perBucket[i]!.push([t, String(counts[i])]));
    }
    bounds.forEach((le, i) => out.push({ labels: labels('request_duration_seconds_bucket', { job, le }), points: perBucket[i]! }));
  }
  // Gaps longer than the lookback, and samples further apart than it.
  const q1 = times(rnd, T0, end, 60).filter((t) => t - T0 < 2400 || (t - T0 >= 4800 && t - T0 < 7200));
  out.push({ labels: labels('queue_depth', { queue: 'q1' }), points: q1.map((t) => [t, String(Math.floor(rnd() * 50))]) });
  out.push({ labels: labels('queue_depth', { queue: 'q2' }), points: times(rnd, T0, end, 420).map((t) => [t, String(Math.floor(rnd() * 50))]) });
  // Escapes in a value, a colon in a name, a metric without labels.
  out.push({ labels: labels('weird_label', { path: 'a"b\\c\nd' }), points: times(rnd, T0, end, 60).map((t) => [t, String(Math.round(rnd() * 1e6) / 1e3)]) });
  out.push({ labels: labels('job:requests:rate5m', { job: 'api' }), points: times(rnd, T0, end, 60).map((t) => [t, String(Math.round(rnd() * 1e4) / 1e2)]) });
  out.push({ labels: labels('up', {}), points: times(rnd, T0, end, 15).map((t) => [t, '1']) });
  return out;
}

/** The canonical name the protocols write for a label set (its __name__ the metric). */
function canonical(labels: Labels): string {
  const metric = labels.find(([n]) => n === '__name__')![1];
  const written = seriesName(
    metric,
    labels.filter(([n]) => n !== '__name__'),
  );
  if (!written.ok) throw new Error(written.reason);
  return written.name;
}

function openMetrics(series: Series[]): string {
  const lines: string[] = [];
  for (const s of series) {
    const name = canonical(s.labels);
    for (const [t, v] of s.points) lines.push(`${name} ${v} ${t}`);
  }
  return `${lines.join('\n')}\n# EOF\n`;
}

function csv(series: Series[]): string {
  const quote = (text: string) => `"${text.replace(/"/g, '""')}"`;
  const lines = ['metric_name,timestamp,metric_numeric_value,updated_at'];
  for (const s of series) {
    const name = quote(canonical(s.labels));
    for (const [t, v] of s.points) lines.push(`${name},${formatTimestamp(t * 1000)},${v},${formatTimestamp(t * 1000)}`);
  }
  return `${lines.join('\n')}\n`;
}

const at = (minutes: number) => String(T0 + minutes * 60);
/** Evaluation times as Unix seconds (some with milliseconds) and as RFC 3339, as clients send them. */
const INSTANTS = [at(60), at(137.2), at(HOURS * 60 + 2), at(31.05), String(T0 + 3723.456), '2024-01-01T01:30:00.250Z'];
const RANGES: Array<{ start: string; end: string; step: string }> = [
  { start: at(0), end: at(HOURS * 60), step: '60' },
  { start: at(10), end: at(120), step: '5m' },
  { start: at(7.05), end: at(170), step: '47' },
  { start: at(0), end: at(HOURS * 60 + 10), step: '1h' },
  { start: '2024-01-01T00:20:00.500Z', end: String(T0 + 7000.125), step: '90.5' },
];

/** Every supported selector, function, aggregation and operator at least once. */
const QUERIES = [
  'http_requests_total',
  'http_requests_total{job="api"}',
  'http_requests_total{job!="api"}',
  'http_requests_total{code=~"5.."}',
  'http_requests_total{code!~"2..",instance="a"}',
  '{__name__=~"http_requests_total|temperature"}',
  '{__name__="temperature",room!="lab"}',
  'temperature offset 10m',
  'queue_depth',
  'weird_label',
  'job:requests:rate5m',
  'up',
  'rate(http_requests_total[5m])',
  'rate(http_requests_total{job="web"}[1m])',
  'irate(http_requests_total[5m])',
  'increase(http_requests_total[10m])',
  'increase(http_requests_total[1h] offset 30m)',
  'delta(temperature[10m])',
  'deriv(temperature[15m])',
  'resets(http_requests_total[30m])',
  'changes(temperature[10m])',
  'avg_over_time(temperature[10m])',
  'min_over_time(temperature[7m])',
  'max_over_time(temperature[7m])',
  'sum_over_time(temperature[5m])',
  'count_over_time(queue_depth[10m])',
  'last_over_time(queue_depth[15m])',
  'quantile_over_time(0.9, temperature[20m])',
  'quantile_over_time(0.25, http_requests_total[5m])',
  'rate(queue_depth[5m])',
  'sum(rate(http_requests_total[5m]))',
  'sum by (job) (rate(http_requests_total[5m]))',
  'sum without (instance) (rate(http_requests_total[5m]))',
  'avg by (code) (http_requests_total)',
  'avg(temperature)',
  'min(temperature)',
  'max by (room) (temperature)',
  'count(http_requests_total)',
  'count by (job) (http_requests_total{code="500"})',
  'topk(3, http_requests_total)',
  'bottomk(2, temperature)',
  'topk by (job) (1, rate(http_requests_total[5m]))',
  'quantile(0.5, temperature)',
  'quantile by (job) (0.75, rate(http_requests_total[5m]))',
  'sum(temperature) by (room)',
  'avg by (job) (rate(http_requests_total[10m]))',
  'max(increase(http_requests_total[15m]))',
  'min by (room) (avg_over_time(temperature[10m]))',
  'count(changes(temperature[30m]))',
  'sum(irate(http_requests_total{code="200"}[5m]))',
  'sum by (job) (last_over_time(http_requests_total[5m]))',
  'max without (code) (delta(http_requests_total[20m]))',
  'histogram_quantile(0.9, rate(request_duration_seconds_bucket[5m]))',
  'histogram_quantile(0.5, sum by (le) (rate(request_duration_seconds_bucket[10m])))',
  'histogram_quantile(0.99, request_duration_seconds_bucket{job="api"})',
  'temperature * 2 + 1',
  'temperature / 0',
  '2 ^ (temperature / 10)',
  'temperature % 3',
  'temperature > 21',
  'temperature > bool 21',
  '21 < temperature',
  '-temperature',
  '1 + 2 * 3',
  'time()',
  'time() - 60',
  '10 > bool 5',
  'rate(http_requests_total{code="500"}[5m]) / ignoring(code) rate(http_requests_total{code="200"}[5m])',
  'http_requests_total{code="500"} + on(job, instance) http_requests_total{code="200"}',
  'temperature - temperature offset 5m',
  'temperature >= bool on(room) max_over_time(temperature[10m])',
  'sum by (job) (rate(http_requests_total[5m])) > on(job) sum by (job) (rate(http_requests_total{code="200"}[5m])) * 0.5',
  'temperature == temperature',
  'http_requests_total{instance="a"} != ignoring(instance) http_requests_total{instance="b"}',
  'temperature > 21 and temperature < 23',
  'http_requests_total{code="500"} or http_requests_total{instance="a"}',
  'http_requests_total unless on(code) http_requests_total{code="500"}',
  'rate(http_requests_total[5m]) and ignoring(code) rate(http_requests_total{code="200"}[5m]) > 0.5',
  'http_requests_total * on() group_left up',
  'rate(http_requests_total[5m]) / on(job, instance) group_left sum by (job, instance) (rate(http_requests_total[5m]))',
  'sum by (job, instance) (http_requests_total) / ignoring(code) group_right http_requests_total',
  'http_requests_total * on(job) group_left(le) request_duration_seconds_bucket{le="+Inf"}',
  'http_requests_total > on(job) group_left(le) request_duration_seconds_bucket{le="1"}',
  'abs(delta(temperature[10m]))',
  'clamp_min(temperature, 21)',
  'clamp_max(temperature, 21)',
  'round(temperature)',
  'round(temperature, 0.5)',
  'timestamp(temperature)',
  'timestamp(queue_depth)',
  'timestamp(temperature offset 5m)',
  'abs(-temperature)',
  'ceil(temperature)',
  'floor(-temperature)',
  'sqrt(temperature)',
  'exp(temperature / 10)',
  'ln(temperature)',
  'log2(temperature)',
  'log10(temperature)',
  'sgn(delta(temperature[10m]))',
  'idelta(temperature[5m])',
  'scalar(sum(up))',
  'vector(1) + 1',
  'sort_desc(temperature)',
  'stddev by (job) (rate(http_requests_total[5m]))',
  'stdvar(temperature)',
  'temperature * scalar(count(up))',
  'predict_linear(temperature[15m], 600)',
  'predict_linear(http_requests_total{code="200"}[10m] offset 5m, 3600)',
  'absent(nonexistent_metric{job="x",env=~"a"})',
  'absent(temperature{room="attic"})',
  'absent_over_time(queue_depth{queue="q2"}[3m])',
  'absent_over_time(nonexistent_metric{job="y"}[5m])',
  'label_replace(temperature, "floor", "level-$1", "room", "(.)(.*)")',
  'label_replace(up, "x", "$1", "nope", "(.*)")',
  'label_replace(http_requests_total, "inst", "${1}_$2x", "instance", "(a|b)(.*)")',
  'label_join(http_requests_total, "key", "/", "job", "code", "instance")',
  'sum by (floor) (label_replace(temperature, "floor", "$1", "room", "(.).*"))',
  // Ranges of whole hours: from the hourly rollup at times on the hour, else the minutes'.
  'max_over_time(temperature[1h])',
  'min_over_time(up[1h])',
  'sum_over_time(http_requests_total{job="api"}[1h])',
  'avg_over_time(temperature[2h])',
  'count_over_time(queue_depth[2h] offset 1h)',
  'last_over_time(queue_depth[1h])',
];

type Answer = { status: string; errorType?: string; error?: string; data?: { resultType: string; result: unknown } };
type Normal = { type: string; series: Map<string, Array<[number, string]>> };

async function get(base: string, path: string, params: Record<string, string>, key?: string): Promise<{ status: number; body: Answer }> {
  const res = await fetch(`${base}${path}?${new URLSearchParams(params)}`, { headers: key ? { Authorization: `Bearer ${key}` } : {} });
  return { status: res.status, body: (await res.json()) as Answer };
}

/** An answer as series key → points, whatever its result type, so two answers compare as sets. */
function normalise(a: Answer): Normal {
  const series = new Map<string, Array<[number, string]>>();
  const data = a.data!;
  const key = (m: Record<string, string>) => JSON.stringify(Object.entries(m).sort(([x], [y]) => (x < y ? -1 : 1)));
  if (data.resultType === 'scalar') series.set('scalar', [data.result as [number, string]]);
  else if (data.resultType === 'vector')
    for (const s of data.result as Array<{ metric: Record<string, string>; value: [number, string] }>) series.set(key(s.metric), [s.value]);
  else for (const s of data.result as Array<{ metric: Record<string, string>; values: Array<[number, string]> }>) series.set(key(s.metric), s.values);
  return { type: data.resultType, series };
}

/** The first difference between two answers, or null: same series, same timestamps, values within 1e-9 relative. */
function difference(ours: Normal, theirs: Normal): string | null {
  if (ours.type !== theirs.type) return `result type ${ours.type}, Prometheus ${theirs.type}`;
  const a = [...ours.series.keys()].sort();
  const b = [...theirs.series.keys()].sort();
  if (JSON.stringify(a) !== JSON.stringify(b)) return `series ${JSON.stringify(a)}, Prometheus ${JSON.stringify(b)}`;
  for (const k of a) {
    const p = ours.series.get(k)!;
    const q = theirs.series.get(k)!;
    if (p.length !== q.length) return `${k}: ${p.length} points, Prometheus ${q.length}`;
    for (let i = 0; i < p.length; i++) {
      if (p[i]![0] !== q[i]![0]) return `${k}: timestamp ${p[i]![0]}, Prometheus ${q[i]![0]}`;
      const x = Number(p[i]![1].replace('Inf', 'Infinity'));
      const y = Number(q[i]![1].replace('Inf', 'Infinity'));
      const same = x === y || (Number.isNaN(x) && Number.isNaN(y)) || Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y));
      if (!same) return `${k} at ${p[i]![0]}: ${p[i]![1]}, Prometheus ${q[i]![1]}`;
    }
  }
  return null;
}

beforeAll(async () => {
  const series = dataset();
  [prom, api, fromSamples, ingest] = await Promise.all([
    startPrometheus(openMetrics(series)),
    startApi(settings),
    startApi({ ...settings, MERIDIAN_PROMQL_REDUCE_RATIO: 1e12, MERIDIAN_PROMQL_ROLLUP_MIN_RANGE: 'off' }),
    startWorker(settings),
  ]);
  admin = await bootstrapAdmin(settings);
  await Promise.all([api.api.accounts.syncToEnd(), fromSamples.api.accounts.syncToEnd()]);
  roomsOnly = await createUser(api.url, admin, 'rooms', [{ match: 'prefix', value: 'temperature{', access: 'r' }]);
  const upload = await uploadFile(api.url, admin, csv(series));
  expect(upload.status, upload.text).toBe(202);
  const task = await waitForTask(api.url, admin, upload.json.task_id as string, 170_000);
  expect(task.status, JSON.stringify(task)).toBe('succeeded');
}, 180_000);
afterAll(async () => {
  await Promise.all([api?.close(), fromSamples?.close(), ingest?.close(), prom?.close()]);
});

describe('PromQL conformance with Prometheus 2.42', () => {
  it(`answers ${QUERIES.length} queries as Prometheus does, instant and range`, async () => {
    const failures: string[] = [];
    // A query whose every answer is empty compares nothing: each must answer some series somewhere.
    const empty: string[] = [];
    let compared = 0;
    // Answers equal to the last digit, not only within the tolerance.
    let exact = 0;
    const inexact = new Set<string>();
    for (const [i, query] of QUERIES.entries()) {
      let answered = false;
      const asks: Array<{ path: string; params: Record<string, string> }> = [
        { path: '/api/v1/query', params: { query, time: INSTANTS[i % INSTANTS.length]! } },
        { path: '/api/v1/query', params: { query, time: INSTANTS[(i + 1) % INSTANTS.length]! } },
        { path: '/api/v1/query_range', params: { query, ...RANGES[i % RANGES.length]! } },
        { path: '/api/v1/query_range', params: { query, ...RANGES[(i + 2) % RANGES.length]! } },
      ];
      for (const ask of asks) {
        const theirs = await get(prom.url, ask.path, ask.params);
        if (theirs.status === 200 && normalise(theirs.body).series.size > 0) answered = true;
        for (const [way, on] of [
          ['reduced in ClickHouse', api],
          ['from samples', fromSamples],
        ] as const) {
          const ours = await get(`${on.url}/prometheus`, ask.path, ask.params, admin);
          compared += 1;
          const where = `${ask.path} ${JSON.stringify(ask.params)} (${way})`;
          if (theirs.status !== 200) {
            if (ours.status !== theirs.status || ours.body.errorType !== theirs.body.errorType)
              failures.push(`${where}: ${ours.status} ${ours.body.error}; Prometheus ${theirs.status} ${theirs.body.error}`);
            continue;
          }
          if (ours.status !== 200) {
            failures.push(`${where}: ${ours.status} ${ours.body.error}`);
            continue;
          }
          const diff = difference(normalise(ours.body), normalise(theirs.body));
          if (diff) failures.push(`${where}: ${diff}`);
          else if (JSON.stringify([...normalise(ours.body).series].sort()) === JSON.stringify([...normalise(theirs.body).series].sort())) exact += 1;
          else inexact.add(`${way}: ${query}`);
        }
      }
      if (!answered) empty.push(query);
    }
    console.log(`PromQL conformance: queries answered by no series at all: ${empty.length}`);
    console.log(`PromQL conformance: within the tolerance but not to the last digit:\n  ${[...inexact].sort().join('\n  ')}`);
    console.log(
      `PromQL conformance: ${QUERIES.length} queries, ${compared} answers compared with Prometheus 2.42, ${failures.length} differ, ${exact} equal to the last digit`,
    );
    expect(failures).toEqual([]);
    expect(empty).toEqual([]);
  }, 600_000);

  it('lists series, labels and label values as Prometheus does', async () => {
    const asks: Array<[string, Record<string, string>]> = [
      ['/api/v1/series', { 'match[]': 'http_requests_total{job="api"}' }],
      ['/api/v1/series', { 'match[]': '{__name__=~"temp.*|queue_depth"}' }],
      ['/api/v1/labels', {}],
      ['/api/v1/labels', { 'match[]': 'request_duration_seconds_bucket' }],
      ['/api/v1/label/__name__/values', {}],
      ['/api/v1/label/room/values', {}],
      ['/api/v1/label/le/values', { 'match[]': 'request_duration_seconds_bucket{job="web"}' }],
      ['/api/v1/query_exemplars', { query: 'http_requests_total', start: at(0), end: at(60) }],
    ];
    for (const [path, params] of asks) {
      const [ours, theirs] = await Promise.all([get(`${api.url}/prometheus`, path, params, admin), get(prom.url, path, params)]);
      expect(ours.status, `${path} ${JSON.stringify(ours.body)}`).toBe(200);
      const sorted = (d: unknown) => (d as unknown[]).map((x) => JSON.stringify(x)).sort();
      expect(sorted(ours.body.data), path).toEqual(sorted(theirs.body.data));
    }
  });

  it('tells its version as the Prometheus whose API it follows', async () => {
    const info = await get(`${api.url}/prometheus`, '/api/v1/status/buildinfo', {}, admin);
    expect(info.body).toMatchObject({ status: 'success', data: { version: '2.42.0' } });
    const metadata = await get(`${api.url}/prometheus`, '/api/v1/metadata', {}, admin);
    expect(metadata.body).toEqual({ status: 'success', data: {} });
  });

  it('refuses what it does not evaluate by name, and malformed queries as Prometheus does', async () => {
    const unsupported = await get(`${api.url}/prometheus`, '/api/v1/query', { query: 'count_values("v", temperature)', time: at(60) }, admin);
    expect(unsupported.status).toBe(422);
    expect(unsupported.body).toMatchObject({ status: 'error', errorType: 'execution', error: expect.stringContaining('count_values') });
    for (const query of [
      'rate(temperature)',
      'sum(',
      '1 > 2',
      '1 and temperature',
      'temperature and on(room) group_left up',
      'http_requests_total * on(job) group_left http_requests_total',
      'label_replace(http_requests_total, "job", "x", "instance", ".*")',
      'label_replace(up, "1x", "", "", "")',
      'label_join(up, "x", "", "a-b")',
    ]) {
      const [ours, theirs] = await Promise.all([
        get(`${api.url}/prometheus`, '/api/v1/query', { query, time: at(60) }, admin),
        get(prom.url, '/api/v1/query', { query, time: at(60) }),
      ]);
      expect([ours.status, ours.body.errorType], query).toEqual([theirs.status, theirs.body.errorType]);
    }
    const bad = await get(`${api.url}/prometheus`, '/api/v1/query_range', { query: 'up', start: at(0), end: at(600), step: '0.01' }, admin);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain('exceeded maximum resolution of 11,000 points per timeseries');
  });

  it('shows a user only the series they may read, as if the others did not exist', async () => {
    const all = await get(`${api.url}/prometheus`, '/api/v1/query', { query: '{__name__=~".+"}', time: at(60) }, roomsOnly);
    expect(all.status).toBe(200);
    expect(normalise(all.body).series.size).toBe(3);
    const names = await get(`${api.url}/prometheus`, '/api/v1/label/__name__/values', {}, roomsOnly);
    expect(names.body.data).toEqual(['temperature']);
    const hidden = await get(`${api.url}/prometheus`, '/api/v1/query', { query: 'http_requests_total', time: at(60) }, roomsOnly);
    const missing = await get(`${api.url}/prometheus`, '/api/v1/query', { query: 'no_such_metric', time: at(60) }, roomsOnly);
    expect(hidden).toEqual(missing);
    expect(hidden.body.data).toEqual({ resultType: 'vector', result: [] });
    // The series listing chooses by label in ClickHouse, then by what the caller may read.
    const hiddenSeries = await get(`${api.url}/prometheus`, '/api/v1/series', { 'match[]': 'http_requests_total{job="api"}' }, roomsOnly);
    const missingSeries = await get(`${api.url}/prometheus`, '/api/v1/series', { 'match[]': 'no_such_metric{job="api"}' }, roomsOnly);
    expect(hiddenSeries).toEqual(missingSeries);
    expect(hiddenSeries.body.data).toEqual([]);
    const rooms = await get(`${api.url}/prometheus`, '/api/v1/series', { 'match[]': '{room!="",job=""}' }, roomsOnly);
    expect((rooms.body.data as unknown as Array<{ __name__: string }>).map((s) => s.__name__)).toEqual(['temperature', 'temperature', 'temperature']);
  });

  it('answers promtool, a real client, with the key as the password of the URL', async () => {
    const { promtool } = prometheusBinaries();
    // promtool 2.42 sends only the URL's credentials (basic auth): the key is the password.
    const server = api.url.replace('http://', `http://meridian:${admin}@`) + '/prometheus';
    // Not spawnSync: the api answering promtool runs in this process.
    const run = (args: string[]) =>
      new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
        execFile(promtool, ['query', ...args], { encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) =>
          resolve({ status: error ? Number(error.code ?? 1) || 1 : 0, stdout, stderr }),
        );
      });
    const instant = await run(['instant', '--time', at(60), server, 'sum by (job) (rate(http_requests_total[5m]))']);
    expect(instant.status, instant.stderr).toBe(0);
    expect(instant.stdout).toMatch(/\{job="api"\} => [\d.]+ @\[/);
    expect(instant.stdout).toMatch(/\{job="web"\} => [\d.]+ @\[/);
    const range = await run(['range', '--start', at(1), '--end', at(10), '--step', '1m', server, 'temperature{room="lab"}']);
    expect(range.status, range.stderr).toBe(0);
    expect(range.stdout).toContain('temperature{room="lab"} =>');
    expect(range.stdout.match(/@\[/g)).toHaveLength(10);
    const anonymous = await run(['instant', `${api.url}/prometheus`, 'up']);
    expect(anonymous.status).not.toBe(0);
  });
});
