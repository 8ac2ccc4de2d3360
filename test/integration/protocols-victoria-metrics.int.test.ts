import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriesName, type Label } from '@meridian/domain';
import { decodeInfluxLines, decodeRemoteWriteBody, sanitizeLabelName, type DecodedPush } from '@meridian/protocols';
import type { Captured, Manifest } from '../fixtures/protocols/record.ts';
import { otlpRequestBody, type OtlpRequestSpec } from '../support/otlp-body.ts';
import { startVictoriaMetricsProcess, victoriaMetricsOtlpBin, type VictoriaMetricsProcess } from '../support/victoria-metrics.ts';
import { decodeOtlpMetrics } from '@meridian/protocols';

/**
 * Conformance with the peer: the recorded pushes of the real senders (test/fixtures/protocols)
 * are sent to VictoriaMetrics (Debian's, on loopback), read back with /api/v1/export, named with
 * Meridian's rule from VictoriaMetrics' label sets, and compared with what Meridian's decoders
 * make of the same bytes: the same names, values and timestamps.
 *
 * Known differences, applied here and documented (docs/using/agents.md):
 * - stale markers: VictoriaMetrics stores them (exported as NaN); Meridian drops and counts them;
 * - Influx tag keys: VictoriaMetrics keeps them as sent (`dev name`); Meridian sanitises them
 *   as label names (`dev_name`), so VictoriaMetrics' keys are sanitised before naming;
 * - Influx string fields: VictoriaMetrics 1.79 stores them as 0; Meridian drops and counts them
 *   (a 0 that was text is no measurement), so the fixture's one string field is left out;
 * - OTLP: Debian's victoria-metrics (1.79) has no OpenTelemetry ingestion (it came in 1.92), so
 *   this case runs against a current one built from the Go module proxy (deploy/local/install.sh
 *   victoria-metrics-otlp, part of the test tools; VICTORIA_METRICS_OTLP_BIN names another). It
 *   runs with Prometheus naming and promotes only the service attributes, as Meridian's mapping
 *   does (OTLP_PROMETHEUS_FLAGS); it keeps them as labels (service_name...) where Meridian makes
 *   job and instance of them, so its labels are mapped alike; it names a delta sum with _total
 *   (Prometheus' translator does) where Meridian does not. It reads no OTLP/JSON.
 */
const dir = new URL('../fixtures/protocols/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('manifest.json', dir), 'utf8')) as Manifest;
const body = (r: Captured) => readFileSync(new URL(r.file, dir));

type Points = Map<string, Array<[number, number]>>;

/** name → sorted [timestamp, value] pairs, duplicates (one timestamp twice) once. */
function pointsOf(pushes: readonly DecodedPush[]): Points {
  const out: Points = new Map();
  for (const push of pushes) {
    for (const s of push.series) {
      const list = out.get(s.name) ?? [];
      s.timestamps.forEach((t, i) => list.push([t, s.values[i]!]));
      out.set(s.name, list);
    }
  }
  for (const [name, list] of out) out.set(name, dedupe(list));
  return out;
}

function dedupe(list: Array<[number, number]>): Array<[number, number]> {
  const sorted = [...list].sort((a, b) => a[0] - b[0]);
  return sorted.filter((p, i) => i === 0 || p[0] !== sorted[i - 1]![0]);
}

type Exported = { metric: Record<string, string>; values: Array<number | null>; timestamps: number[] };

/** Everything VictoriaMetrics holds, named by Meridian's rule (label names through `labelName`). */
async function exportAll(vm: VictoriaMetricsProcess, labelName: (name: string) => string, mapLabels: (labels: Label[]) => Label[] = (l) => l): Promise<Points> {
  const flushed = await fetch(`${vm.base}/internal/force_flush`);
  expect(flushed.ok).toBe(true);
  const res = await fetch(`${vm.base}/api/v1/export?match[]=${encodeURIComponent('{__name__!=""}')}&start=0`);
  expect(res.status).toBe(200);
  const out: Points = new Map();
  for (const line of (await res.text()).split('\n').filter(Boolean)) {
    const e = JSON.parse(line) as Exported;
    const { __name__: metric, ...rest } = e.metric;
    const labels = mapLabels(Object.entries(rest).map(([k, v]): Label => [labelName(k), v]));
    const named = seriesName(metric!, labels);
    if (!named.ok) throw new Error(`VictoriaMetrics' series ${line.slice(0, 200)} has no Meridian name: ${named.reason}`);
    // Stale markers come back as NaN (null in JSON): Meridian does not store them.
    const pairs = e.timestamps
      .map((t, i) => [t, e.values[i]] as [number, number | null])
      .filter((p): p is [number, number] => typeof p[1] === 'number' && Number.isFinite(p[1]));
    if (pairs.length > 0) out.set(named.name, dedupe([...(out.get(named.name) ?? []), ...pairs]));
  }
  return out;
}

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
const DELTA_SUM_NAME = 'jobs_done{instance="pod-7",job="billing"}';
const DELTA_SUM_VM_NAME = 'jobs_done_total{instance="pod-7",job="billing"}';

const sortedEntries = (points: Points) => [...points.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));

