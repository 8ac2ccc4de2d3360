import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { compressSync } from 'snappy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTimeout } from '@meridian/observability';
import { STAGING_PREFIX } from '@meridian/storage';
import { call } from '../support/api.ts';
import { gzipBomb, rowsBlock } from '../support/bombs.ts';
import { remoteWriteBody } from '../support/protocol-bodies.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { localPortsOf } from '../support/ports.ts';
import { waitForTask, type TaskBody } from '../support/tasks.ts';
import { send, uploadFile, type Answer } from '../support/uploads.ts';
import { waitFor } from '../support/wait.ts';
import { HostileReport } from './report.ts';
import { HostileStack } from './stack.ts';

/**
 * The hostile tier: each case sends what one careless or malicious user can send,
 * against real api and ingest processes, and is then held to the same checks (stack.ts:
 * /healthz fast, the ingest process never died, another user's upload still flows).
 *
 * Bounds lowered or raised for the processes, and why:
 *   MERIDIAN_RATE_LIMIT_PER_SECOND=0  rate limiting off: the floods of e, f and g must meet the
 *                                     per-user caps, not the rate limiter.
 *   MERIDIAN_MAX_API_KEYS_PER_USER=20 e: each key until the cap is an accounts event through
 *                                     Kafka (about 0.3 s apiece on a loaded 2-core machine).
 *   MERIDIAN_MAX_FILES_PER_USER=100   f: the cap is reached after 100 files, not 10,000.
 *   MERIDIAN_HTTP_IDLE_TIMEOUT_MS=1500   h only, on an api process of its own.
 * Everything else keeps its default (expansion ratio 200, decompressed 20 GB, 16 KiB account
 * bodies, nesting and line bounds, 4 downloads at once per user: g's 100 HEADs by one user
 * must take none of them).
 */
const API_KEYS_CAP = 20;
const FILES_CAP = 100;
const stack = new HostileStack({
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
  MERIDIAN_MAX_API_KEYS_PER_USER: String(API_KEYS_CAP),
  MERIDIAN_MAX_FILES_PER_USER: String(FILES_CAP),
});
const report = new HostileReport(stack);
const IDLE_MS = 1500;

/** 10 metrics of 1M points each, written straight into ClickHouse (downloads of d and g read them). */
const SEED = { prefix: 'hostile.head.', metrics: 10, pointsEach: 1_000_000 };

let nobody: string; // no entitlements at all
let writer: string; // rw on hostile.*

const MiB = 1 << 20;
const isProblem = (a: { headers: Record<string, string | string[] | undefined> | Headers }) =>
  String(a.headers instanceof Headers ? a.headers.get('content-type') : a.headers['content-type']).startsWith('application/problem+json');

/** Every object and unfinished multipart upload under the staging prefix. */
async function staged(): Promise<Set<string>> {
  const found = new Set<string>();
  for await (const o of stack.storage.client.listObjectsV2(stack.storage.bucket, STAGING_PREFIX, true)) found.add(`object ${(o as { name: string }).name}`);
  for await (const u of stack.storage.client.listIncompleteUploads(stack.storage.bucket, STAGING_PREFIX, true)) found.add(`multipart ${u.key}`);
  return found;
}

/** The task's failure in words: its reason, else its first row errors. */
const failureText = (task: TaskBody) =>
  task.reason ??
  task.errors
    .slice(0, 3)
    .map((e) => `row ${e.row}: ${e.reason}`)
    .join('; ');

/** Accepted (202), then the task must fail within `withinMs` with a reason matching `reason`. */
async function expectFailedTask(answer: Answer, key: string, withinMs: number, reason: RegExp): Promise<string> {
  expect(answer.status, answer.text.slice(0, 300)).toBe(202);
  const t0 = performance.now();
  const task = await waitForTask(stack.apiUrl, key, answer.json.task_id as string, withinMs);
  const text = failureText(task);
  expect(task.status, `task ${task.status}: ${text}`).toBe('failed');
  expect(text).toMatch(reason);
  return `task failed after ${((performance.now() - t0) / 1000).toFixed(1)} s: "${text.slice(0, 160)}"`;
}

/** Runs `job` for 0..count-1 with at most `width` at once; the results in order. */
async function bounded<T>(count: number, width: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await job(i);
      }
    }),
  );
  return results;
}

