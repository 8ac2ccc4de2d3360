import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STAGING_PREFIX } from '@meridian/storage';
import { HostileStack } from '../hostile/stack.ts';
import type { AppProcess } from '../support/processes.ts';
import { call } from '../support/api.ts';
import { incompleteUploads } from '../support/incomplete-uploads.ts';
import { waitForTask } from '../support/tasks.ts';
import { csvPoints, send, uploadFile } from '../support/uploads.ts';
import { waitFor } from '../support/wait.ts';
import { abortOffsets, cutOffsets, HEAD_STRIDE, HUGE_SPREAD, mutations, SMALL_BODY, SPREAD } from './mutations.ts';
import { field, filePart, multipartBytes, serialize, variantsOf, type Fixtures, type Variant } from './requests.ts';
import { ABORT_AFTER_MS, exchange, type Ending, type Outcome } from './wire.ts';

/**
 * The request fuzz tier: every operation of the OpenAPI document the api serves, sent as a
 * valid request and then (a) cut at many byte offsets (the client sends that much, then FIN),
 * (b) aborted at those offsets (that much, then RST), (c) mangled (flipped bytes, headers
 * dropped and doubled, broken framing, wrong content types, truncated and doubled multipart
 * delimiters, oversized heads and fields), over raw sockets against ONE api process. After
 * every batch of BATCH cases that process must still be the same and answer /healthz 200;
 * after each route a good upload by another user (the canary) must become downloadable.
 * No answer may be a 5xx other than 503, no connection may be left hanging, and uploads
 * cut or aborted must leave nothing staged in the bucket. Schemathesis (test/e2e/fuzz.e2e.test.ts)
 * fuzzes the values; this tier fuzzes the bytes and the stream.
 *
 * A crash is not hidden: the api is started again so the run goes on to find more, the case
 * that killed it is found by replaying the batch's cases one at a time, and its stack trace
 * and a reproduction are printed; the test then fails (restarts must be 0).
 *
 * Knobs for a closer look (none is set by `make test`): FUZZ_ROUTES (a pattern of routes),
 * FUZZ_SEED (the flipped bytes), FUZZ_BATCH (cases at once), FUZZ_CASES_FILE (every case and its
 * outcome as JSON lines).
 *
 * Settings of the processes, and why:
 *   MERIDIAN_RATE_LIMIT_PER_SECOND=0     thousands of requests by one user meet the routes, not the limiter
 *   MERIDIAN_HTTP_IDLE_TIMEOUT_MS=2000   a request left incomplete without FIN is closed in 2 s, not 60
 *   MERIDIAN_UPLOAD_BACKLOG_PER_USER=1000 mangled uploads that are still valid queue tasks; none waits for room
 *   MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER=64 the batch's uploads are never refused for being at once
 *   MERIDIAN_TASK_MAX_WAIT_SECONDS=1     a mangled ?wait answers within a second
 *   MERIDIAN_MAX_DOWNLOADS_PER_USER=64   the batch's downloads are never refused for being at once
 *   MERIDIAN_STORAGE_PART_BYTES=5 MiB    (S3's least) the 12 MiB variants are cut after parts are in the bucket
 */
const IDLE_MS = 2000;
const stack = new HostileStack({
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
  MERIDIAN_HTTP_IDLE_TIMEOUT_MS: String(IDLE_MS),
  MERIDIAN_UPLOAD_BACKLOG_PER_USER: '1000',
  MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: '64',
  MERIDIAN_TASK_MAX_WAIT_SECONDS: '1',
  MERIDIAN_MAX_DOWNLOADS_PER_USER: '64',
  MERIDIAN_STORAGE_PART_BYTES: String(5 * 1024 * 1024),
});
/** Cases sent at once; the checks run after each batch, and a crash's batch is replayed case by case. */
const BATCH = Number(process.env.FUZZ_BATCH ?? 6);
/** No answer and no close within this: the connection is left hanging (the idle timeout should have closed it). */
const CASE_TIMEOUT_MS = IDLE_MS + 4000;
/**
 * Crashes of one kind of case of one variant after which the rest of that kind is not sent:
 * cuts and aborts at further offsets of the same part crash the same way; mutations differ more.
 */
