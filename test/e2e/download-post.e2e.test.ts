import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { rawRequest } from '../support/raw-http.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { send, uploadFile } from '../support/uploads.ts';

/**
 * POST /api/v1/metrics/download: the GET's parameters in a form or JSON body, for lists too
 * long for a URL. At the defaults (MERIDIAN_MAX_DOWNLOAD_NAMES 10,000, MERIDIAN_MAX_DOWNLOAD_BODY_BYTES
 * 1 MiB, MERIDIAN_MAX_URL_BYTES 8 KiB).
 */
const settings = isolatedSettings();
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let analyst: string; // r on the pd. prefix only

const NAMES = Array.from({ length: 10_000 }, (_, i) => `pd.m${String(i).padStart(5, '0')}`);
const OTHERS = ['pd.other.a', 'pd.other.b']; // readable, never asked for by the list
const HIDDEN = 'hidden.metric'; // exists, not readable by the analyst
const T0 = Date.UTC(2024, 0, 1);
const HEADER = 'metric_name,timestamp,metric_numeric_value,updated_at';
const PATH = '/api/v1/metrics/download';

type Res = { status: number; headers: Headers; bytes: Buffer };
const text = (res: Res) => res.bytes.toString('utf8');

/** node:http rather than fetch: fetch would gunzip a gzip body, and the bytes on the wire are compared. */
function exchange(method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = request(`${api.url}${path}`, { method, headers: { Authorization: `Bearer ${analyst}`, 'Accept-Encoding': 'identity', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const out = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(', ') : v);
        resolve({ status: res.statusCode ?? 0, headers: out, bytes: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
const get = (qs: Record<string, string>, headers: Record<string, string> = {}) => exchange('GET', `${PATH}?${new URLSearchParams(qs)}`, headers);
const post = (body: string | Buffer, contentType: string, headers: Record<string, string> = {}, path = PATH) =>
  exchange('POST', path, { 'Content-Type': contentType, ...headers }, body);
const postForm = (qs: Record<string, string>, headers: Record<string, string> = {}) =>
  post(new URLSearchParams(qs).toString(), 'application/x-www-form-urlencoded', headers);
const postJson = (body: unknown, headers: Record<string, string> = {}) => post(JSON.stringify(body), 'application/json', headers);

function problem(res: Res): { type: string; status: number; detail: string; errors?: Array<{ field: string }> } {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  return JSON.parse(text(res));
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'pd.', access: 'r' }]);
  // Seeded as one upload with per-row names (the download's own CSV layout): two points per metric.
  const rows = [...NAMES, ...OTHERS, HIDDEN].flatMap((name, i) =>
    [0, 1].map((k) => `${name},${formatTimestamp(T0 + k * 60_000)},${i + k / 2},${formatTimestamp(T0)}`),
  );
  const res = await uploadFile(api.url, admin, `${HEADER}\n${rows.join('\n')}\n`);
  expect(res.status, res.text).toBe(202);
  expect((await waitForTask(api.url, admin, res.json.task_id, 120_000)).status).toBe('succeeded');
}, 180_000);
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('POST /api/v1/metrics/download', () => {
  it('returns exactly the rows of a list of 10,000 names, from a JSON array and from a form body alike', async () => {
    const json = await postJson({ metrics: NAMES, max_rows: 100_000 });
    expect(json.status, text(json)).toBe(200);
    expect(json.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(json.headers.get('x-next-cursor')).toBeNull();
    const lines = text(json).trimEnd().split('\n');
    expect(lines[0]).toBe(HEADER);
    expect(lines).toHaveLength(1 + 2 * NAMES.length);
    const perName = new Map<string, number>();
    for (const line of lines.slice(1)) perName.set(line.split(',')[0]!, (perName.get(line.split(',')[0]!) ?? 0) + 1);
    expect([...perName.keys()]).toEqual(NAMES); // ordered by name, none missing, none else
    expect([...perName.values()].every((n) => n === 2)).toBe(true);

    const form = await postForm({ metrics: NAMES.join(','), pattern: 'list', max_rows: '100000' });
    expect(form.status).toBe(200);
    expect(form.bytes.equals(json.bytes)).toBe(true);
  }, 60_000);

  it('answers a short list with the same bytes and headers as the GET: CSV, JSON and gzip', async () => {
    const qs = { metrics: `${NAMES[3]},${OTHERS[0]},${NAMES[1]}`, pattern: 'list', start_date: '2024-01-01', end_date: '2024-01-01T00:00:30Z' };
    for (const [extra, encoding] of [
      [{}, 'identity'],
      [{ file_format: 'json' }, 'identity'],
      [{ format: 'json', latest_only: 'true' }, 'gzip'],
      [{}, 'gzip'],
    ] as const) {
      const params = { ...qs, ...extra };
      const headers = { 'Accept-Encoding': encoding };
      const viaGet = await get(params, headers);
      const viaForm = await postForm(params, headers);
      const viaJson = await postJson({ ...params, ...('latest_only' in params ? { latest_only: true } : {}) }, headers);
      const body = (r: Res) => (encoding === 'gzip' ? gunzipSync(r.bytes) : r.bytes);
      expect(viaGet.status).toBe(200);
      expect(viaGet.headers.get('content-encoding')).toBe(encoding === 'gzip' ? 'gzip' : null);
      expect(body(viaGet).toString('utf8')).toContain(NAMES[3]);
      for (const res of [viaForm, viaJson]) {
        expect(res.status, text(res)).toBe(200);
        for (const h of ['content-type', 'content-disposition', 'content-encoding', 'vary']) expect(res.headers.get(h), h).toBe(viaGet.headers.get(h));
        expect(body(res).equals(body(viaGet))).toBe(true);
      }
    }
  });

  it('pages with X-Next-Cursor only (no Link), the cursor going back in the body; GET and POST cursors continue each other', async () => {
    const whole = await postJson({ metrics: NAMES.slice(0, 4), max_rows: 100 });
    let cursor: string | null = null;
    const pages: string[] = [];
    do {
      const page = await postForm({ metrics: NAMES.slice(0, 4).join(','), pattern: 'list', max_rows: '3', ...(cursor ? { cursor } : {}) });
      expect(page.status, text(page)).toBe(200);
      expect(page.headers.get('link')).toBeNull();
      cursor = page.headers.get('x-next-cursor');
      pages.push(text(page).split('\n').slice(1).join('\n'));
    } while (cursor);
    expect(pages).toHaveLength(3); // 8 rows, 3 a page
    expect(`${HEADER}\n${pages.join('')}`).toBe(text(whole));

    // A GET's cursor continues in a POST (the same parameters, either form) and the reverse.
    const first = await get({ metrics: NAMES.slice(0, 4).join(','), pattern: 'list', max_rows: '3' });
    expect(first.headers.get('link')).toMatch(/rel="next"/);
    const second = await postJson({ metrics: NAMES.slice(0, 4), max_rows: 3, cursor: first.headers.get('x-next-cursor') });
    expect(second.status, text(second)).toBe(200);
    const third = await get({ metrics: NAMES.slice(0, 4).join(','), pattern: 'list', max_rows: '3', cursor: second.headers.get('x-next-cursor')! });
    expect(`${text(first)}${text(second).split('\n').slice(1).join('\n')}${text(third).split('\n').slice(1).join('\n')}`).toBe(text(whole));
    // A cursor is bound to its parameters in either form.
    const other = await postJson({ metrics: NAMES.slice(0, 5), max_rows: 3, cursor: first.headers.get('x-next-cursor') });
    expect(other.status).toBe(400);
    expect(problem(other).errors?.map((e) => e.field)).toEqual(['cursor']);
  });

  it('gives the same 404 as the GET for an unknown name and for one the caller may not read', async () => {
    const unknown = await postJson({ metrics: [NAMES[0], 'pd.nope'] });
    const hidden = await postJson({ metrics: [NAMES[0], HIDDEN] });
    const viaGet = await get({ metrics: `${NAMES[0]},${HIDDEN}`, pattern: 'list' });
    for (const res of [unknown, hidden, viaGet]) {
      expect(res.status).toBe(404);
      expect(problem(res)).toMatchObject({ type: '/problems/not-found', detail: 'no such metric, or not one you may read' });
    }
  });

  it('answers a GET too long for a URL with 414 problem+json naming the POST form', async () => {
    const qs = new URLSearchParams({ metrics: NAMES.slice(0, 1000).join(','), pattern: 'list' }).toString();
    expect(qs.length).toBeGreaterThan(8192); // MERIDIAN_MAX_URL_BYTES
    expect(qs.length).toBeLessThan(16384); // under MERIDIAN_MAX_HEADER_BYTES: the api answers, not Node's parser
    const res = await fetch(`${api.url}${PATH}?${qs}`, { headers: { Authorization: `Bearer ${analyst}` } });
    expect(res.status).toBe(414);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({
      type: '/problems/uri-too-long',
      status: 414,
      detail: expect.stringContaining('send the same parameters as a POST /api/v1/metrics/download body'),
    });
    // Longer than the header limit: Node's parser answers 431, and it names the POST form too.
    const huge = await rawRequest(api.url, Buffer.from(`GET ${PATH}?metrics=${NAMES.join(',')}&pattern=list HTTP/1.1\r\nHost: x\r\n\r\n`));
    expect(huge.status).toBe(431);
    expect(huge.raw).toContain('POST /api/v1/metrics/download');
  });

  it('refuses a body over MERIDIAN_MAX_DOWNLOAD_BODY_BYTES with 413, by Content-Length and by the bytes of a chunked body', async () => {
    const big = JSON.stringify({ metrics: 'x'.repeat(1024 * 1024), pattern: 'contains' });
    const declared = await send(`${api.url}${PATH}`, { key: analyst, body: big, headers: { 'Content-Type': 'application/json' } });
    expect(declared.status).toBe(413);
    expect(declared.json).toMatchObject({
      type: '/problems/payload-too-large',
      status: 413,
      detail: expect.stringContaining('MERIDIAN_MAX_DOWNLOAD_BODY_BYTES'),
    });

    const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        `${api.url}${PATH}`,
        { method: 'POST', headers: { Authorization: `Bearer ${analyst}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      for (let at = 0; at < big.length; at += 64 * 1024) req.write(big.slice(at, at + 64 * 1024));
      req.end();
    });
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body)).toMatchObject({ type: '/problems/payload-too-large' });
  });

  it('refuses a list of more than MERIDIAN_MAX_DOWNLOAD_NAMES names with 400 naming the setting, in both body forms', async () => {
    const tooMany = [...NAMES, 'pd.m10000'];
    for (const res of [await postJson({ metrics: tooMany }), await postForm({ metrics: tooMany.join(','), pattern: 'list' })]) {
      expect(res.status).toBe(400);
      const p = problem(res);
      expect(p.detail).toContain('MERIDIAN_MAX_DOWNLOAD_NAMES');
      expect(p.errors?.map((e) => e.field)).toEqual(['metrics']);
    }
  });

  it('refuses other media types (415), parameters in the query string, and an array of names with another pattern (400)', async () => {
    const plain = await post('metrics=pd.m00001', 'text/plain');
    expect(plain.status).toBe(415);
    expect(problem(plain).type).toBe('/problems/unsupported-media-type');
    const withQuery = await post(JSON.stringify({ metrics: NAMES[1] }), 'application/json', {}, `${PATH}?cursor=x`);
    expect(withQuery.status).toBe(400);
    expect(problem(withQuery).errors?.map((e) => e.field)).toEqual(['query']);
    const contains = await postJson({ metrics: [NAMES[1]], pattern: 'contains' });
    expect(contains.status).toBe(400);
    expect(problem(contains).errors?.map((e) => e.field)).toEqual(['body.pattern']);
    const comma = await postJson({ metrics: ['a,b'] });
    expect(comma.status).toBe(400);
    const notJson = await post('{"metrics":', 'application/json');
    expect(notJson.status).toBe(400);
    expect(problem(notJson).errors?.map((e) => e.field)).toEqual(['body']);
  });
});
