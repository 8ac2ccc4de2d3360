import { randomUUID } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { startRecordingProxy } from '../support/recording-proxy.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { runOverdueTimers, waitFor } from '../support/wait.ts';

// Logged at info into memory (RunningApi.logs): the cancel test finds its query id there.
const settings = isolatedSettings({ MERIDIAN_MAX_ROWS_CEILING: '2000000', LOG_LEVEL: 'info' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;
let analyst: string; // r on dl.pub prefix and on exact names of the injection set

const T = (s: number, ms = 0) => Date.UTC(2024, 0, 1) + s * 1000 + ms;
const HEADER = 'metric_name,timestamp,metric_numeric_value,updated_at';
const tricky = [`quote"d`, 'back\\slash', '100%_done', "x'); DROP TABLE points; --", 'colon:ünï', 'comma,separated', 'semi;=colon'];

async function uploadJson(metric: string, values: Array<[number, number]>, key = admin): Promise<number> {
  const res = await call(`${api.url}/api/v1/metrics/upload`, key, {
    method: 'POST',
    body: { metric_name: metric, values: values.map(([ts, value]) => ({ timestamp: formatTimestamp(ts), value })) },
  });
  expect(res.status, `${metric}: ${res.text}`).toBe(202);
  const task = await waitForTask(api.url, key, res.json.task_id, 120_000);
  expect(task.status).toBe('succeeded');
  const created = await call(`${api.url}/api/v1/tasks/${res.json.task_id}`, key);
  return Date.parse(created.json.created_at.replace(/(\d\d)(\d\d)$/, '$1:$2'));
}

async function download(qs: Record<string, string>, key = analyst, headers: Record<string, string> = {}) {
  const res = await fetch(`${api.url}/api/v1/metrics/download?${new URLSearchParams(qs)}`, {
    headers: { Authorization: `Bearer ${key}`, 'Accept-Encoding': 'identity', ...headers },
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const updated: Record<string, number> = {};

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [
    { match: 'prefix', value: 'dl.pub', access: 'r' },
    ...tricky.map((value) => ({ match: 'exact' as const, value, access: 'r' as const })),
  ]);
  updated['dl.pub.a'] = await uploadJson('dl.pub.a', [
    [T(0), 1.5],
    [T(1, 250), -2],
    [T(0), 3],
    [T(86_400), 0.1],
  ]);
  updated['dl.pub.b'] = await uploadJson('dl.pub.b', [
    [T(5), 1e21],
    [T(6), 1 / 3],
  ]);
  updated['dl.priv.c'] = await uploadJson('dl.priv.c', [[T(0), 42]]);
  for (const name of tricky) updated[name] = await uploadJson(name, [[T(9), tricky.indexOf(name)]]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

const line = (name: string, ts: number, value: string) =>
  `${/[",;]/.test(name) ? `"${name.replace(/"/g, '""')}"` : name},${formatTimestamp(ts)},${value},${formatTimestamp(updated[name]!)}`;

describe('metric downloads', () => {
  it('single: the seed CSV exactly, ordered by timestamp then updated_at, duplicates kept', async () => {
    const res = await download({ metrics: 'dl.pub.a' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="dl.pub.a.csv"');
    const rows = res.text.trimEnd().split('\n');
    expect(rows[0]).toBe(HEADER);
    expect(rows.slice(1).sort()).toEqual(
      [line('dl.pub.a', T(0), '1.5'), line('dl.pub.a', T(0), '3'), line('dl.pub.a', T(1, 250), '-2'), line('dl.pub.a', T(86_400), '0.1')].sort(),
    );
    expect(rows.slice(1).map((r) => r.split(',')[1])).toEqual([
      formatTimestamp(T(0)),
      formatTimestamp(T(0)),
      formatTimestamp(T(1, 250)),
      formatTimestamp(T(86_400)),
    ]);
    expect(res.text.endsWith('\n')).toBe(true);
  });

  it('list, contains, starts_with and ends_with see only entitled metrics', async () => {
    const names = (text: string) => [
      ...new Set(
        text
          .trimEnd()
          .split('\n')
          .slice(1)
          .map((r) => r.split(',')[0]),
      ),
    ];
    expect(names((await download({ metrics: 'dl.pub.b,dl.pub.a', pattern: 'list' })).text)).toEqual(['dl.pub.a', 'dl.pub.b']);
    expect(names((await download({ metrics: 'dl.', pattern: 'starts_with' })).text)).toEqual(['dl.pub.a', 'dl.pub.b']);
    expect(names((await download({ metrics: '.b', pattern: 'ends_with' })).text)).toEqual(['dl.pub.b']);
    expect(names((await download({ metrics: 'pub', pattern: 'contains' })).text)).toEqual(['dl.pub.a', 'dl.pub.b']);
    expect(names((await download({ metrics: 'dl.', pattern: 'starts_with' }, admin)).text)).toEqual(['dl.priv.c', 'dl.pub.a', 'dl.pub.b']);
  });

  it('a missing metric and one the caller may not read give the same 404', async () => {
    const hidden = await download({ metrics: 'dl.priv.c' });
    const missing = await download({ metrics: 'dl.nope' });
    const inList = await download({ metrics: 'dl.pub.a,dl.priv.c', pattern: 'list' });
    for (const r of [hidden, missing, inList]) expect(r.status).toBe(404);
    expect(JSON.parse(hidden.text).detail).toBe(JSON.parse(missing.text).detail);
  });

  it('a pattern that matches nothing gives only the header, or []', async () => {
    expect((await download({ metrics: 'priv', pattern: 'contains' })).text).toBe(`${HEADER}\n`);
    const json = await download({ metrics: 'zzz', pattern: 'contains', file_format: 'json' });
    expect(JSON.parse(json.text)).toEqual([]);
  });

  it('JSON through file_format and its alias format, with the same fields and formats', async () => {
    for (const qs of [{ file_format: 'json' }, { format: 'json' }] as Array<Record<string, string>>) {
      const res = await download({ metrics: 'dl.pub.b', ...qs });
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(res.text)).toEqual([
        { metric_name: 'dl.pub.b', timestamp: formatTimestamp(T(5)), metric_numeric_value: 1e21, updated_at: formatTimestamp(updated['dl.pub.b']!) },
        { metric_name: 'dl.pub.b', timestamp: formatTimestamp(T(6)), metric_numeric_value: 1 / 3, updated_at: formatTimestamp(updated['dl.pub.b']!) },
      ]);
    }
  });

  it('date-only and date-time bounds are inclusive; a date-only end covers its whole day', async () => {
    const count = async (qs: Record<string, string>) => (await download({ metrics: 'dl.pub.a', ...qs })).text.trimEnd().split('\n').length - 1;
    expect(await count({ start_date: '2024-01-01', end_date: '2024-01-01' })).toBe(3);
    expect(await count({ start_date: '2024-01-02', end_date: '2024-01-02' })).toBe(1);
    expect(await count({ start_date: formatTimestamp(T(1, 250)), end_date: '2024-01-01T00:00:01.250Z' })).toBe(1);
    expect(await count({ start_date: '2024-01-01T00:00:01+00:00' })).toBe(2);
    expect(await count({ end_date: '2024-01-01T00:00:00+0000' })).toBe(2);
  });

  it('latest_only keeps the newest row of each metric and timestamp', async () => {
    const t = await uploadJson('dl.pub.a', [[T(0), 99]]);
    updated['dl.pub.a.later'] = t;
    const rows = (await download({ metrics: 'dl.pub.a', latest_only: 'true', end_date: '2024-01-01' })).text.trimEnd().split('\n').slice(1);
    expect(rows).toEqual([`dl.pub.a,${formatTimestamp(T(0))},99,${formatTimestamp(t)}`, line('dl.pub.a', T(1, 250), '-2')]);
  });

  it('names with quotes, backslashes, %, _, SQL fragments and unicode get exactly their own rows', async () => {
    for (const name of tricky) {
      const res = await download({ metrics: name });
      expect(res.status, name).toBe(200);
      expect(res.text, name).toBe(`${HEADER}\n${line(name, T(9), String(tricky.indexOf(name)))}\n`);
      const json = JSON.parse((await download({ metrics: name, format: 'json' })).text) as Array<{ metric_name: string }>;
      expect(json.map((r) => r.metric_name)).toEqual([name]);
    }
    expect((await download({ metrics: '%', pattern: 'contains' })).text.split('\n').filter((l) => l.startsWith('100%')).length).toBe(1);
    // A name with a comma is found by single and by substring patterns (the list pattern splits on commas).
    expect((await download({ metrics: 'comma,sep', pattern: 'starts_with' })).text).toBe(
      `${HEADER}\n${line('comma,separated', T(9), String(tricky.indexOf('comma,separated')))}\n`,
    );
    expect((await download({ metrics: 'comma,separated', pattern: 'list' })).status).toBe(404);
    // Newlines are control characters, refused in names at upload; in a pattern they match nothing.
    expect((await call(`${api.url}/api/v1/metrics/upload`, admin, { method: 'POST', body: { metric_name: 'a\nb', values: [] } })).status).toBe(400);
    expect((await download({ metrics: "dl.pub.a' OR '1'='1" })).status).toBe(404);
    expect((await download({ metrics: 'dl.pub.a\n' })).status).toBe(404);
    expect((await download({ metrics: "\n' OR 1=1 --", pattern: 'contains' })).text).toBe(`${HEADER}\n`);
    expect((await download({ metrics: 'dl.pub.a\n,dl.pub.b', pattern: 'list' })).status).toBe(404);
  });

  it("two downloads sent with the same X-Request-Id both complete: the ClickHouse query id is never the caller's", async () => {
    const requestId = randomUUID();
    const [x, y] = await Promise.all([
      download({ metrics: 'dl.pub.a' }, analyst, { 'X-Request-Id': requestId }),
      download({ metrics: 'dl.pub.b' }, analyst, { 'X-Request-Id': requestId }),
    ]);
    expect([x.status, y.status]).toEqual([200, 200]);
    expect(x.text.split('\n')[1]).toMatch(/^dl\.pub\.a,/);
    expect(y.text.split('\n')[1]).toMatch(/^dl\.pub\.b,/);
    const ids = api
      .logs()
      .filter((l) => l.request_id === requestId && l.msg === 'download query')
      .map((l) => l.clickhouse_query_id);
    expect(new Set(ids).size).toBe(2);
    expect(ids).not.toContain(requestId);
  });

  it('bad input gets a 400 problem naming the parameter', async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ metrics: 'dl.pub.a', pattern: 'glob' }, 'pattern'],
      [{}, 'metrics'],
      [{ metrics: 'dl.pub.a', start_date: 'yesterday' }, 'start_date'],
      [{ metrics: 'dl.pub.a', start_date: '2024-02-02', end_date: '2024-02-01' }, 'start_date'],
      [{ metrics: 'dl.pub.a', max_rows: '-1' }, 'max_rows'],
      [{ metrics: 'dl.pub.a', max_rows: '2000001' }, 'max_rows'],
      [{ metrics: 'dl.pub.a', file_format: 'xml' }, 'file_format'],
      [{ metrics: 'dl.pub.a', cursor: 'garbage!' }, 'cursor'],
    ];
    for (const [qs, field] of cases) {
      const res = await download(qs);
      expect(res.status, JSON.stringify(qs)).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
      expect(JSON.stringify(JSON.parse(res.text).errors), JSON.stringify(qs)).toContain(field);
    }
    expect((await download({ metrics: 'dl.pub.a', max_rows: '2000001' })).text).toMatch(/at most 2000000/);
  });

  describe('at volume', () => {
    const N = 1_000_000;
    beforeAll(async () => {
      const lines = Array.from({ length: N }, (_, i) => `${formatTimestamp(T(i))},${i}`).join('\n');
      await runOverdueTimers(); // building 1M rows can outlast the keep-alive timeout on a loaded machine
      const res = await fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=dl.pub.big`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${admin}` },
        body: lines,
      });
      expect(res.status).toBe(202);
      expect((await waitForTask(api.url, admin, ((await res.json()) as { task_id: string }).task_id, 300_000)).status).toBe('succeeded');
    });

    it("HEAD answers the GET's status and headers without running a download query", async () => {
      // A second api whose ClickHouse traffic goes through a proxy that keeps every query's text.
      const proxy = await startRecordingProxy(settings.CLICKHOUSE_URL);
      const watched = await startApi({ ...settings, CLICKHOUSE_URL: proxy.url });
      try {
        const ask = async (method: 'GET' | 'HEAD', qs: Record<string, string>, key = analyst, encoding = 'identity') => {
          const before = proxy.queries().length;
          const res = await fetch(`${watched.url}/api/v1/metrics/download?${new URLSearchParams(qs)}`, {
            method,
            headers: { Authorization: `Bearer ${key}`, 'Accept-Encoding': encoding },
          });
          const body = Buffer.from(await res.arrayBuffer());
          const headers = ['content-type', 'content-disposition', 'content-encoding', 'vary'].map((h) => [h, res.headers.get(h)]);
          // Downloads read the table `points`; resolving names reads the catalog only.
          const readPoints = proxy
            .queries()
            .slice(before)
            .some((q) => /\bFROM points\b/.test(q));
          return { status: res.status, headers, body, readPoints };
        };
        for (const [qs, encoding] of [
          [{ metrics: 'dl.pub.big', max_rows: String(N) }, 'identity'],
          [{ metrics: 'dl.', pattern: 'starts_with', file_format: 'json', max_rows: '10' }, 'gzip'],
        ] as const) {
          const get = await ask('GET', qs, analyst, encoding);
          expect(get.status).toBe(200);
          expect(get.readPoints).toBe(true); // the proxy sees a download's queries
          const head = await ask('HEAD', qs, analyst, encoding);
          expect(head).toEqual({ status: 200, headers: get.headers, body: Buffer.alloc(0), readPoints: false });
        }
        // Refusals are the GET's too, still without a download query.
        for (const [qs, status] of [
          [{ metrics: 'dl.priv.c' }, 404],
          [{ metrics: 'dl.nothing' }, 404],
          [{ metrics: 'dl.pub.a', max_rows: '-1' }, 400],
        ] as const) {
          const get = await ask('GET', qs);
          const head = await ask('HEAD', qs);
          expect(get.status).toBe(status);
          expect(head).toMatchObject({ status, headers: get.headers, body: Buffer.alloc(0), readPoints: false });
        }
      } finally {
        await watched.close();
        await proxy.close();
      }
    });

    it('pages through 25,000 rows in pages of 10,000: every row once, in order', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await download({ metrics: 'dl.pub.big', max_rows: '10000', end_date: formatTimestamp(T(24_999)), ...(cursor ? { cursor } : {}) });
        expect(res.status).toBe(200);
        seen.push(...res.text.trimEnd().split('\n').slice(1));
        cursor = res.headers.get('x-next-cursor');
        if (cursor) expect(res.headers.get('link')).toContain('rel="next"');
        pages++;
      } while (cursor && pages < 10);
      expect(pages).toBe(3);
      expect(seen).toHaveLength(25_000);
      expect(seen.map((r) => Number(r.split(',')[2]))).toEqual(Array.from({ length: 25_000 }, (_, i) => i));
    });

    it('a cursor continues only the query and the user it was issued to; any other use is a 400 problem', async () => {
      const qs = { metrics: 'dl.pub.big', max_rows: '10' };
      const cursor = (await download(qs)).headers.get('x-next-cursor')!;
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(Buffer.from(cursor, 'base64url').toString('latin1')).not.toContain('dl.pub.big'); // opaque: no name, no offsets
      const next = await download({ ...qs, cursor });
      expect(next.status).toBe(200);
      expect(next.text.split('\n')[1]).toBe(`dl.pub.big,${formatTimestamp(T(10))},10,${next.text.split('\n')[1]!.split(',')[3]}`);
      const tampered = `${cursor.slice(0, -2)}${cursor.endsWith('AA') ? 'BB' : 'AA'}`;
      const misuses: Array<[Record<string, string>, string]> = [
        [{ ...qs, cursor: tampered }, analyst],
        [{ ...qs, cursor }, admin], // another user
        [{ ...qs, metrics: 'dl.pub.b', cursor }, analyst], // another query
        [{ ...qs, start_date: '2024-01-01', cursor }, analyst],
        [{ ...qs, latest_only: 'true', cursor }, analyst],
      ];
      for (const [q, key] of misuses) {
        const res = await download(q, key);
        expect(res.status, JSON.stringify(q)).toBe(400);
        expect(res.headers.get('content-type')).toMatch(/problem\+json/);
        expect(JSON.parse(res.text).errors[0].field).toBe('cursor');
      }
    });

    it("a 1M-row CSV downloads completely, gzip or not, with the api's memory flat", async () => {
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 20);
      const plain = await download({ metrics: 'dl.pub.big', max_rows: String(N) });
      clearInterval(sampler);
      expect(plain.status).toBe(200);
      const rows = plain.text.trimEnd().split('\n');
      expect(rows).toHaveLength(N + 1);
      expect(rows[N]).toBe(`dl.pub.big,${formatTimestamp(T(N - 1))},${N - 1},${rows[N]!.split(',')[3]}`);
      expect(plain.headers.get('x-next-cursor')).toBeNull();
      // The test process holds the whole body (about 80 MB of text) itself; the api's share must stay small.
      expect(peak - before).toBeLessThan(plain.text.length * 3 + 64 * 1024 * 1024);

      const zipped = await fetch(`${api.url}/api/v1/metrics/download?metrics=dl.pub.big&max_rows=${N}`, {
        headers: { Authorization: `Bearer ${analyst}`, 'Accept-Encoding': 'gzip' },
      });
      expect(zipped.headers.get('content-encoding')).toBe('gzip');
      expect(await zipped.text()).toBe(plain.text); // fetch gunzips
    });

    it('a client that goes away during a download in parts, CSV or Arrow, stops every part, the one ahead included', async () => {
      const M = 300_000;
      const lines = Array.from({ length: M }, (_, i) => `${formatTimestamp(T(i))},${i}`).join('\n');
      await runOverdueTimers();
      const upload = await fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=dl.pub.big2`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${admin}` },
        body: lines,
      });
      expect((await waitForTask(api.url, admin, ((await upload.json()) as { task_id: string }).task_id, 300_000)).status).toBe('succeeded');
      // starts_with dl.pub.big: part 0 is dl.pub.big (past the first part's 50k rows), part 1 dl.pub.big2,
      // started (and sorted) while part 0 streams. Every part's query id starts with the download's.
      // Arrow too: its body is encoded by the api (and its buffers freed as sent), the parts are the same.
      for (const format of ['csv', 'arrow']) {
        const requestId = randomUUID();
        const queryId = () => api.logs().find((l) => l.request_id === requestId && l.msg === 'download query')?.clickhouse_query_id as string;
        const running = async () => {
          const sql = `SELECT query_id FROM system.processes WHERE query_id LIKE '${queryId()}%' FORMAT TSV`;
          return (await (await fetch(`${settings.CLICKHOUSE_URL}/?query=${encodeURIComponent(sql)}`)).text()).split('\n').filter(Boolean);
        };
        const url = new URL(`${api.url}/api/v1/metrics/download?metrics=dl.pub.big&pattern=starts_with&max_rows=${N + M}&format=${format}`);
        const req = request(url, { headers: { Authorization: `Bearer ${analyst}`, 'X-Request-Id': requestId } });
        const res = await new Promise<IncomingMessage>((resolve, reject) => {
          req.once('response', resolve);
          req.once('error', reject);
          req.end();
        });
        expect(res.statusCode).toBe(200);
        await new Promise((resolve) => res.once('data', resolve));
        res.pause(); // a slow reader: part 0 waits on it, part 1 is sorted and waits behind part 0
        const both = await waitFor(
          'both parts to run',
          async () => {
            const ids = await running();
            return ids.length === 2 ? ids : undefined;
          },
          30_000,
          50,
        );
        expect(both.sort()).toEqual([queryId(), `${queryId()}-part1`]);
        req.destroy();
        await waitFor('every part of the download to stop', async () => ((await running()).length === 0 ? true : undefined), 10_000, 100);
      }
    });

    it('a client that disconnects mid-download leaves no running query in ClickHouse', async () => {
      // The api logs the query id it gave ClickHouse beside the request id (a download read in parts
      // names each part by that id and a suffix), so this test sees only its own queries.
      const requestId = randomUUID();
      const queryId = () => api.logs().find((l) => l.request_id === requestId && l.msg === 'download query')?.clickhouse_query_id as string;
      const running = async () =>
        (
          await (
            await fetch(`${settings.CLICKHOUSE_URL}/?query=${encodeURIComponent(`SELECT count() FROM system.processes WHERE query_id LIKE '${queryId()}%'`)}`)
          ).text()
        ).trim();
      let sawQuery = false;
      await new Promise<void>((resolve, reject) => {
        const url = new URL(`${api.url}/api/v1/metrics/download?metrics=dl.pub.big&max_rows=${N}`);
        const req = request(url, { headers: { Authorization: `Bearer ${analyst}`, 'X-Request-Id': requestId } }, (res) => {
          res.once('data', () => {
            void running().then((n) => {
              sawQuery = n !== '0';
              req.destroy();
              resolve();
            });
          });
        });
        req.on('error', () => resolve());
        req.setTimeout(60_000, () => reject(new Error('no data')));
        req.end();
      });
      expect(sawQuery).toBe(true); // it was running while the client read
      await waitFor('the download query to stop', async () => ((await running()) === '0' ? true : undefined), 10_000, 100);
    });
  });
});