const CRASHES_PER_KIND = { cut: 2, abort: 2, mutation: 12 } as const;
const NOT_SENT: Outcome = { label: 'not sent', statuses: [], head: '', taskId: null };
const SEED = Number(process.env.FUZZ_SEED ?? 20261126);
/** FUZZ_ROUTES: a pattern of the routes to fuzz, to look at one route while fixing it (`make test` fuzzes all). */
const ONLY = new RegExp(process.env.FUZZ_ROUTES ?? '');
let routesNote = '';
const METRIC = 'fuzz.m';

type Kind = 'baseline' | 'cut' | 'abort' | 'mutation';
type Case = { readonly variant: Variant; readonly kind: Kind; readonly name: string; readonly bytes: Buffer; readonly ending: Ending };
type Crash = {
  readonly route: string;
  readonly at: number;
  readonly what: string;
  readonly suspects: string;
  culprit: string | null;
  repro: string | null;
  stack: string;
};
type RouteRow = { variants: string[]; cases: Record<Kind, number>; outcomes: Map<string, number>; restarts: number; canary: string };

const rows = new Map<string, RouteRow>();
const crashes: Crash[] = [];
/** Answers that must not be: a 5xx other than 503, or a connection neither answered nor closed. */
const bad: Array<() => string> = [];
/** Every api process of the run (a crash starts another), for their logs. */
const apis: AppProcess[] = [];
const unavailable: string[] = [];
const baselines: string[] = [];
const notSent: string[] = [];
const canaryFailures: string[] = [];
const accepted: Array<{ taskId: string; key: string }> = [];
let userKey = '';
let fixtures: Fixtures;
let variants: Variant[] = [];
let apiPid = 0;
let elapsedS = 0;

const describeCase = (c: Case) => `${c.variant.route} [${c.variant.name}] ${c.kind} ${c.name}`;

/** The bytes of a case, readable: printable ASCII as is, the rest escaped; long runs shortened; API keys not printed. */
function printable(bytes: Buffer): string {
  const text = bytes
    .toString('latin1')
    .replace(/Bearer mrd_[\w-]+/g, (k) => `Bearer <${k === `Bearer ${userKey}` ? "the fuzzing user's key" : 'a key'}>`)
    .replace(/[^\x20-\x7e]/g, (ch) => (ch === '\r' ? '\\r' : ch === '\n' ? '\\n' : `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`));
  return text.replace(/(.)\1{63,}/g, (run, ch: string) => `${ch}{×${run.length}}`).slice(0, 1500);
}

/** A crash's error line and first frame in the app's own code (or its dependencies'), to tell crashes apart. */
function signatureOf(c: Crash): string {
  const lines = c.stack.split('\n');
  const error = lines.find((l) => /^\s*(\w*Error\b|Error:|.*Unhandled)/.test(l))?.trim() ?? (c.what.startsWith('hung') ? 'hung' : 'no error printed');
  const frame = lines.find((l) => /\b(apps|libs|node_modules)\//.test(l))?.trim() ?? '';
  return `${error} ${frame}`.trim();
}

/** What the api logged about an answer's request (by its X-Request-Id): the error and where it came from. */
function logOf(head: string): string {
  const id = /\r\nX-Request-Id: *([\w-]+)/i.exec(head)?.[1];
  if (!id) return 'no request id';
  const line = apis.flatMap((p) => p.output().split('\n')).find((l) => l.includes(id));
  if (!line) return `nothing logged for ${id}`;
  try {
    const entry = JSON.parse(line) as { msg?: string; err?: { type?: string; message?: string; stack?: string } };
    return `${entry.msg ?? ''} ${entry.err?.stack ?? entry.err?.message ?? ''}`
      .split('\n')
      .slice(0, 8)
      .join(' | ')
      .replace(/\/\S*?\/(apps|libs|node_modules)\//g, '$1/');
  } catch {
    return line.slice(0, 600);
  }
}

function alive(): boolean {
  const child = stack.api.child;
  return child.exitCode === null && child.signalCode === null;
}

async function healthz(): Promise<string | null> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(`${stack.apiUrl}/healthz`, { signal: AbortSignal.timeout(3000) });
      await res.arrayBuffer();
      return res.status === 200 ? null : `/healthz answered ${res.status}`;
    } catch (error) {
      // A pooled connection the server closed is retried once on a new one.
      if (attempt >= 1) return `/healthz did not answer: ${String(error)}`;
    }
  }
}

