import { Readable } from 'node:stream';
import { startVictoriaMetricsProcess } from '../support/victoria-metrics.ts';
import { dirBytes, fileStream, postStream, processCpuSeconds, waitUntil } from './common.ts';

/**
 * The peer of make bench-ingest and make bench-push: the single-node VictoriaMetrics the tests
 * start (test/support/victoria-metrics.ts), fed by its CSV or JSON-lines import or its remote
 * write, and polled until every point is queryable.
 */
export type VictoriaMetrics = {
  /** Its HTTP base URL (loopback), for the query API. */
  readonly url: string;
  /** Imports Prometheus text lines (`name{labels} value timestamp_ms`), then makes them searchable at once. */
  importPrometheus(body: Readable): Promise<void>;
  /** Imports a download-layout file (RFC 3339 times); the ms from its first byte until `points` points are counted by a query. */
  importDownloadCsv(file: string, points: number, lastTs: number, spanMs: number): Promise<number>;
  /** POST /api/v1/import: JSON lines, one series a line (`{"metric":{...},"values":[...],"timestamps":[...]}`); 204 when taken. */
  importJsonLines(body: Buffer): ReturnType<typeof postStream>;
  /** POST /api/v1/write: a snappy-compressed Prometheus remote write 1.0 body; 204 when taken. */
  remoteWrite(body: Buffer): ReturnType<typeof postStream>;
  /** Points of the series `selector` picks with timestamps in [fromMs, toMs], read back through /api/v1/export. */
  exportedPoints(selector: string, fromMs: number, toMs: number): Promise<number>;
  /** Points a query counts over the series `selector` picks in (lastTs - spanMs - 1 s, lastTs]. */
  count(selector: string, lastTs: number, spanMs: number): Promise<number>;
  /** Writes what it holds in memory to its data directory, where queries and the disk see it. */
  flush(): Promise<void>;
  cpuSeconds(): number;
  /** Its data directory's bytes on disk, once its parts are written (call flush() first). */
  dataBytes(): Promise<number>;
  stop(): Promise<void>;
};

/** Column 1 (the name) as the label `metric`, 2 the time, 3 the value of the metric `value`; updated_at is not imported. */
const DOWNLOAD_FORMAT = '1:label:metric,2:time:rfc3339,3:metric:value';

export async function startVictoriaMetrics(): Promise<VictoriaMetrics> {
  if (!process.env.VICTORIA_METRICS_BIN)
    throw new Error('VICTORIA_METRICS_BIN is not set: run make bench-ingest (it installs VictoriaMetrics with deploy/local/install.sh victoria-metrics)');
  const { base, pid, dataDir, stop } = await startVictoriaMetricsProcess();

  async function count(selector: string, lastTs: number, spanMs: number): Promise<number> {
    // Every point of every series lies in (lastTs - window, lastTs].
    const query = `sum(count_over_time(${selector}[${Math.ceil(spanMs / 1000) + 1}s]))`;
    const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(query)}&time=${lastTs / 1000}`);
    if (!res.ok) throw new Error(`VictoriaMetrics query: ${res.status} ${await res.text()}`);
    const body = (await res.json()) as { data: { result: Array<{ value: [number, string] }> } };
    return Number(body.data.result[0]?.value[1] ?? 0);
  }

  async function flush(): Promise<void> {
    const flushed = await fetch(`${base}/internal/force_flush`);
    if (!flushed.ok) throw new Error(`VictoriaMetrics force_flush: ${flushed.status} ${await flushed.text()}`);
  }

  return {
    url: base,
    async importPrometheus(body) {
      const res = await postStream(`${base}/api/v1/import/prometheus`, {}, body);
      if (res.status >= 300) throw new Error(`VictoriaMetrics Prometheus import: ${res.status} ${res.text}`);
      const flushed = await fetch(`${base}/internal/force_flush`);
      if (!flushed.ok) throw new Error(`VictoriaMetrics force_flush: ${flushed.status} ${await flushed.text()}`);
    },
    async importDownloadCsv(file, points, lastTs, spanMs) {
      const started = performance.now();
      const res = await postStream(`${base}/api/v1/import/csv?format=${encodeURIComponent(DOWNLOAD_FORMAT)}`, {}, fileStream(file));
      if (res.status >= 300) throw new Error(`VictoriaMetrics CSV import: ${res.status} ${res.text}`);
      // Imported rows wait in memory up to ~10 s before a query sees them; this makes them
      // searchable now (the endpoint VictoriaMetrics documents for that), so the figure is
      // its import's cost rather than its flush interval.
      await flush();
      let last = 0;
      await waitUntil(
        'VictoriaMetrics to count every imported point',
        async () => {
          last = await count('value', lastTs, spanMs);
          return last === points ? true : undefined;
        },
        600_000,
        50,
      ).catch((error: unknown) => {
        throw new Error(`${(error as Error).message} (counted ${last} of ${points})`);
      });
      return performance.now() - started;
    },
    importJsonLines: (body) =>
      postStream(`${base}/api/v1/import`, { 'Content-Type': 'application/json', 'Content-Length': String(body.length) }, Readable.from([body])),
    remoteWrite: (body) =>
      postStream(
        `${base}/api/v1/write`,
        {
          'Content-Type': 'application/x-protobuf',
          'Content-Encoding': 'snappy',
          'X-Prometheus-Remote-Write-Version': '0.1.0',
          'Content-Length': String(body.length),
        },
        Readable.from([body]),
      ),
    async exportedPoints(selector, fromMs, toMs) {
      const res = await fetch(`${base}/api/v1/export?${new URLSearchParams({ 'match[]': selector, start: String(fromMs / 1000), end: String(toMs / 1000) })}`);
      if (!res.ok) throw new Error(`VictoriaMetrics export: ${res.status} ${await res.text()}`);
      let points = 0;
      for (const line of (await res.text()).split('\n')) if (line) points += (JSON.parse(line) as { timestamps: number[] }).timestamps.length;
      return points;
    },
    count,
    flush,
    cpuSeconds: () => processCpuSeconds(pid),
    async dataBytes() {
      // A flush makes rows searchable, but they reach the disk as parts written in the background
      // 5–10 s later (measured): the size once it has held still for 10 s, at most 20 s on.
      let last = dirBytes(dataDir);
      for (let still = 0, waited = 0; still < 10 && waited < 20; waited++) {
        await new Promise((r) => setTimeout(r, 1000));
        const now = dirBytes(dataDir);
        still = now === last ? still + 1 : 0;
        last = now;
      }
      return last;
    },
    stop,
  };
}