describe('conformance of names, values and timestamps with VictoriaMetrics', () => {
  let vm: VictoriaMetricsProcess;
  beforeAll(async () => {
    vm = await startVictoriaMetricsProcess();
  });
  afterAll(async () => {
    await vm?.stop();
  });

  it('Prometheus remote write: the same series as VictoriaMetrics /api/v1/write', async () => {
    const requests = manifest.requests.filter((r) => r.sender === 'prometheus');
    for (const r of requests) {
      const res = await fetch(`${vm.base}/api/v1/write`, { method: 'POST', headers: r.headers, body: body(r) });
      expect(res.status).toBe(204);
    }
    const ours = pointsOf(requests.map((r) => decodeRemoteWriteBody(body(r), '1.0')));
    const theirs = await exportAll(vm, (name) => name);
    expect(sortedEntries(theirs)).toEqual(sortedEntries(ours));
    expect(ours.size).toBeGreaterThan(10);
  });

  it('Influx line protocol: the same series as VictoriaMetrics /write, tag keys sanitised', async () => {
    const vmInflux = await startVictoriaMetricsProcess();
    try {
      const requests = manifest.requests.filter((r) => r.sender === 'influx');
      for (const r of requests) {
        // v1's /write with the same body: VictoriaMetrics reads the precision parameter alike.
        const res = await fetch(`${vmInflux.base}/write?precision=ns`, { method: 'POST', body: body(r) });
        expect(res.status).toBe(204);
      }
      const ours = pointsOf(requests.map((r) => decodeInfluxLines(body(r), { precision: 'ns', receivedAtMs: 0 })));
      const theirs = await exportAll(vmInflux, sanitizeLabelName);
      expect(theirs.get('service_version{name="api"}')).toEqual([[1_764_300_000_000, 0]]);
      theirs.delete('service_version{name="api"}');
      expect(sortedEntries(theirs)).toEqual(sortedEntries(ours));
      expect(ours.size).toBe(5);
    } finally {
      await vmInflux.stop();
    }
  });

  it("OTLP protobuf: the same series as a current VictoriaMetrics' /opentelemetry/v1/metrics with Prometheus naming", async () => {
    const vmOtlp = await startVictoriaMetricsProcess(OTLP_PROMETHEUS_FLAGS, victoriaMetricsOtlpBin(), 'victoria-metrics-otlp');
    try {
      const requests = manifest.requests.filter((r) => r.sender === 'otlp-proto');
      const bodies = [...requests.map(body), otlpRequestBody(OTLP_SHAPES)];
      for (const [i, b] of bodies.entries()) {
        const headers = requests[i]?.headers ?? { 'content-type': 'application/x-protobuf' };
        const res = await fetch(`${vmOtlp.base}/opentelemetry/v1/metrics`, { method: 'POST', headers, body: b });
        expect(res.status).toBe(200);
      }
      const ours = pointsOf(bodies.map((b) => decodeOtlpMetrics(b, 'protobuf')));
      const theirs = await exportAll(vmOtlp, (name) => name, serviceAsTarget);
      // A delta sum: VictoriaMetrics names it as Prometheus' translator does, with _total;
      // Meridian leaves _total off (its points are increases, not a running count). Same points.
      expect(ours.size).toBe(9 + OTLP_SHAPES_SERIES);
      expect(ours.get(DELTA_SUM_NAME)).toHaveLength(2);
      expect(theirs.get(DELTA_SUM_VM_NAME)).toEqual(ours.get(DELTA_SUM_NAME));
      theirs.delete(DELTA_SUM_VM_NAME);
      ours.delete(DELTA_SUM_NAME);
      expect(sortedEntries(theirs)).toEqual(sortedEntries(ours));
    } finally {
      await vmOtlp.stop();
    }
  });
});
