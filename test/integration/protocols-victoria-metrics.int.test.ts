import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriesName, type Label } from '@meridian/domain';
import { decodeInfluxLines, decodeRemoteWriteBody, sanitizeLabelName, type DecodedPush } from '@meridian/protocols';
import type { Captured, Manifest } from '../fixtures/protocols/record.ts';
import { startVictoriaMetricsProcess, type VictoriaMetricsProcess } from '../support/victoria-metrics.ts';
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
 * - OTLP: Debian's victoria-metrics (1.79) has no OpenTelemetry ingestion (it came in 1.92).
 *   Given a newer one in VICTORIA_METRICS_OTLP_BIN (1.110 was built for this from its Go module:
 *   `go mod download` it, copy the module and `go build -mod=mod ./app/victoria-metrics`), the OTLP
 *   protobuf recordings are compared too, with -opentelemetry.usePrometheusNaming: the metric names
 *   are the same; VictoriaMetrics keeps service.name, service.namespace and service.instance.id as
 *   labels where Meridian makes job and instance of them, so its labels are mapped alike. It reads
 *   no OTLP/JSON. Without that binary the OTLP case is skipped, and says so.
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

  const otlpBin = process.env.VICTORIA_METRICS_OTLP_BIN;
  it.skipIf(!otlpBin)(
    'OTLP protobuf: the same series as VictoriaMetrics 1.92+ with -opentelemetry.usePrometheusNaming (needs VICTORIA_METRICS_OTLP_BIN)',
    async () => {
      const vmOtlp = await startVictoriaMetricsProcess(['-opentelemetry.usePrometheusNaming'], otlpBin);
      try {
        const requests = manifest.requests.filter((r) => r.sender === 'otlp-proto');
        for (const r of requests) {
          const res = await fetch(`${vmOtlp.base}/opentelemetry/v1/metrics`, { method: 'POST', headers: r.headers, body: body(r) });
          expect(res.status).toBe(200);
        }
        const ours = pointsOf(requests.map((r) => decodeOtlpMetrics(body(r), 'protobuf')));
        // VictoriaMetrics keeps the service attributes as labels; Meridian makes job and instance of them.
        const theirs = await exportAll(
          vmOtlp,
          (name) => name,
          (labels) => {
            const get = (name: string) => labels.find(([k]) => k === name)?.[1] ?? '';
            const service = labels.filter(([k]) => !k.startsWith('service_'));
            const job = get('service_namespace') !== '' ? `${get('service_namespace')}/${get('service_name')}` : get('service_name');
            return [...service, ['job', job], ['instance', get('service_instance_id')]];
          },
        );
        expect(sortedEntries(theirs)).toEqual(sortedEntries(ours));
        expect(ours.size).toBe(9);
      } finally {
        await vmOtlp.stop();
      }
    },
  );
});
