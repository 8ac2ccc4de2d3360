import { tableFromIPC } from 'apache-arrow';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { uploadFile } from '../support/uploads.ts';

// Small batches, so a page of a few thousand rows crosses several record batches and row groups.
const BATCH_ROWS = 1024;
const settings = isolatedSettings({ MERIDIAN_DOWNLOAD_BATCH_ROWS: String(BATCH_ROWS) });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let analyst: string;

type Row = [name: string, timestamp: number, value: number, updatedAt: number];

/** Metrics as producers name them, with values of every kind a double holds. */
const METRICS = ['col.cpu:load', 'col.mémoire ✓', 'col.quote"d,comma;semi'];
const POINTS_EACH = 3000;
const T0 = Date.UTC(2024, 0, 1);
const valueOf = (m: number, i: number) => [i / 7, -i * 1e300, 5e-324 * i, i][m % 4]!;

async function get(qs: Record<string, string>) {
  const res = await fetch(`${api.url}/api/v1/metrics/download?${new URLSearchParams(qs)}`, {
    headers: { Authorization: `Bearer ${analyst}`, 'Accept-Encoding': 'gzip' },
  });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** RFC 4180 CSV rows of the download layout. */
function csvRows(text: string): Row[] {
  const rows: Row[] = [];
  for (const line of text.trim().split('\n').slice(1)) {
    const m = /^("(?:[^"]|"")*"|[^,]*),([^,]+),([^,]+),([^,]+)$/.exec(line)!;
    const name = m[1]!.startsWith('"') ? m[1]!.slice(1, -1).replace(/""/g, '"') : m[1]!;
    rows.push([name, Date.parse(m[2]!.replace(/(\d\d)(\d\d)$/, '$1:$2')), Number(m[3]), Date.parse(m[4]!.replace(/(\d\d)(\d\d)$/, '$1:$2'))]);
  }
  return rows;
}

function arrowRows(bytes: Buffer): { rows: Row[]; batches: number; types: string[] } {
  const table = tableFromIPC(bytes);
  const rows: Row[] = [];
  for (const r of table) rows.push([r.metric_name as string, r.timestamp as number, r.metric_numeric_value as number, r.updated_at as number]);
  return { rows, batches: table.batches.length, types: table.schema.fields.map((f) => `${f.name}:${String(f.type)}`) };
}