/** Counts of each status; refusals must be 4xx problem+json, and not the rate limiter's. */
function tally(answers: Array<{ status: number; problem: boolean; type?: string }>) {
  const byStatus = new Map<number, number>();
  for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
  const badRefusals = answers.filter((a) => a.status >= 400 && (a.status >= 500 || !a.problem || a.type === '/problems/rate-limited'));
  return { byStatus: [...byStatus].map(([s, n]) => `${n}×${s}`).join(', '), badRefusals };
}

type Cut = { cutAfterMs: number | null; status: string | undefined };

/**
 * An upload over a raw socket that sends its head and a first line, then 20 bytes every
 * `everyMs` (null: nothing more, so its last byte is at its start); how long after its start
 * the server closed it, if it did within 10 s past the idle timeout, and any answer's status.
 */
async function slowUpload(url: string, head: string, { everyMs }: { everyMs: number | null }): Promise<Cut> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  let answer = '';
  let closedAt: number | null = null;
  socket.on('data', (d: Buffer) => {
    answer += d.toString('latin1');
  });
  socket.on('error', () => {
    /* a reset is a cut too */
  });
  const closed = new Promise<void>((resolve) =>
    socket.on('close', () => {
      closedAt = performance.now();
      resolve();
    }),
  );
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const start = performance.now();
  socket.write(`${head}2024-01-01T00:00:00Z,0\n`);
  const timer =
    everyMs === null
      ? undefined
      : setInterval(() => {
          if (!socket.destroyed) socket.write('x'.repeat(20));
        }, everyMs);
  await Promise.race([closed, new Promise((r) => setTimeout(r, IDLE_MS + 10_000))]);
  clearInterval(timer);
  socket.destroy();
  return { cutAfterMs: closedAt === null ? null : closedAt - start, status: /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] };
}

type RawAnswer = { status: number | null; body: string; apiPid: number | undefined };

/**
 * Sends `head` and then `body` over a raw socket, `chunk` bytes every `everyMs`, and either ends
 * (the server must answer) or destroys the socket after `abortAfterMs`, as a client that gives
 * up or loses its network does. The status of any answer, and the api's PID after it.
 */
async function rawUpload(
  url: string,
  head: string,
  body: Buffer,
  { chunk, everyMs, abortAfterMs }: { chunk: number; everyMs: number; abortAfterMs: number | null },
): Promise<RawAnswer> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  let answer = '';
  socket.on('data', (d: Buffer) => {
    answer += d.toString('latin1');
  });
  socket.on('error', () => {
    /* our own abort, or the server's reset */
  });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const start = performance.now();
  socket.write(head);
  for (let at = 0; at < body.length && !socket.destroyed; at += chunk) {
    if (abortAfterMs !== null && performance.now() - start >= abortAfterMs) break;
    if (!socket.write(body.subarray(at, at + chunk))) await new Promise((r) => socket.once('drain', r));
    await new Promise((r) => setTimeout(r, everyMs));
  }
  if (abortAfterMs !== null) socket.destroy();
  await withTimeout(closed, 30_000, 'the server to answer and close');
  const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];
  return { status: status === undefined ? null : Number(status), body: answer.split('\r\n\r\n').slice(1).join('\r\n\r\n'), apiPid: stack.api.child.pid };
}

