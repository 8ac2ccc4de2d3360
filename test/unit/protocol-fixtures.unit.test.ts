import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeInfluxLines, decodeOtlpMetrics, decodeRemoteWriteBody, type DecodedPush } from '@meridian/protocols';
import type { Captured, Manifest } from '../fixtures/protocols/record.ts';

/**
 * The requests recorded from the real senders (test/fixtures/protocols, record.ts) decode to
 * the exact series names and values they sent. Timestamps are the senders' clocks at the
 * recording: they are checked against its time, so a new recording needs no change here.
 */
const dir = new URL('../fixtures/protocols/', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('manifest.json', dir), 'utf8')) as Manifest;
const body = (r: Captured) => readFileSync(new URL(r.file, dir));
const of = (sender: string) => manifest.requests.filter((r) => r.sender === sender);
const pairs = (push: DecodedPush) => push.series.map((s) => [s.name, s.values]);
const inRecording = (push: DecodedPush) => {
  for (const s of push.series) {
    for (const t of s.timestamps) {
      expect(t).toBeGreaterThanOrEqual(manifest.recordedAt - 5_000);
      expect(t).toBeLessThanOrEqual(manifest.recordedAt + 120_000);
    }
  }
};

describe('fixtures of the real senders', () => {
  const otlp = (job: string, instance: string) => {
    const common = `instance="${instance}",job="${job}"`;
    return [
      [`queue_depth{${common},queue_name="orders"}`, [17]],
      [`http_server_requests_total{http_method="GET",http_status_code="200",${common}}`, [5]],
      [`http_server_requests_total{http_method="POST",http_status_code="500",${common}}`, [1]],
      [`http_server_duration_milliseconds_bucket{http_route="/orders",${common},le="10"}`, [1]],
      [`http_server_duration_milliseconds_bucket{http_route="/orders",${common},le="100"}`, [3]],
      [`http_server_duration_milliseconds_bucket{http_route="/orders",${common},le="1000"}`, [4]],
      [`http_server_duration_milliseconds_bucket{http_route="/orders",${common},le="+Inf"}`, [5]],
      [`http_server_duration_milliseconds_sum{http_route="/orders",${common}}`, [5615]],
      [`http_server_duration_milliseconds_count{http_route="/orders",${common}}`, [5]],
    ];
  };

  it.each([
    ['otlp-proto', 'protobuf', 'application/x-protobuf'],
    ['otlp-json', 'json', 'application/json'],
  ] as const)("%s: the OpenTelemetry SDK exporter's gauge, counter and histogram", (sender, format, contentType) => {
    expect(of(sender).length).toBeGreaterThan(0);
    for (const r of of(sender)) {
      expect(r.headers).toMatchObject({ 'content-type': contentType, authorization: 'Bearer fixture-api-key' });
      const push = decodeOtlpMetrics(body(r), format);
      expect(pairs(push)).toEqual(otlp('shop/checkout', 'pod-1'));
      expect(push).toMatchObject({ rejected: [], rejectedPoints: 0, samples: 9 });
      inRecording(push);
      // One collection: every point of a request has the same time.
      expect(new Set(push.series.flatMap((s) => s.timestamps)).size).toBe(1);
    }
  });

  it("influx: the Influx client's points, escapes, booleans and a dropped string", () => {
    const [r] = of('influx');
    expect(r!.path).toBe('/api/v2/write?org=meridian&bucket=metrics&precision=ns');
    expect(r!.headers.authorization).toBe('Token fixture-api-key');
    const push = decodeInfluxLines(body(r!), { precision: 'ns', receivedAtMs: 0 });
    const t = 1_764_300_000_000;
    expect(push.series.map((s) => [s.name, s.timestamps, s.values])).toEqual([
      ['cpu_usage_system{cpu="cpu-total",host="h1"}', [t, t + 10_000], [3.25, 3.75]],
      ['cpu_usage_user{cpu="cpu-total",host="h1"}', [t, t + 10_000], [12.5, 13.5]],
      ['disk io_reads{dev_name="sd=a",path="/mnt/a,b"}', [t], [1024]],
      ['disk io_writes{dev_name="sd=a",path="/mnt/a,b"}', [t], [2048]],
      ['service_up{name="api"}', [t], [1]],
    ]);
    expect(push).toMatchObject({ rejected: [], dropped: { staleMarkers: 0, stringFields: 1 } });
  });

  it('prometheus: remote write 1.0 of a scrape, its own series and a stale marker', () => {
    const requests = of('prometheus');
    expect(requests.length).toBeGreaterThan(1);
    const target = `instance="${manifest.prometheusTarget}",job="demo"`;
    const pushes = requests.map((r) => {
      expect(r.headers).toMatchObject({
        'content-type': 'application/x-protobuf',
        'content-encoding': 'snappy',
        'x-prometheus-remote-write-version': '0.1.0',
        authorization: 'Bearer fixture-api-key',
      });
      const push = decodeRemoteWriteBody(body(r), '1.0');
      expect(push.rejected).toEqual([]);
      inRecording(push);
      return push;
    });
    const first = new Map(pushes[0]!.series.map((s) => [s.name, s.values]));
    expect([...first.keys()].filter((n) => n.startsWith('demo_'))).toEqual([
      `demo_requests_total{${target},method="GET",path="/a,b"}`,
      `demo_requests_total{${target},method="POST",path="/q\\"x\\""}`,
      `demo_temperature_celsius{${target},room="lab"}`,
      `demo_latency_seconds_bucket{${target},le="0.1"}`,
      `demo_latency_seconds_bucket{${target},le="1"}`,
      `demo_latency_seconds_bucket{${target},le="+Inf"}`,
      `demo_latency_seconds_sum{${target}}`,
      `demo_latency_seconds_count{${target}}`,
      `demo_rpc_seconds{${target},quantile="0.5"}`,
      `demo_rpc_seconds{${target},quantile="0.99"}`,
      `demo_rpc_seconds_sum{${target}}`,
      `demo_rpc_seconds_count{${target}}`,
      `demo_vanishing{${target}}`,
    ]);
    expect(first.get(`demo_requests_total{${target},method="GET",path="/a,b"}`)![0]).toBe(42);
    expect(first.get(`demo_temperature_celsius{${target},room="lab"}`)![0]).toBe(21.5);
    expect(first.get(`demo_latency_seconds_bucket{${target},le="1"}`)![0]).toBe(5);
    expect(first.get(`demo_rpc_seconds{${target},quantile="0.99"}`)![0]).toBe(0.3);
    expect(first.get(`up{${target}}`)).toEqual([1]);
    for (const name of ['scrape_duration_seconds', 'scrape_samples_scraped', 'scrape_samples_post_metric_relabeling', 'scrape_series_added']) {
      expect(first.has(`${name}{${target}}`)).toBe(true);
    }
    // demo_vanishing left the target after two scrapes: Prometheus marked it stale, and the
    // marker is dropped and counted, never written as a value.
    expect(pushes.reduce((n, p) => n + p.dropped.staleMarkers, 0)).toBeGreaterThan(0);
    for (const p of pushes) for (const s of p.series) expect(s.values.every(Number.isFinite)).toBe(true);
  });
});