/** Waits up to `ms` for the api to exit (a crash is often a moment after the request that caused it). */
async function exited(ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return !alive();
}

function stackTraceOf(output: string): string {
  const lines = output.trim().split('\n');
  // Node's report of an uncaught exception starts at the source line it quotes, or at the error.
  const start = lines.findLastIndex((l) => /^(file:\/\/|node:|\/)\S+:\d+$|Unhandled 'error' event|^\w*Error\b|uncaught/i.test(l));
  return lines
    .slice(Math.max(0, start < 0 ? lines.length - 25 : start - 1))
    .slice(0, 30)
    .join('\n')
    .replace(/\/\S*?\/(apps|libs|node_modules)\//g, '$1/');
}

async function run(c: Case): Promise<Outcome> {
  return exchange(Number(new URL(stack.apiUrl).port), c.bytes, c.ending, CASE_TIMEOUT_MS);
}

/** FUZZ_CASES_FILE: every case and its outcome as JSON lines, for a closer look at a run. */
const casesFile = process.env.FUZZ_CASES_FILE;

function record(c: Case, o: Outcome): void {
  if (casesFile)
    appendFileSync(casesFile, `${JSON.stringify({ case: describeCase(c), outcome: o.label, statuses: o.statuses, answer: o.head.slice(0, 300) })}\n`);
  const row = rows.get(c.variant.route)!;
  row.cases[c.kind]++;
  row.outcomes.set(o.label, (row.outcomes.get(o.label) ?? 0) + 1);
  for (const status of o.statuses) {
    // The api's log of it is looked up when the report is written: by then it has arrived.
    if (status >= 500 && status !== 503)
      bad.push(
        () =>
          `${status}: ${describeCase(c)}\n      answer: ${printable(Buffer.from(o.head, 'latin1')).slice(0, 400)}\n      request: ${printable(c.bytes)}\n      api log: ${logOf(o.head)}`,
      );
    if (status === 503) unavailable.push(`${describeCase(c)}: ${o.head.split('\r\n\r\n')[1]?.slice(0, 200) ?? ''}`);
  }
  if (o.label === 'timeout') bad.push(() => `timeout (no answer, no close in ${CASE_TIMEOUT_MS} ms): ${describeCase(c)}`);
  if (o.label === 'garbage') bad.push(() => `an answer that is not HTTP: ${describeCase(c)}: ${printable(Buffer.from(o.head, 'latin1')).slice(0, 200)}`);
  if (o.taskId) accepted.push({ taskId: o.taskId, key: keyOf(c.variant) });
}

let adminKeyOf: () => string;
const keyOf = (v: Variant) => (v.who === 'admin' ? adminKeyOf() : userKey);

/**
 * The api died or stopped answering after a batch: its stack trace kept, the api started
 * again, and the batch's cases (then the batch before it: a crash can come a moment late)
 * replayed one at a time on the new process until one kills it: that is the culprit.
 */
async function onUnhealthy(route: string, batch: Case[], previous: Case[], problem: string): Promise<void> {
  const died = await exited(3000);
  // Alive but not answering /healthz for seconds: hung. Its output is kept and it is killed.
  if (!died) await stack.api.stop('SIGKILL');
  const crash: Crash = {
    route,
    at: Date.now(),
    what: died ? 'exited' : `hung (${problem}), killed`,
    suspects: batch.map(describeCase).join('\n        '),
    culprit: null,
    repro: null,
    stack: stackTraceOf(stack.api.output()),
  };
  crashes.push(crash);
  rows.get(route)!.restarts++;
  await stack.restartDead();
  apiPid = stack.api.child.pid!;
  apis.push(stack.api);
  for (const c of [...batch, ...previous]) {
    await run(c);
    await new Promise((r) => setTimeout(r, 300));
    if (alive() && (await healthz()) === null) continue;
    if (!(await exited(3000))) await stack.api.stop('SIGKILL');
    crash.culprit = describeCase(c);
    crash.repro = `${c.ending.kind === 'whole' ? 'send all' : c.ending.kind === 'cut' ? `send the first ${c.ending.at} bytes, then FIN` : `send the first ${c.ending.at} bytes, wait ${ABORT_AFTER_MS} ms, then RST`} of ${c.bytes.length} bytes:\n        ${printable(c.bytes)}`;
    crash.stack = stackTraceOf(stack.api.output());
    await stack.restartDead();
    apiPid = stack.api.child.pid!;
    apis.push(stack.api);
    break;
  }
}

function casesOf(v: Variant): Case[] {
  const req = v.req(v.who === 'public' ? null : keyOf(v));
  const bytes = serialize(req);
  const out: Case[] = [];
  for (const at of cutOffsets(bytes, req, v.huge)) out.push({ variant: v, kind: 'cut', name: `at ${at}/${bytes.length}`, bytes, ending: { kind: 'cut', at } });
  for (const at of abortOffsets(bytes, req, v.huge))
    out.push({ variant: v, kind: 'abort', name: `at ${at}/${bytes.length}`, bytes, ending: { kind: 'abort', at } });
  if (v.huge) return out;
  let seed = SEED;
  for (const ch of `${v.route} ${v.name}`) seed = (Math.imul(seed, 31) + ch.charCodeAt(0)) >>> 0;
  for (const m of mutations(req, seed, {
    maxHeaderBytes: stack.settings.MERIDIAN_MAX_HEADER_BYTES,
    maxUrlBytes: stack.settings.MERIDIAN_MAX_URL_BYTES,
    port: Number(new URL(stack.apiUrl).port),
  })) {
    out.push({ variant: v, kind: 'mutation', name: m.name, bytes: m.bytes, ending: { kind: 'whole' } });
  }
  return out;
}

beforeAll(async () => {
  await stack.start();
  adminKeyOf = () => stack.adminKey;
  userKey = await stack.user('fuzzer', [
    { match: 'prefix', value: 'fuzz.', access: 'rw' },
    { match: 'prefix', value: 'fuzz_', access: 'rw' },
  ]);
  for (const name of ['fuzz-friend', 'fuzz-subject', 'fuzz-victim']) await stack.user(name, []);
  const upload = await uploadFile(stack.apiUrl, userKey, csvPoints(10), { metric_name: METRIC });
  expect(upload.status, upload.text).toBe(202);
  const taskId = upload.json.task_id as string;
  expect((await waitForTask(stack.apiUrl, userKey, taskId, 60_000)).status).toBe('succeeded');
  const defineFile = async (name: string) => {
    const boundary = 'fuzz-setup-boundary';
    const body = multipartBytes({
      boundary,
      parts: [field('file_description', 'a fixture of the fuzz tier'), filePart('file', name, 'text/csv', Buffer.from(csvPoints(20)))],
    });
    const res = await send(`${stack.apiUrl}/api/v1/files`, { key: userKey, body, headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` } });
    expect(res.status, res.text).toBe(202);
    expect((await waitForTask(stack.apiUrl, userKey, res.json.task_id as string, 60_000)).status).toBe('succeeded');
    return res.json.file_id as string;
  };
  const spare = await call(`${stack.apiUrl}/api/v1/api_keys`, userKey, { method: 'POST' });
  expect(spare.status, spare.text).toBe(201);
  fixtures = {
    host: new URL(stack.apiUrl).host,
    metric: METRIC,
    fileId: await defineFile('kept.csv'),
    doomedFileId: await defineFile('doomed.csv'),
    taskId,
    spareKeyId: spare.json.key_id as string,
    shareWith: 'fuzz-friend',
    subject: 'fuzz-subject',
    victim: 'fuzz-victim',
  };
  // The rule DELETE /api/v1/retention's valid request removes (its query: exact, fuzz_none.), so it is valid whichever route runs first.
  const rule = await call(`${stack.apiUrl}/api/v1/retention`, stack.adminKey, { method: 'PUT', body: { match: 'exact', value: 'fuzz_none.', days: 3650 } });
  expect(rule.status, rule.text).toBe(200);
  // Shared already, so unsharing is valid whichever route runs first.
  const shared = await call(`${stack.apiUrl}/api/v1/files/${fixtures.fileId}/entitlements/${fixtures.shareWith}`, userKey, {
    method: 'PUT',
    body: { access: 'r' },
  });
  expect(shared.status, shared.text).toBe(200);
  const doc = await call(`${stack.apiUrl}/api/v1/openapi.json`, null);
  expect(doc.status).toBe(200);
  variants = variantsOf(doc.json, fixtures);
  apiPid = stack.api.child.pid!;
  apis.push(stack.api);
});

afterAll(async () => {
  printReport();
  await stack.stop();
});

describe('every route of the OpenAPI document, cut, aborted and mangled at the byte level', () => {
  it('the same api process answers /healthz after every case; no 5xx but 503, no hanging connection, no restart', async () => {
    const t0 = performance.now();
    const port = Number(new URL(stack.apiUrl).port);
    const documented = [...new Set(variants.map((v) => v.route))];
    const routes = documented.filter((r) => ONLY.test(r));
    routesNote =
      routes.length === documented.length
        ? `all ${routes.length} routes of the document`
        : `ONLY ${routes.length} of the document's ${documented.length} routes (FUZZ_ROUTES=${ONLY.source})`;
    for (const route of routes) {
      const row: RouteRow = { variants: [], cases: { baseline: 0, cut: 0, abort: 0, mutation: 0 }, outcomes: new Map(), restarts: 0, canary: '' };
      rows.set(route, row);
      const ingestBefore = stack.ingest;
      for (const v of variants.filter((x) => x.route === route)) {
        // The valid request first: it must succeed, else fuzzing it would test nothing. A 403
        // for the fuzzing user, or the 404 "no route" an admin route answers others, means the
        // route is for admins: it is sent with the admin key.
        if (v.who === 'user') {
          const probe = await exchange(port, serialize(v.req(userKey)), { kind: 'whole' }, CASE_TIMEOUT_MS);
          const forAdmins = probe.label === '403' || (probe.label === '404' && probe.head.includes('no route for'));
          if (forAdmins) v.who = 'admin';
          else record({ variant: v, kind: 'baseline', name: 'valid request', bytes: serialize(v.req(userKey)), ending: { kind: 'whole' } }, probe);
          if (!forAdmins && !/^2\d\d$/.test(probe.label))
            baselines.push(`${route} [${v.name}]: ${probe.label} ${probe.head.split('\r\n\r\n')[1]?.slice(0, 300) ?? ''}`);
        }
        if (v.who !== 'user') {
          const bytes = serialize(v.req(v.who === 'admin' ? stack.adminKey : null));
          const base = await exchange(port, bytes, { kind: 'whole' }, CASE_TIMEOUT_MS);
          record({ variant: v, kind: 'baseline', name: 'valid request', bytes, ending: { kind: 'whole' } }, base);
          if (!/^2\d\d$/.test(base.label)) baselines.push(`${route} [${v.name}]: ${base.label} ${base.head.split('\r\n\r\n')[1]?.slice(0, 300) ?? ''}`);
        }
        row.variants.push(`${v.name}${v.who === 'admin' ? ' (admin key)' : v.who === 'public' ? ' (no key)' : ''}${v.huge ? ' (cuts and aborts only)' : ''}`);

        const all = casesOf(v);
        for (const kind of ['cut', 'abort', 'mutation'] as const) {
          const cases = all.filter((c) => c.kind === kind);
          let previous: Case[] = [];
          let crashed = 0;
          for (let i = 0; i < cases.length; i += BATCH) {
            // A kind of case that crashed the api CRASHES_PER_KIND times already would crash it on
            // and on (every offset in a file part), each crash a restart of seconds: the rest are
            // counted as not sent, named in the report, and the test fails on the crashes anyway.
            if (crashed >= CRASHES_PER_KIND[kind]) {
              for (const c of cases.slice(i)) record(c, NOT_SENT);
              notSent.push(`${v.route} [${v.name}] ${kind}: ${cases.length - i} of ${cases.length} not sent after ${crashed} crashes`);
              break;
            }
            const batch = cases.slice(i, i + BATCH);
            const outcomes = await Promise.all(batch.map(run));
            batch.forEach((c, k) => record(c, outcomes[k]!));
            const problem = !alive() || stack.api.child.pid !== apiPid ? 'the api process died' : await healthz();
            if (problem !== null) {
              await onUnhealthy(route, batch, previous, problem);
              crashed++;
            }
            previous = batch;
          }
        }
      }
      // Another user's good upload still becomes downloadable (and /healthz is fast, the ingest process the same).
      const checks = await stack.checkAfter(ingestBefore);
      row.canary = checks.canaryMs === null ? 'NO' : `${(checks.canaryMs / 1000).toFixed(1)} s`;
      if (checks.failures.length > 0) canaryFailures.push(`${route}: ${checks.failures.join('; ')}`);
      process.stderr.write(
        `fuzz: ${route}: ${Object.values(row.cases).reduce((a, b) => a + b, 0)} cases, ${((performance.now() - t0) / 1000).toFixed(0)} s into the run\n`,
      );
      if (stack.api.child.pid !== apiPid) {
        // checkAfter started a dead api again: a crash its own checks found.
        row.restarts++;
        apiPid = stack.api.child.pid!;
        apis.push(stack.api);
      }
    }
    elapsedS = (performance.now() - t0) / 1000;

    expect(
      crashes.map((c) => `${c.culprit ?? `one of: ${c.suspects}`}\n${c.stack}`),
      'api crashes and hangs (each one a restart)',
    ).toEqual([]);
    expect(
      bad.map((b) => b()),
      'answers that must not be',
    ).toEqual([]);
    expect(notSent, 'cases not sent (after repeated crashes)').toEqual([]);
    expect(baselines, 'valid requests that did not succeed').toEqual([]);
    expect(canaryFailures, 'the canary after each route').toEqual([]);
    expect(
      [...rows.values()].reduce((n, r) => n + r.restarts, 0),
      'restarts',
    ).toBe(0);
  });

  it('every accepted upload ends, and nothing cut or aborted is left staged in the bucket', async () => {
    for (const { taskId, key } of accepted) await waitForTask(stack.apiUrl, key, taskId, 120_000);
    const staged = async () => {
      const found: string[] = [];
      for await (const o of stack.storage.client.listObjectsV2(stack.storage.bucket, STAGING_PREFIX, true)) {
        const { name, size, lastModified } = o as { name: string; size: number; lastModified: Date };
        // An api that crashed while staging leaves what it staged: named, as it is no fault of the cleanup.
        const crash = crashes.find((c) => c.at >= lastModified.getTime() - 1000 && c.at <= lastModified.getTime() + 10_000);
        found.push(
          `object ${name} (${size} bytes, ${lastModified.toISOString()}${crash ? `; the api crashed ${((crash.at - lastModified.getTime()) / 1000).toFixed(1)} s later` : ''})`,
        );
      }
      for (const u of await incompleteUploads(stack.storage.client, stack.storage.bucket, STAGING_PREFIX)) found.push(`unfinished multipart upload ${u.key}`);
      return found;
    };
    // Cleanup of a refused upload runs after its answer: give it a moment to settle.
    let left: string[] = [];
    await waitFor(
      'the staging prefix to be empty',
      async () => {
        left = await staged();
        return left.length === 0 ? true : undefined;
      },
      20_000,
      500,
    ).catch(() => undefined);
    expect(left, `left under ${STAGING_PREFIX} after ${accepted.length} accepted uploads ended`).toEqual([]);
  });

  it('at the end the same api answers, and a good upload by another user becomes downloadable', async () => {
    const checks = await stack.checkAfter(stack.ingest);
    expect(checks.failures).toEqual([]);
    expect(stack.api.child.pid).toBe(apiPid);
  });

  it('no case left a promise rejection that nothing handled (the api logs and counts each one)', async () => {
    const metrics = await (await fetch(`${stack.apiUrl}/metrics`)).text();
    const line = metrics.split('\n').find((l) => l.startsWith('meridian_unhandled_rejections_total '));
    expect(line, 'the api exposes meridian_unhandled_rejections_total').toBeDefined();
    expect(
      Number(line!.split(' ')[1]),
      stack.api
        .output()
        .split('\n')
        .filter((l) => l.includes('nothing handled'))
        .slice(0, 3)
        .join('\n'),
    ).toBe(0);
  });
});

function printReport(): void {
  const kinds: Kind[] = ['baseline', 'cut', 'abort', 'mutation'];
  const lines: string[] = [];
  const total = { cases: 0, restarts: 0 };
  const header = ['route', 'cases (base/cut/abort/mut)', 'outcomes by status', 'restarts', 'canary'];
  const table = [...rows].map(([route, r]) => {
    const n = kinds.reduce((s, k) => s + r.cases[k], 0);
    total.cases += n;
    total.restarts += r.restarts;
    const outcomes = [...r.outcomes]
      .sort((a, b) => b[1] - a[1])
      .map(([label, count]) => `${label}×${count}`)
      .join(' ');
    return [route, `${n} (${kinds.map((k) => r.cases[k]).join('/')})`, outcomes, String(r.restarts), r.canary];
  });
  const widths = header.map((h, i) => Math.min(i === 2 ? 70 : 60, Math.max(h.length, ...table.map((row) => row[i]!.length))));
  const fmt = (row: string[]) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ');
  lines.push(
    `Request fuzz tier, ${routesNote}: ${total.cases} cases in ${elapsedS.toFixed(0)} s, ${BATCH} at a time, seed ${SEED}; head cut every ${HEAD_STRIDE} bytes and around each line end, bodies ≤ ${SMALL_BODY} bytes at every byte, larger at ${SPREAD + 1} spread offsets and around each multipart delimiter, 12 MiB ones at ${HUGE_SPREAD} and around each 5 MiB storage part; aborts wait ${ABORT_AFTER_MS} ms before the RST`,
  );
  lines.push(
    `Outcomes: the status of the answer; closed: the server closed without one; aborted: the client reset before one came; timeout: neither answer nor close in ${CASE_TIMEOUT_MS / 1000} s; not sent: skipped after repeated crashes (named below). Restarts must be 0.`,
  );
  lines.push(fmt(header), widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of table) lines.push(fmt(row));
  lines.push(
    `${rows.size} routes, ${total.cases} cases, ${total.restarts} restarts`,
    '',
    'Variants fuzzed per route (each: its valid request, cuts, aborts and mutations):',
  );
  for (const [route, r] of rows) lines.push(`  ${route}: ${r.variants.join('; ')}`);
  if (unavailable.length > 0) lines.push('', `503 answers (${unavailable.length}):`, ...unavailable.slice(0, 20).map((u) => `  ${u}`));
  if (crashes.length > 0) {
    // One entry per distinct failure (its error line and first frame of our code), with every case it took.
    const groups = new Map<string, Crash[]>();
    for (const c of crashes) groups.set(signatureOf(c), [...(groups.get(signatureOf(c)) ?? []), c]);
    lines.push('', `API CRASHES AND HANGS: ${crashes.length} restarts, ${groups.size} distinct:`);
    for (const [signature, group] of groups) {
      const first = group.find((c) => c.culprit) ?? group[0]!;
      lines.push(`  ${signature} — ${group.length} restart(s); the api ${first.what}`);
      lines.push(
        `    cases that did it: ${group
          .map((c) => c.culprit ?? `one of [${c.suspects.replace(/\s+/g, ' ')}]`)
          .join('; ')
          .slice(0, 3000)}`,
      );
      if (first.repro) lines.push(`    reproduction (${first.culprit}): ${first.repro}`);
      lines.push(
        `    api output:\n${first.stack
          .split('\n')
          .map((l) => `      ${l}`)
          .join('\n')}`,
      );
    }
  }
  if (notSent.length > 0) lines.push('', 'NOT SENT (after repeated crashes of the same kind):', ...notSent.map((n) => `  ${n}`));
  if (bad.length > 0) lines.push('', `ANSWERS THAT MUST NOT BE (${bad.length}):`, ...bad.slice(0, 40).map((b) => `  ${b()}`));
  if (baselines.length > 0) lines.push('', 'VALID REQUESTS THAT DID NOT SUCCEED:', ...baselines.map((b) => `  ${b}`));
  if (canaryFailures.length > 0) lines.push('', 'CANARY FAILURES:', ...canaryFailures.map((b) => `  ${b}`));
  console.log(`\n${lines.join('\n')}\n`);
}