/** A multipart head for `path` whose body declares `length` bytes. */
const multipartHead = (path: string, key: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=cutcutcut\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`;

beforeAll(async () => {
  await stack.start();
  nobody = await stack.user('nobody', []);
  writer = await stack.user('writer', [{ match: 'prefix', value: 'hostile.', access: 'rw' }]);
  // Shaped as the projector writes points, on a points partition no consumer has (65535), so
  // the projector's resume positions (max offset of its own partitions) are not moved.
  await clickhouse(
    stack.settings,
    `INSERT INTO points SELECT concat('${SEED.prefix}', toString(intDiv(number, ${SEED.pointsEach}))), ${Date.UTC(2024, 0, 1)} + (number % ${SEED.pointsEach}) * 1000, toFloat64(number), ${Date.UTC(2024, 0, 1)}, 'hostile-seed', 65535, 0, toUInt32(number % ${SEED.pointsEach}) FROM numbers(${SEED.metrics * SEED.pointsEach})`,
  );
});

afterAll(async () => {
  report.print();
  await stack.stop();
});

describe('hostile input cannot stop or starve the service', () => {
  const jsonBomb = () => gzipBomb({ head: '{"values":[', block: Buffer.alloc(MiB, ' '), repeats: 6 * 1024, tail: ']}' });

  it('a1. gzip JSON bomb (6 GiB of spaces) without metric_name by a user with no entitlements: 403 before anything is staged', async () => {
    await report.runCase('a1', 'gzip JSON bomb, 6 GiB of spaces, no metric_name, user with no entitlements', [], async () => {
      const { gzip, expandedBytes } = jsonBomb();
      const before = await staged();
      const answer = await uploadFile(stack.apiUrl, nobody, gzip);
      expect(answer.status, answer.text.slice(0, 300)).toBe(403);
      expect(isProblem(answer)).toBe(true);
      const after = await staged();
      expect([...after].filter((k) => !before.has(k))).toEqual([]);
      return `${(gzip.length / 1e6).toFixed(2)} MB gzip → ${(expandedBytes / 2 ** 30).toFixed(0)} GiB: 403 problem+json, nothing staged`;
    });
  });

  it('a2. the same bomb by a user with rw on a prefix: the task fails on the expansion bound within seconds', async () => {
    await report.runCase(
      'a2',
      'gzip JSON bomb, 6 GiB of spaces, no metric_name, user with rw on hostile.*',
      ['MERIDIAN_MAX_EXPANSION_RATIO', 'MERIDIAN_MAX_DECOMPRESSED_BYTES'],
      async () => {
        const { gzip } = jsonBomb();
        return expectFailedTask(await uploadFile(stack.apiUrl, writer, gzip), writer, 30_000, /expan|ratio|decompress/i);
      },
    );
  });

  it('b. gzip CSV bomb (2 GB of rows) with on_error=skip: the task fails on the expansion ratio', async () => {
    await report.runCase('b', 'gzip CSV bomb, ≈2 GB of one invalid row, on_error=skip', ['MERIDIAN_MAX_EXPANSION_RATIO'], async () => {
      const block = rowsBlock('2024-01-01T00:00:00Z,not-a-number\n');
      const { gzip, expandedBytes } = gzipBomb({ head: 'timestamp,value\n', block, repeats: Math.round(2e9 / block.length), tail: '' });
      const answer = await uploadFile(stack.apiUrl, writer, gzip, { metric_name: 'hostile.csv', on_error: 'skip' });
      const outcome = await expectFailedTask(answer, writer, 120_000, /expan|ratio/i);
      return `${(gzip.length / 1e6).toFixed(2)} MB gzip → ${(expandedBytes / 1e9).toFixed(2)} GB: ${outcome}`;
    });
  });

  it('c. 50 MB of nested JSON as a file: the task fails with a clear reason', async () => {
    await report.runCase('c', '50 MB of nested JSON ([[[[…]]]]) as a file, with metric_name', ['MERIDIAN_MAX_JSON_DOCUMENT_BYTES'], async () => {
      const depth = 25_000_000;
      const body = Buffer.alloc(2 * depth, '[');
      body.fill(']', depth);
      // A clear reason is a sentence for the user, not the text of an exception inside the worker.
      return expectFailedTask(
        await uploadFile(stack.apiUrl, writer, body, { metric_name: 'hostile.nested' }),
        writer,
        60_000,
        /^(?![\s\S]*(heap|RangeError|TypeError|call stack|undefined|internal error))[\s\S]*\w/i,
      );
    });
  });

  it('d. a 16 MiB JSON body to an account route while a download streams: 413, and the download completes', async () => {
    await report.runCase('d', '16 MiB JSON body to POST /api/v1/users while a 1M-row download streams', ['MERIDIAN_MAX_SMALL_JSON_BODY_BYTES'], async () => {
      const metric = `${SEED.prefix}0`;
      const download = await fetch(`${stack.apiUrl}/api/v1/metrics/download?${new URLSearchParams({ metrics: metric, max_rows: String(SEED.pointsEach) })}`, {
        headers: { Authorization: `Bearer ${writer}`, 'Accept-Encoding': 'identity' },
      });
      expect(download.status).toBe(200);
      const reader = download.body!.getReader();
      let newlines = 0;
      const count = (chunk: Uint8Array) => {
        for (const byte of chunk) if (byte === 10) newlines++;
      };
      const first = await reader.read();
      count(first.value ?? new Uint8Array());

      const prefix = '{"user_name":"padded","is_admin":false,"pad":"';
      const body = Buffer.alloc(16 * MiB, 'x');
      body.write(prefix);
      body.write('"}', body.length - 2);
      const answer = await send(`${stack.apiUrl}/api/v1/users`, { key: stack.adminKey, body, headers: { 'Content-Type': 'application/json' } });

      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        count(value);
      }
      expect(answer.status, answer.text.slice(0, 300)).toBe(413);
      expect(isProblem(answer)).toBe(true);
      expect(newlines).toBe(SEED.pointsEach + 1); // the header and every row
      expect((await call(`${stack.apiUrl}/api/v1/users`, stack.adminKey)).json.users.map((u: { user_name: string }) => u.user_name)).not.toContain('padded');
      return `413 problem+json; the download completed with all ${SEED.pointsEach.toLocaleString('en')} rows`;
    });
  });

  it(`e. 1,000 API key creations by one user: at most ${API_KEYS_CAP} held, every one past the cap refused with a 4xx problem+json`, async () => {
    await report.runCase('e', '1,000 API key creations by one user (8 at a time)', ['MERIDIAN_MAX_API_KEYS_PER_USER'], async () => {
      const key = await stack.user('keyholder', []);
      const answers = await bounded(1000, 8, async () => {
        const a = await call(`${stack.apiUrl}/api/v1/api_keys`, key, { method: 'POST' });
        return { status: a.status, problem: isProblem(a), type: a.json?.type as string | undefined };
      });
      const { byStatus, badRefusals } = tally(answers);
      expect(badRefusals.slice(0, 3), byStatus).toEqual([]);
      const created = answers.filter((a) => a.status === 201).length;
      const held = (await call(`${stack.apiUrl}/api/v1/api_keys`, key)).json.api_keys.length as number;
      expect(held, byStatus).toBe(API_KEYS_CAP); // its first key (from the admin) and the rest of its own
      expect(created).toBe(API_KEYS_CAP - 1);
      return `${byStatus}; ${held} keys held`;
    });
  });

  it(`f. 10,000 empty files defined by one user: each refused, or refused past ${FILES_CAP}; at most ${FILES_CAP} held`, async () => {
    await report.runCase('f', '10,000 empty files defined by one user (64 at a time)', ['MERIDIAN_MAX_FILES_PER_USER'], async () => {
      const key = await stack.user('filer', []);
      const boundary = 'hostile-boundary-7d1f';
      const body = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="empty.txt"\r\nContent-Type: text/plain\r\n\r\n\r\n--${boundary}--\r\n`,
      );
      const accepted: string[] = [];
      const answers = await bounded(10_000, 64, async () => {
        const a = await send(`${stack.apiUrl}/api/v1/files`, { key, body, headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` } });
        if (a.status === 202) accepted.push(a.json.task_id as string);
        return { status: a.status, problem: isProblem(a), type: a.json?.type as string | undefined };
      });
      const { byStatus, badRefusals } = tally(answers);
      expect(badRefusals.slice(0, 3), byStatus).toEqual([]);
      expect(accepted.length, byStatus).toBeLessThanOrEqual(FILES_CAP);
      for (const taskId of accepted) await waitForTask(stack.apiUrl, key, taskId, 60_000);
      const held = (await call(`${stack.apiUrl}/api/v1/files?limit=1000`, key)).json.files_list.length as number;
      expect(held).toBeLessThanOrEqual(FILES_CAP);
      return `${byStatus}; ${held} files held`;
    });
  });

  it("g. 100 concurrent HEAD downloads of 10M rows: the GET's headers, promptly, and no download query runs", async () => {
    await report.runCase('g', '100 concurrent HEAD downloads of 10M rows by one user', ['MERIDIAN_MAX_DOWNLOADS_PER_USER'], async () => {
      const url = `${stack.apiUrl}/api/v1/metrics/download?${new URLSearchParams({ metrics: SEED.prefix, pattern: 'starts_with', max_rows: String(SEED.metrics * SEED.pointsEach) })}`;
      const headers = { Authorization: `Bearer ${writer}`, 'Accept-Encoding': 'identity' };
      const apiPid = stack.api.child.pid!;
      /** The download queries (they read `points`) this api process has running in ClickHouse now. */
      const runningDownloads = async () => {
        const rows = (
          await clickhouse(
            stack.settings,
            `SELECT query_id, port FROM system.processes WHERE query LIKE '%FROM points%' AND query NOT LIKE '%system.processes%' FORMAT JSONEachRow`,
          )
        )
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { query_id: string; port: number });
        const ports = localPortsOf(apiPid);
        return rows.filter((r) => ports.has(r.port)).map((r) => r.query_id);
      };

      // The GET, left unread: its query shows in system.processes (so the watch sees what it must), then it is cancelled.
      const aborter = new AbortController();
      const get = await withTimeout(fetch(url, { headers, signal: aborter.signal }), 30_000, 'the GET');
      expect(get.status).toBe(200);
      await waitFor("the GET's query in system.processes", async () => ((await runningDownloads()).length > 0 ? true : undefined), 20_000, 50);
      aborter.abort();
      await waitFor("the GET's query to be cancelled", async () => ((await runningDownloads()).length === 0 ? true : undefined), 20_000, 100);

      const seen = new Set<string>();
      let burstDone = false;
      const watch = (async () => {
        for (let after = 0; !burstDone || after < 20; after += burstDone ? 1 : 0) {
          for (const id of await runningDownloads()) seen.add(id);
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const t0 = performance.now();
      const heads = await Promise.all(
        Array.from({ length: 100 }, async () => {
          try {
            const res = await fetch(url, { method: 'HEAD', headers, signal: AbortSignal.timeout(20_000) });
            return { res, ms: performance.now() - t0 };
          } catch (error) {
            return { error: String(error), ms: performance.now() - t0 };
          }
        }),
      );
      burstDone = true;
      await watch;

      const unanswered = heads.filter((h) => 'error' in h).length;
      expect(unanswered, `HEADs without an answer within 20 s (download queries they ran: ${seen.size})`).toBe(0);
      expect([...seen], 'download queries run by the HEADs').toEqual([]);
      const same = ['content-type', 'content-disposition', 'content-encoding', 'vary', 'x-next-cursor', 'link'];
      const pick = (h: Headers) => Object.fromEntries(same.map((n) => [n, h.get(n)]));
      for (const h of heads) {
        const res = (h as { res: Response }).res;
        expect(res.status).toBe(200);
        expect(pick(res.headers)).toEqual(pick(get.headers));
      }
      const slowest = Math.max(...heads.map((h) => h.ms));
      expect(slowest).toBeLessThan(5000);
      return `100×200 with the GET's headers, all within ${slowest.toFixed(0)} ms; no download query in system.processes`;
    });
  });

  it(`h. a slow client trickling an upload, and one gone silent: the api cuts both once MERIDIAN_HTTP_IDLE_TIMEOUT_MS (${IDLE_MS} ms) has passed`, async () => {
    await report.runCase(
      'h',
      `slow clients on an upload: one trickling 20 bytes every 500 ms, one silent after its first bytes (api with MERIDIAN_HTTP_IDLE_TIMEOUT_MS=${IDLE_MS})`,
      ['MERIDIAN_HTTP_IDLE_TIMEOUT_MS'],
      async () => {
        const edge = await stack.startExtraApi({ MERIDIAN_HTTP_IDLE_TIMEOUT_MS: String(IDLE_MS) });
        try {
          const head = `POST /api/v1/metrics_file_upload?metric_name=hostile.slow HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${writer}\r\nContent-Type: text/csv\r\nContent-Length: 1000000\r\n\r\n`;
          const [trickle, silent] = await Promise.all([slowUpload(edge.url, head, { everyMs: 500 }), slowUpload(edge.url, head, { everyMs: null })]);
          // Never idle for the timeout, the trickle is cut for its rate once the timeout has passed; the silent one by the timeout.
          for (const [what, cut] of [
            ['the trickle', trickle],
            ['the silent client', silent],
          ] as const) {
            expect(cut.cutAfterMs, `${what} was never cut`).not.toBeNull();
            expect(cut.cutAfterMs!, `${what} cut before the idle timeout`).toBeGreaterThanOrEqual(IDLE_MS - 100);
            expect(cut.cutAfterMs!, `${what} cut late`).toBeLessThan(IDLE_MS + 5000);
          }
          expect(await stack.healthzMedianMs(edge.url)).toBeLessThan(1000);
          expect(edge.process.child.exitCode).toBeNull();
          const show = (c: Cut) => `${(c.cutAfterMs! / 1000).toFixed(1)} s${c.status ? ` (answered ${c.status})` : ' (no answer)'}`;
          return `trickle cut after ${show(trickle)}, silent client cut after ${show(silent)}; that api healthy`;
        } finally {
          await edge.process.stop();
        }
      },
    );
  });

  it('i. multipart uploads cut off before their closing boundary, and 64 MB uploads whose client goes away after 2 s: 400 or a quiet close, the same api process, nothing staged', async () => {
    await report.runCase(
      'i',
      'cut-off multipart bodies (no closing boundary) and clients aborting a 64 MB upload after 2 s, on both multipart routes and as a raw body',
      [],
      async () => {
        // A user of its own: the writer may be at the files cap after f.
        const cutter = await stack.user('cutter', [{ match: 'prefix', value: 'hostile.cut', access: 'rw' }]);
        const pid = stack.api.child.pid;
        const before = await staged();
        const part = Buffer.from('--cutcutcut\r\nContent-Disposition: form-data; name="file"; filename="points.csv"\r\nContent-Type: text/csv\r\n\r\n');
        const rows = Buffer.from('2024-01-01T00:00:00Z,1\n'.repeat(1000));
        const outcomes: string[] = [];
        for (const path of ['/api/v1/metrics_file_upload?metric_name=hostile.cut', '/api/v1/files']) {
          // The whole declared body arrives, but it ends inside the file part.
          const cut = Buffer.concat([part, rows]);
          const answer = await rawUpload(stack.apiUrl, multipartHead(path, cutter, cut.length), cut, { chunk: cut.length, everyMs: 0, abortAfterMs: null });
          expect(answer.status, answer.body).toBe(400);
          expect(answer.body).toMatch(/closing boundary/);
          expect(answer.apiPid).toBe(pid);
          // 64 MB declared, sent at about 10 MB/s, the socket destroyed after 2 s.
          const big = Buffer.concat([part, Buffer.alloc(64 * MiB - part.length, rows)]);
          const aborted = await rawUpload(stack.apiUrl, multipartHead(path, cutter, big.length), big, { chunk: MiB, everyMs: 100, abortAfterMs: 2000 });
          expect(stack.api.child.exitCode, stack.api.output().slice(-2000)).toBeNull();
          expect(aborted.apiPid).toBe(pid);
          outcomes.push(`${path.split('?')[0]}: cut-off body → ${answer.status}, aborted after 2 s → ${aborted.status ?? 'closed without answer'}`);
        }
        const rawHead = `POST /api/v1/metrics_file_upload?metric_name=hostile.cut HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${cutter}\r\nContent-Type: text/csv\r\nContent-Length: ${64 * MiB}\r\n\r\n`;
        const rawAborted = await rawUpload(stack.apiUrl, rawHead, Buffer.alloc(64 * MiB, rows), { chunk: MiB, everyMs: 100, abortAfterMs: 2000 });
        expect(rawAborted.apiPid).toBe(pid);
        outcomes.push(`raw body aborted after 2 s → ${rawAborted.status ?? 'closed without answer'}`);
        // Whatever reached storage is removed once each request has ended.
        // (Uploads of the other cases may still end and have theirs removed meanwhile.)
        const left = async () => [...(await staged())].filter((k) => !before.has(k));
        await waitFor('nothing left staged by the cut uploads', async () => ((await left()).length === 0 ? true : undefined), 30_000, 200);
        expect(stack.api.child.pid).toBe(pid);
        return `${outcomes.join('; ')}; api pid ${pid} alive, nothing staged`;
      },
    );
  });

  it('j. telemetry bombs, forged lengths, floods and labels past every bound: each a 4xx with a reason or a partial answer, from the same api process', async () => {
    await report.runCase(
      'j',
      'telemetry protocols: snappy and gzip bombs, a forged protobuf length, 100,000 series, a 10 MB line, labels at and past their bounds',
      ['MERIDIAN_PROTOCOL_MAX_BYTES', 'MERIDIAN_PROTOCOL_MAX_SERIES', 'MERIDIAN_PUSH_MAX_BYTES'],
      async () => {
        const pid = stack.api.child.pid!;
        const outcomes: string[] = [];
        const expectRefused = (label: string, answer: Answer, status: number, reason: RegExp) => {
          expect(answer.status, `${label}: ${answer.text.slice(0, 300)}`).toBe(status);
          expect(answer.text, label).toMatch(reason);
          outcomes.push(`${label} ${answer.status}`);
        };
        // A snappy block whose preamble declares 1 GiB, followed by a few bytes.
        const snappyBomb = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x04, 0x00, 0x61]);
        expectRefused(
          'snappy bomb',
          await send(`${stack.apiUrl}/api/v1/write`, {
            key: writer,
            body: snappyBomb,
            headers: { 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'snappy' },
          }),
          413,
          /bytes|larger|decompress/i,
        );
        const { gzip } = gzipBomb({ head: '{"resourceMetrics":[', block: Buffer.alloc(MiB, ' '), repeats: 1024, tail: ']}' });
        expectRefused(
          'gzip OTLP bomb (1 GiB)',
          await send(`${stack.apiUrl}/v1/metrics`, { key: writer, body: gzip, headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' } }),
          413,
          /bytes|larger/i,
        );
        // A WriteRequest whose first field claims 2 GiB of timeseries.
        const forged = compressSync(Buffer.from([0x0a, 0x80, 0x80, 0x80, 0x80, 0x08, 0x0a, 0x00]));
        expectRefused(
          'forged protobuf length',
          await send(`${stack.apiUrl}/api/v1/write`, {
            key: writer,
            body: forged,
            headers: { 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'snappy' },
          }),
          400,
          /length|truncat|malformed|protobuf/i,
        );
        const flood = gzipSync(Buffer.from(Array.from({ length: 100_000 }, (_, i) => `hostile_flood,host=h${i} v=1 1704067200000000000`).join('\n')));
        expectRefused(
          '100,000 series',
          await send(`${stack.apiUrl}/api/v2/write?precision=ns`, { key: writer, body: flood, headers: { 'Content-Encoding': 'gzip' } }),
          413,
          /series/i,
        );
        const longLine = gzipSync(Buffer.concat([Buffer.from('hostile_long,host=a v='), Buffer.alloc(10 * MiB, '1'), Buffer.from(' 1704067200000000000\n')]));
        expectRefused(
          'a 10 MB line',
          await send(`${stack.apiUrl}/api/v2/write?precision=ns`, { key: writer, body: longLine, headers: { 'Content-Encoding': 'gzip' } }),
          413,
          /bytes|larger/i,
        );
        // Labels: a label name at its bound, and a name at its bound (256 characters), are stored;
        // 33 labels, a label name one character longer, a name one character longer, refused by series.
        const name = ['__name__', 'hostile.labels'] as [string, string];
        const series: Array<Array<[string, string]>> = [
          [name, [`n${'x'.repeat(127)}`, 'y']],
          [name, ['v', 'y'.repeat(256 - 'hostile.labels{v=""}'.length)]],
          [name, ...Array.from({ length: 33 }, (_, i): [string, string] => [`l${i}`, 'v'])],
          [name, [`n${'x'.repeat(128)}`, 'y']],
          [name, ['v', 'y'.repeat(257 - 'hostile.labels{v=""}'.length)]],
        ];
        const mixed = remoteWriteBody(series.map((labels) => ({ labels, samples: [[Date.UTC(2024, 0, 1), 1]] })));
        const partial = await send(`${stack.apiUrl}/api/v1/write`, {
          key: writer,
          body: mixed,
          headers: { 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'snappy' },
        });
        expect(partial.status, partial.text).toBe(400);
        expect(partial.headers['x-prometheus-remote-write-samples-written']).toBe('2');
        expect(partial.text).toMatch(/3 of 5 samples refused/);
        outcomes.push('labels and name at their bounds stored, 3 series past them refused (400, partial)');
        expect(stack.api.child.pid).toBe(pid);
        return `${outcomes.join('; ')}; api pid ${pid} alive`;
      },
    );
  });
});
