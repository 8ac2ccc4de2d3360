import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InfluxDB, Point } from '@influxdata/influxdb-client';
import { OTLPMetricExporter as HttpExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { spawnRemoteWriter } from '../support/prometheus.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The real senders, live: the OpenTelemetry JS SDK's two OTLP exporters, the Influx JS client,
 * curl's v1 line-protocol write and Debian's Prometheus send to a running api with a user's key,
 * and what they sent is then downloadable through /api/v1/metrics/download with its values.
 * (telemetry.e2e replays recorded requests of the same senders byte for byte; this file runs
 * the senders themselves, so a change of theirs or of the api's answers shows here.)
 */
const settings = isolatedSettings({ MERIDIAN_RATE_LIMIT_PER_SECOND: '0' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let sender: string;

type Row = { metric_name: string; timestamp: string; metric_numeric_value: number };

/** The rows of every series whose name starts with `prefix`, as the sender's key downloads them. */
async function download(prefix: string): Promise<Row[]> {
  const qs = new URLSearchParams({ metrics: prefix, pattern: 'starts_with', file_format: 'json', max_rows: '10000' });
  const res = await fetch(`${api.url}/api/v1/metrics/download?${qs}`, { headers: { authorization: `Bearer ${sender}`, 'accept-encoding': 'identity' } });
  expect(res.status).toBe(200);
  return ((await res.json()) as Row[]).sort((a, b) =>
    a.metric_name < b.metric_name ? -1 : a.metric_name > b.metric_name ? 1 : a.timestamp < b.timestamp ? -1 : 1,
  );
}

/** Polls the download until it has at least `count` rows. */
const downloaded = (prefix: string, count: number, timeoutMs = 30_000) =>
  waitFor(
    `${count} rows of ${prefix}*`,
    async () => {
      const rows = await download(prefix);
      return rows.length >= count ? rows : undefined;
    },
    timeoutMs,
    200,
  );

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  sender = await createUser(api.url, admin, 'live_sender', [
    { match: 'prefix', value: 'live_', access: 'rw' },
    { match: 'prefix', value: 'up{', access: 'rw' },
  ]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

type ExportResult = Parameters<Parameters<PushMetricExporter['export']>[1]>[0];
const SUCCESS = 0; // ExportResultCode.SUCCESS of @opentelemetry/core

/** An exporter that keeps what the SDK exported and the result the api's answer gave it. */
function keeping(inner: PushMetricExporter): { exporter: PushMetricExporter; results: ExportResult[]; exported: ResourceMetrics[] } {
  const results: ExportResult[] = [];
  const exported: ResourceMetrics[] = [];
  const exporter: PushMetricExporter = {
    export: (metrics, done) => {
      exported.push(metrics);
      inner.export(metrics, (result) => {
        results.push(result);
        done(result);
      });
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
    selectAggregationTemporality: inner.selectAggregationTemporality?.bind(inner),
  };
  return { exporter, results, exported };
}

describe('the OpenTelemetry JS SDK exports over OTLP/HTTP', () => {
  const exporters = [
    ['protobuf', 'live_proto', (url: string, key: string) => new ProtoExporter({ url, headers: { Authorization: `Bearer ${key}` } })],
    ['JSON', 'live_json', (url: string, key: string) => new HttpExporter({ url, headers: { Authorization: `Bearer ${key}` } })],
  ] as const;
  for (const [encoding, prefix, make] of exporters) {
    it(`${encoding}: a gauge, a counter and a histogram are downloadable with the values recorded`, async () => {
      const kept = keeping(make(`${api.url}/v1/metrics`, sender));
      const provider = new MeterProvider({
        resource: resourceFromAttributes({ 'service.name': 'shop', 'service.instance.id': 'pod-7' }),
        readers: [new PeriodicExportingMetricReader({ exporter: kept.exporter, exportIntervalMillis: 600_000 })],
      });
      const meter = provider.getMeter('meridian-e2e');
      const before = Date.now();
      meter.createGauge(`${prefix}.queue.depth`).record(17.25, { queue: 'orders' });
      const counter = meter.createCounter(`${prefix}.requests`);
      counter.add(3, { method: 'GET' });
      counter.add(2, { method: 'GET' });
      counter.add(1, { method: 'POST' });
      const histogram = meter.createHistogram(`${prefix}.latency`, { unit: 'ms', advice: { explicitBucketBoundaries: [10, 100] } });
      for (const v of [5, 50, 60, 500]) histogram.record(v, { route: '/a' });
      await provider.forceFlush();
      await provider.shutdown();
      const after = Date.now();
      expect(kept.results.length).toBeGreaterThan(0);
      expect(
        kept.results.map((r) => r.code),
        String(kept.results.find((r) => r.error)?.error),
      ).toEqual(kept.results.map(() => SUCCESS));

      const labels = 'instance="pod-7",job="shop"';
      const expected: Array<[string, number]> = [
        [`${prefix}_latency_milliseconds_bucket{${labels},le="+Inf",route="/a"}`, 4],
        [`${prefix}_latency_milliseconds_bucket{${labels},le="10",route="/a"}`, 1],
        [`${prefix}_latency_milliseconds_bucket{${labels},le="100",route="/a"}`, 3],
        [`${prefix}_latency_milliseconds_count{${labels},route="/a"}`, 4],
        [`${prefix}_latency_milliseconds_sum{${labels},route="/a"}`, 615],
        [`${prefix}_queue_depth{${labels},queue="orders"}`, 17.25],
        [`${prefix}_requests_total{${labels},method="GET"}`, 5],
        [`${prefix}_requests_total{${labels},method="POST"}`, 1],
      ];
      // forceFlush and shutdown each export the cumulative state: every series once per export.
      const exports = kept.results.length;
      const rows = await downloaded(`${prefix}_`, expected.length * exports);
      const distinct = [...new Map(rows.map((r) => [`${r.metric_name} ${r.metric_numeric_value}`, r])).values()];
      expect(distinct.map((r) => [r.metric_name, r.metric_numeric_value])).toEqual(expected);
      for (const r of rows) {
        const ms = Date.parse(r.timestamp.replace(/(\d\d)(\d\d)$/, '$1:$2'));
        expect(ms, r.timestamp).toBeGreaterThanOrEqual(before - 1);
        expect(ms, r.timestamp).toBeLessThanOrEqual(after + 1);
      }
    });
  }
});

describe('line protocol from the Influx JS client and from curl', () => {
  it("the Influx client's v2 writes (Token auth) are downloadable with their fields' values", async () => {
    const client = new InfluxDB({ url: api.url, token: sender });
    const write = client.getWriteApi('meridian', 'metrics', 'ms', { maxRetries: 0, gzipThreshold: 64 });
    const t = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    write.writePoints([
      new Point('live_influx').tag('host', 'h1').floatField('temp', 21.5).intField('fans', 3).timestamp(new Date(t)),
      new Point('live_influx')
        .tag('host', 'h1')
        .floatField('temp', 22.75)
        .intField('fans', 4)
        .timestamp(new Date(t + 1000)),
      new Point('live_influx').tag('host', 'h 2').booleanField('up', true).timestamp(new Date(t)),
    ]);
    await write.close();
    const rows = await downloaded('live_influx_', 5);
    expect(rows.map((r) => [r.metric_name, r.timestamp, r.metric_numeric_value])).toEqual([
      ['live_influx_fans{host="h1"}', formatTimestamp(t), 3],
      ['live_influx_fans{host="h1"}', formatTimestamp(t + 1000), 4],
      ['live_influx_temp{host="h1"}', formatTimestamp(t), 21.5],
      ['live_influx_temp{host="h1"}', formatTimestamp(t + 1000), 22.75],
      ['live_influx_up{host="h 2"}', formatTimestamp(t), 1],
    ]);
  });

  it("curl's v1 write (precision=s, basic auth with the key as the password) is downloadable", async () => {
    const url = `${api.url}/write?db=telegraf&precision=s`;
    const body = 'live_curl,host=h3 load=0.5,procs=12i 1767323045\nlive_curl,host=h3 load=0.75 1767323046\n';
    // Spawned, not spawnSync: the api serves from this process's event loop.
    const curl = spawn('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-u', `telegraf:${sender}`, '--data-binary', '@-', url], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    curl.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    curl.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    curl.stdin.end(body);
    await new Promise((resolve) => curl.once('exit', resolve));
    expect(out).toBe('204');
    const rows = await downloaded('live_curl_', 3);
    expect(rows.map((r) => [r.metric_name, r.timestamp, r.metric_numeric_value])).toEqual([
      ['live_curl_load{host="h3"}', formatTimestamp(1_767_323_045_000), 0.5],
      ['live_curl_load{host="h3"}', formatTimestamp(1_767_323_046_000), 0.75],
      ['live_curl_procs{host="h3"}', formatTimestamp(1_767_323_045_000), 12],
    ]);
  });
});

describe("Debian's Prometheus remote-writes to the api", () => {
  it('its scraped series are downloadable under their canonical names, with the values it scraped', async () => {
    const target = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end('# TYPE live_prom_gauge gauge\nlive_prom_gauge{room="a b"} 42.5\n# TYPE live_prom_total counter\nlive_prom_total{path="/q\\"x\\""} 7\n');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const instance = `127.0.0.1:${(target.address() as { port: number }).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'meridian-e2e-prometheus-'));
    const child = spawnRemoteWriter(dir, { job: 'e2e', target: instance, writeUrl: `${api.url}/api/v1/write`, credentials: sender }, 'pipe');
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    try {
      const gauge = `live_prom_gauge{instance="${instance}",job="e2e",room="a b"}`;
      const counter = `live_prom_total{instance="${instance}",job="e2e",path="/q\\"x\\""}`;
      const rows = await waitFor(
        'two scrapes of both series',
        async () => {
          const got = await download('live_prom_');
          return got.filter((r) => r.metric_name === gauge).length >= 2 && got.some((r) => r.metric_name === counter) ? got : undefined;
        },
        60_000,
        500,
      );
      expect(new Set(rows.map((r) => r.metric_name))).toEqual(new Set([gauge, counter]));
      expect(rows.filter((r) => r.metric_name === gauge).every((r) => r.metric_numeric_value === 42.5)).toBe(true);
      expect(rows.filter((r) => r.metric_name === counter).every((r) => r.metric_numeric_value === 7)).toBe(true);
      // Scrapes a second apart: the timestamps are Prometheus' scrape times, distinct and ordered.
      const times = rows.filter((r) => r.metric_name === gauge).map((r) => r.timestamp);
      expect(new Set(times).size).toBe(times.length);
      const up = await download(`up{instance="${instance}"`);
      expect(up.length).toBeGreaterThan(0);
      expect(up.every((r) => r.metric_numeric_value === 1)).toBe(true);
    } catch (error) {
      console.log(`prometheus said: ${stderr.slice(-2000)}`);
      throw error;
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      target.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
