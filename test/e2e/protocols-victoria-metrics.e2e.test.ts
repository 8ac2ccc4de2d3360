import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { afterAll, describe, expect, it } from 'vitest';
import { type Label } from '@meridian/domain';
import { sanitizeLabelName } from '@meridian/protocols';
import type { Captured, Manifest } from '../fixtures/protocols/record.ts';
import { bootstrapAdmin } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { otlpRequestBody, type OtlpRequestSpec } from '../support/otlp-body.ts';
import { isolatedSettings } from '../support/settings.ts';
import {
  startVictoriaMetricsProcess,
  victoriaMetricsOtlpBin,
  victoriaMetricsPoints,
  type SeriesPoints,
  type VictoriaMetricsProcess,
} from '../support/victoria-metrics.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Conformance with the peer, end to end: the recorded pushes of the real senders
 * (test/fixtures/protocols) are POSTed as they are to a running api (its ingest worker
 * projecting them into ClickHouse) and to VictoriaMetrics, then both are read back, Meridian
 * through /api/v1/metrics/download and VictoriaMetrics through /api/v1/export (its label sets
 * named by Meridian's rule), and compared: the same series names, values and timestamps.
 *
 * Known differences, asserted here and documented (docs/using/agents.md):
 * - stale markers: VictoriaMetrics stores them (exported as NaN); Meridian drops and counts them;
 * - Influx tag keys: VictoriaMetrics keeps them as sent (`dev name`); Meridian sanitises them
 *   as label names (`dev_name`), so VictoriaMetrics' keys are sanitised before naming;
 * - Influx string fields: VictoriaMetrics stores them as 0; Meridian drops and counts them
 *   (a 0 that was text is no measurement);
 * - OTLP: Debian's victoria-metrics (1.79) has no OpenTelemetry ingestion, so these cases run
 *   against a current one (deploy/local/install.sh victoria-metrics-otlp) with Prometheus naming
 *   and only the service attributes promoted, as Meridian's mapping does (OTLP_PROMETHEUS_FLAGS);
 *   it keeps them as labels (service_name...) where Meridian makes job and instance of them, so
 *   its labels are mapped alike; it names a delta sum with _total where Meridian does not; it
 *   refuses OTLP/JSON (400), so the JSON requests reach it as protobuf, encoded from the same
 *   JSON with metrics.proto, while Meridian reads the JSON bodies themselves.
 */
const dir = new URL('../fixtures/protocols/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('manifest.json', dir), 'utf8')) as Manifest;
const recorded = (sender: string) => manifest.requests.filter((r) => r.sender === sender);
const body = (r: Captured) => readFileSync(new URL(r.file, dir));

/** One request as sent to each side: Meridian's route and VictoriaMetrics' (with its own body when it cannot read Meridian's). */
type Push = {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  readonly vmPath: string;
  readonly vmHeaders?: Record<string, string>;
  readonly vmBody?: Uint8Array;
};

/** A running api and ingest worker on a scope of their own (topics, database, bucket): what it stores is one case's alone. */
type Meridian = { readonly api: RunningApi; readonly admin: string; pushed: number; close(): Promise<void> };

async function startMeridian(): Promise<Meridian> {
  const settings = isolatedSettings({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
  const api = await startApi(settings);
  const ingest = await startWorker(settings).catch(async (error: unknown) => {
    await api.close();
    throw error;
  });
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  return {
    api,
    admin,
    pushed: 0,
    async close() {
      await ingest.close();
      await api.close();
    },
  };
}

/** GET of the api as the admin, answered 200, as JSON. */
async function read<T>(m: Meridian, path: string): Promise<T> {
  const res = await fetch(`${m.api.url}${path}`, { headers: { authorization: `Bearer ${m.admin}`, 'accept-encoding': 'identity' } });
  expect(res.status, path).toBe(200);
  expect(res.headers.get('x-next-cursor'), path).toBeNull();
  return (await res.json()) as T;
}

/** Every push sent has its task succeeded: its points are all queryable (docs/using/behaviour.md). */
async function projected(m: Meridian): Promise<void> {
  await waitFor(
    `the ${m.pushed} pushes' tasks to succeed`,
    async () => {
      const { tasks } = await read<{ tasks: Array<{ status: string }> }>(m, '/api/v1/tasks?limit=1000');
      expect(tasks.filter((t) => t.status === 'failed')).toEqual([]);
      return tasks.length === m.pushed && tasks.every((t) => t.status === 'succeeded') ? true : undefined;
    },
    60_000,
    100,
  );
}

type Row = { metric_name: string; timestamp: string; metric_numeric_value: number };

/**
 * Everything Meridian stores: every metric of its catalog, each downloaded on its own (a list
 * cannot hold the names with a comma), as name → [timestamp, value] pairs.
 */
async function meridianPoints(m: Meridian): Promise<SeriesPoints> {
  const catalog = await read<{ metrics: Array<{ metric_name: string; points: number }>; next_after: string | null }>(m, '/api/v1/metrics?limit=1000');
  expect(catalog.next_after).toBeNull();
  const out: SeriesPoints = new Map();
  for (const { metric_name: name, points } of catalog.metrics) {
    const qs = new URLSearchParams({ metrics: name, pattern: 'single', file_format: 'json', max_rows: '100000' });
    const rows = await read<Row[]>(m, `/api/v1/metrics/download?${qs}`);
    expect(rows.length, name).toBe(points);
    out.set(
      name,
      rows.map((r) => [Date.parse(r.timestamp.replace(/(\d\d)(\d\d)$/, '$1:$2')), r.metric_numeric_value]),
    );
  }
  return out;
}

/** Each series' pairs sorted by timestamp then value (a pair stored twice stays twice: both sides are read alike). */
function sortedPairs(points: SeriesPoints): SeriesPoints {
  return new Map([...points].map(([name, list]) => [name, [...list].sort((x, y) => x[0] - y[0] || x[1] - y[1])]));
}

const sortedEntries = (points: SeriesPoints) => [...points.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));

/**
 * Sends every push to a fresh Meridian and to `vm` (each answered as its protocol says), waits
 * for Meridian to have projected them, and reads both back.
 */
async function sendToBoth(
  vm: VictoriaMetricsProcess,
  pushes: readonly Push[],
  okStatus: number,
  vmLabelName: (name: string) => string,
  vmLabels?: (labels: Label[]) => Label[],
) {
  const m = await startMeridian();
  try {
    for (const p of pushes) {
      const ours = await fetch(`${m.api.url}${p.path}`, { method: 'POST', headers: { ...p.headers, authorization: `Bearer ${m.admin}` }, body: p.body });
      expect(ours.status, await ours.text()).toBe(okStatus);
      m.pushed++;
      const theirs = await fetch(`${vm.base}${p.vmPath}`, { method: 'POST', headers: p.vmHeaders ?? p.headers, body: p.vmBody ?? p.body });
      expect(theirs.status, await theirs.text()).toBe(okStatus);
    }
    await projected(m);
    const theirs = await victoriaMetricsPoints(vm, vmLabelName, vmLabels);
    return { ours: sortedPairs(await meridianPoints(m)), theirs: sortedPairs(theirs.points), stale: theirs.stale };
  } finally {
    await m.close();
  }
}

/** The recorded request's headers without its key: each side is given its own. */
const headersOf = (r: Captured) => Object.fromEntries(Object.entries(r.headers).filter(([k]) => k !== 'authorization'));

/**
 * VictoriaMetrics' OTLP as the OpenTelemetry-to-Prometheus mapping Meridian follows
 * (docs/using/agents.md): Prometheus names; of the resource's attributes only the service's (its
 * default promotes them all); the instrumentation scope not as labels (its default adds scope_name...).
 */
const OTLP_PROMETHEUS_FLAGS = [
  '-opentelemetry.usePrometheusNaming',
  '-opentelemetry.promoteAllResourceAttributes=false',
  '-opentelemetry.promoteResourceAttributes=service.name,service.namespace,service.instance.id',
  '-opentelemetry.promoteScopeMetadata=false',
];

/** VictoriaMetrics' service labels as Meridian's job (namespace/name) and instance. */
function serviceAsTarget(labels: Label[]): Label[] {
  const get = (name: string) => labels.find(([k]) => k === name)?.[1] ?? '';
  const rest = labels.filter(([k]) => !k.startsWith('service_'));
  const job = get('service_namespace') !== '' ? `${get('service_namespace')}/${get('service_name')}` : get('service_name');
  return [...rest, ['job', job], ['instance', get('service_instance_id')]];
}

/**
 * The kinds and units the recorded SDK does not send: a summary, sums non-monotonic, delta and of
 * integers, a gauge of unit 1, units that become words, and a resource attribute that is no label.
 */
const T = 1_795_861_700_000;
const at = (i: number) => T + i * 10_000;
const OTLP_SHAPES: OtlpRequestSpec = {
  resource: { 'service.name': 'billing', 'service.instance.id': 'pod-7', 'host.name': 'node-3' },
  scope: { name: 'meridian-shapes', version: '2.0.0' },
  metrics: [
    {
      name: 'rpc.latency',
      unit: 's',
      kind: 'summary',
      points: [0, 1].map((i) => ({
        timeMs: at(i),
        attributes: { 'rpc.method': 'Charge' },
        count: 10 + i,
        sum: 4.5 + i,
        quantiles: [
          [0.5, 0.25 + i],
          [0.99, 1.5 + i],
        ],
      })),
    },
    { name: 'queue.size', unit: '{item}', kind: 'sum', monotonic: false, temporality: 'cumulative', points: [{ timeMs: at(0), value: 7 }] },
    { name: 'network.io', unit: 'By', kind: 'sum', monotonic: true, temporality: 'cumulative', points: [{ timeMs: at(0), value: 1_048_576, asInt: true }] },
    { name: 'jobs.done', kind: 'sum', monotonic: true, temporality: 'delta', points: [0, 1].map((i) => ({ timeMs: at(i), value: 3 + i, asInt: true })) },
    { name: 'cpu.utilization', unit: '1', kind: 'gauge', points: [{ timeMs: at(0), value: 0.375, attributes: { 'cpu.mode': 'user' } }] },
    { name: 'memory.usage', unit: 'By', kind: 'gauge', points: [{ timeMs: at(0), value: 123_456_789, asInt: true }] },
    {
      name: 'db.query.duration',
      unit: 's',
      kind: 'histogram',
      temporality: 'cumulative',
      points: [{ timeMs: at(0), count: 6, sum: 1.25, bounds: [0.1, 1], counts: [3, 2, 1] }],
    },
  ],
};
/** Series of OTLP_SHAPES: the summary's 2 quantiles, _sum and _count; 4 sums and gauges; the histogram's 3 buckets, _sum and _count. */
const OTLP_SHAPES_SERIES = 4 + 5 + 5;
/** Series of the recorded SDK's requests (a gauge, two counters' series, a histogram's 3 buckets, _sum and _count). */
const OTLP_RECORDED_SERIES = 9;
const DELTA_SUM_NAME = 'jobs_done{instance="pod-7",job="billing"}';
const DELTA_SUM_VM_NAME = 'jobs_done_total{instance="pod-7",job="billing"}';

/** The same OTLP/JSON request as protobuf, by metrics.proto (protobufjs reads OTLP/JSON's field names and int64 strings). */
const otlpRequest = protobuf
  .loadSync(fileURLToPath(new URL('../../libs/protocols/src/otlp/metrics.proto', import.meta.url)))
  .lookupType('opentelemetry.proto.metrics.v1.ExportMetricsServiceRequest');
const jsonAsProtobuf = (json: Buffer) => otlpRequest.encode(otlpRequest.fromObject(JSON.parse(json.toString('utf8')) as Record<string, unknown>)).finish();

describe('conformance of names, values and timestamps with VictoriaMetrics, end to end', () => {
  let vm: VictoriaMetricsProcess | undefined;
  /** A fresh VictoriaMetrics for each case: what it exports is that case's alone. */
  const peer = async (...args: Parameters<typeof startVictoriaMetricsProcess>) => {
    await vm?.stop();
    vm = await startVictoriaMetricsProcess(...args);
    return vm;
  };
  afterAll(async () => {
    await vm?.stop();
  });

  it('Prometheus remote write: /api/v1/write stores the series VictoriaMetrics stores', async () => {
    const pushes = recorded('prometheus').map((r) => ({ path: '/api/v1/write', vmPath: '/api/v1/write', headers: headersOf(r), body: body(r) }));
    const { ours, theirs, stale } = await sendToBoth(await peer(), pushes, 204, (name) => name);
    // The stale markers Prometheus wrote (at its shutdown, and for a series gone from its
    // target): VictoriaMetrics stores them; Meridian drops them, storing nothing at their times.
    expect(stale.size).toBeGreaterThan(0);
    for (const [name, times] of stale) expect(ours.get(name)?.filter(([t]) => times.includes(t)) ?? [], name).toEqual([]);
    expect(ours.size).toBeGreaterThan(10);
    expect(sortedEntries(ours)).toEqual(sortedEntries(theirs));
  });

  for (const [version, path] of [
    ['v2', '/api/v2/write?org=meridian&bucket=metrics&precision=ns'],
    ['v1', '/write?precision=ns'],
  ] as const) {
    it(`Influx line protocol ${version}: ${path.split('?')[0]} stores the series VictoriaMetrics stores, tag keys sanitised`, async () => {
      const pushes = recorded('influx').map((r) => ({ path, vmPath: path, headers: headersOf(r), body: body(r) }));
      const { ours, theirs, stale } = await sendToBoth(await peer(), pushes, 204, sanitizeLabelName);
      expect(stale.size).toBe(0);
      // The fixture's one string field: VictoriaMetrics stores 0, Meridian nothing.
      expect(theirs.get('service_version{name="api"}')).toEqual([[1_764_300_000_000, 0]]);
      expect(ours.has('service_version{name="api"}')).toBe(false);
      theirs.delete('service_version{name="api"}');
      expect(ours.size).toBe(5);
      expect(sortedEntries(ours)).toEqual(sortedEntries(theirs));
    });
  }

  /** The delta sum: VictoriaMetrics names it with _total, as Prometheus' translator does; Meridian leaves _total off (its points are increases, not a running count). Same points. */
  const withoutDeltaSumNames = (ours: SeriesPoints, theirs: SeriesPoints) => {
    expect(ours.get(DELTA_SUM_NAME)).toHaveLength(2);
    expect(theirs.get(DELTA_SUM_VM_NAME)).toEqual(ours.get(DELTA_SUM_NAME));
    expect(ours.has(DELTA_SUM_VM_NAME)).toBe(false);
    theirs.delete(DELTA_SUM_VM_NAME);
    ours.delete(DELTA_SUM_NAME);
  };
  const protobufHeaders = { 'content-type': 'application/x-protobuf' };

  it("OTLP protobuf: /v1/metrics stores the series a current VictoriaMetrics' /opentelemetry/v1/metrics stores", async () => {
    const shapes = Buffer.from(otlpRequestBody(OTLP_SHAPES));
    const pushes = [...recorded('otlp-proto').map((r) => ({ headers: headersOf(r), body: body(r) })), { headers: protobufHeaders, body: shapes }].map((p) => ({
      ...p,
      path: '/v1/metrics',
      vmPath: '/opentelemetry/v1/metrics',
    }));
    const { ours, theirs, stale } = await sendToBoth(
      await peer(OTLP_PROMETHEUS_FLAGS, victoriaMetricsOtlpBin(), 'victoria-metrics-otlp'),
      pushes,
      200,
      (n) => n,
      serviceAsTarget,
    );
    expect(stale.size).toBe(0);
    expect(ours.size).toBe(OTLP_RECORDED_SERIES + OTLP_SHAPES_SERIES);
    withoutDeltaSumNames(ours, theirs);
    expect(sortedEntries(ours)).toEqual(sortedEntries(theirs));
  });

  it('OTLP JSON: /v1/metrics stores the series VictoriaMetrics stores of the same requests as protobuf (it refuses JSON)', async () => {
    const vmOtlp = await peer(OTLP_PROMETHEUS_FLAGS, victoriaMetricsOtlpBin(), 'victoria-metrics-otlp');
    const requests = recorded('otlp-json');
    const refused = await fetch(`${vmOtlp.base}/opentelemetry/v1/metrics`, { method: 'POST', headers: headersOf(requests[0]!), body: body(requests[0]!) });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/json encoding isn't supported/);
    const pushes = requests.map((r) => ({
      path: '/v1/metrics',
      headers: headersOf(r),
      body: body(r),
      vmPath: '/opentelemetry/v1/metrics',
      vmHeaders: protobufHeaders,
      vmBody: jsonAsProtobuf(body(r)),
    }));
    const { ours, theirs, stale } = await sendToBoth(vmOtlp, pushes, 200, (n) => n, serviceAsTarget);
    expect(stale.size).toBe(0);
    expect(ours.size).toBe(OTLP_RECORDED_SERIES);
    expect(sortedEntries(ours)).toEqual(sortedEntries(theirs));
  });
});