async function parquetRows(bytes: Buffer): Promise<{ rows: Row[]; rowGroups: number; schema: string[] }> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer;
  const meta = parquetMetadata(file);
  const objects = await parquetReadObjects({ file });
  const ms = (v: unknown) => (v instanceof Date ? v.getTime() : Number(v));
  return {
    rows: objects.map((o) => [o.metric_name as string, ms(o.timestamp), o.metric_numeric_value as number, ms(o.updated_at)]),
    rowGroups: meta.row_groups.length,
    schema: meta.schema.slice(1).map((s) => `${s.name}:${s.type}:${s.logical_type?.type ?? ''}`),
  };
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'col.', access: 'rw' }]);
  for (const [m, metric] of METRICS.entries()) {
    const csv = Array.from({ length: POINTS_EACH }, (_, i) => `${formatTimestamp(T0 + i * 1500 + (i % 3))},${valueOf(m, i)}\n`).join('');
    const res = await uploadFile(api.url, analyst, csv, { metric_name: metric });
    expect(res.status, res.text).toBe(202);
    expect((await waitForTask(api.url, analyst, res.json.task_id as string, 120_000)).status).toBe('succeeded');
  }
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('Arrow and Parquet downloads', () => {
  it("hold exactly the CSV download's rows, typed, in batches of MERIDIAN_DOWNLOAD_BATCH_ROWS, never gzipped", async () => {
    const query = { metrics: 'col.', pattern: 'starts_with', max_rows: '100000' };
    const csv = await get({ ...query, format: 'csv' });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-encoding')).toBe('gzip'); // (fetch decodes it)
    const expected = csvRows(csv.bytes.toString());
    expect(expected).toHaveLength(METRICS.length * POINTS_EACH);

    const arrow = await get({ ...query, format: 'arrow' });
    expect(arrow.status).toBe(200);
    expect(arrow.headers.get('content-type')).toBe('application/vnd.apache.arrow.stream');
    expect(arrow.headers.get('content-encoding')).toBeNull();
    expect(arrow.headers.get('content-disposition')).toBe('attachment; filename="metrics-starts_with.arrows"');
    const a = arrowRows(arrow.bytes);
    expect(a.types).toEqual([
      'metric_name:Dictionary<Int32, Utf8>',
      'timestamp:Timestamp<MILLISECOND, UTC>',
      'metric_numeric_value:Float64',
      'updated_at:Timestamp<MILLISECOND, UTC>',
    ]);
    expect(a.rows).toEqual(expected);
    expect(a.batches).toBeGreaterThanOrEqual(Math.ceil(expected.length / BATCH_ROWS));

    const parquet = await get({ ...query, file_format: 'parquet' });
    expect(parquet.status).toBe(200);
    expect(parquet.headers.get('content-type')).toBe('application/vnd.apache.parquet');
    expect(parquet.headers.get('content-encoding')).toBeNull();
    const p = await parquetRows(parquet.bytes);
    expect(p.schema).toEqual(['metric_name:BYTE_ARRAY:STRING', 'timestamp:INT64:TIMESTAMP', 'metric_numeric_value:DOUBLE:', 'updated_at:INT64:TIMESTAMP']);
    expect(p.rows).toEqual(expected);
    expect(p.rowGroups).toBeGreaterThanOrEqual(Math.ceil(expected.length / BATCH_ROWS));
  });

  it("page with the same cursor as CSV, each page a whole stream or file; POST gives the same bytes' rows", async () => {
    for (const format of ['arrow', 'parquet'] as const) {
      const all: Row[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await get({ metrics: 'col.', pattern: 'starts_with', max_rows: '2500', format, ...(cursor ? { cursor } : {}) });
        expect(res.status).toBe(200);
        all.push(...(format === 'arrow' ? arrowRows(res.bytes).rows : (await parquetRows(res.bytes)).rows));
        cursor = res.headers.get('x-next-cursor');
        pages++;
      } while (cursor);
      expect(pages).toBe(Math.ceil((METRICS.length * POINTS_EACH) / 2500));
      const whole = await get({ metrics: 'col.', pattern: 'starts_with', max_rows: '100000', format });
      expect(all).toEqual(format === 'arrow' ? arrowRows(whole.bytes).rows : (await parquetRows(whole.bytes)).rows);
      const post = await fetch(`${api.url}/api/v1/metrics/download`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${analyst}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ metrics: [METRICS[1]], format, max_rows: 10 }),
      });
      expect(post.status).toBe(200);
      const bytes = Buffer.from(await post.arrayBuffer());
      const rows = format === 'arrow' ? arrowRows(bytes).rows : (await parquetRows(bytes)).rows;
      expect(rows.map((r) => r[0])).toEqual(Array(10).fill(METRICS[1]));
    }
  });

  it('a download that reads no metric is an empty stream or file that still carries the schema', async () => {
    const arrow = await get({ metrics: 'col.nothing-here', pattern: 'starts_with', format: 'arrow' });
    expect(arrow.status).toBe(200);
    const a = arrowRows(arrow.bytes);
    expect(a.rows).toEqual([]);
    expect(a.types).toHaveLength(4);
    const parquet = await get({ metrics: 'col.nothing-here', pattern: 'starts_with', format: 'parquet' });
    const p = await parquetRows(parquet.bytes);
    expect(p.rows).toEqual([]);
    expect(p.schema).toHaveLength(4);
    const wrong = await get({ metrics: 'col.', pattern: 'starts_with', format: 'xlsx' });
    expect(wrong.status).toBe(400);
  });
});
