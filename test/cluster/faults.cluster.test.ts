import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSettings } from '@meridian/config';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin } from '../support/accounts.ts';
import { call } from '../support/api.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';
import { clickhouse, clusterEndpoints, clusterNotReady, clusterSh, transactionCoordinator } from './cluster.ts';
import { Prober } from './prober.ts';

/**
 * The fault tier on the cluster (`make test-cluster`): one process of the topology killed with
 * SIGKILL during a large ingest, one case at a time, then started again. Uploads go in through
 * the api front (haproxy) with Idempotency-Keys, retried on 503 and on a cut connection as a
 * client would; a download and a file download are asked for over and over meanwhile. After
 * recovery every point accepted must be in ClickHouse exactly once, on both replicas. Beside the
 * files, small JSON uploads (pushes, decided in the api and written in shared transactions) go
 * in the same way, and are counted the same.
 *
 * Knobs (environment): CLUSTER_FAULT_POINTS (points per case in files, default 1 000 000),
 * CLUSTER_FAULT_UPLOADS (uploads per case, default 25), CLUSTER_FAULT_PUSHES (pushes of 1000
 * points per case, default 100), CLUSTER_FAULT_CASES (comma-separated
 * processes to kill, default all five), CLUSTER_FAULT_DOWN_S (seconds the process stays dead, 20).
 */

const POINTS = Number(process.env.CLUSTER_FAULT_POINTS ?? 1_000_000);
const UPLOADS = Number(process.env.CLUSTER_FAULT_UPLOADS ?? 25);
const PER_UPLOAD = Math.ceil(POINTS / UPLOADS);
const PUSHES = Number(process.env.CLUSTER_FAULT_PUSHES ?? 100);
const PER_PUSH = 1000;
/** Each push client's pause between pushes: the pushes span the kill, the outage and the restart. */
const PUSH_INTERVAL_MS = (2 * Number(process.env.CLUSTER_FAULT_DOWN_S ?? 20) * 1000 * 4) / Math.max(1, PUSHES);
const DOWN_MS = Number(process.env.CLUSTER_FAULT_DOWN_S ?? 20) * 1000;
/** Uploads posted at once, as several clients would. */
const CLIENTS = 4;
/** Generous on purpose: the machine is shared, and a replica down stalls ingest for its outage. */
const RECOVERY_MS = 30 * 60_000;

/** What each case kills, and when: once the ingest is under way (a share of the points stored), or mid-uploads for the front doors. */
const CASES = [
  { proc: 'kafka2', what: 'one Kafka broker', killWhen: 'stored' },
  // The broker coordinating the upload transactions of the tasks topic's partition 0 (kafkajs
  // sends EndTxn once: the ingest worker must replace its producer, TransactionalProducer).
  { proc: 'kafka-coordinator', what: 'the Kafka broker coordinating upload transactions', killWhen: 'stored' },
  { proc: 'ch1', what: 'one ClickHouse replica (the writer)', killWhen: 'stored' },
  { proc: 'minio3', what: 'one MinIO node', killWhen: 'accepted' },
  { proc: 'ingest1', what: 'one ingest worker', killWhen: 'stored' },
  { proc: 'api1', what: 'one api instance', killWhen: 'accepted' },
] as const;
const selected = (process.env.CLUSTER_FAULT_CASES ?? CASES.map((c) => c.proc).join(',')).split(',');

type Row = {
  proc: string;
  what: string;
  lost: number;
  doubled: number;
  tasks: string;
  downloadGap: number;
  downloadFailures: number;
  fileGap: number;
  fileFailures: number;
  uploadRetries: number;
  uploadServerErrors: number;
  recoveredS: number;
};

const settings = loadSettings({ ...process.env, LOG_LEVEL: 'silent' });
const { apiFront, replicas } = clusterEndpoints();
const db = settings.CLICKHOUSE_DATABASE;
const run = randomBytes(3).toString('hex');
const rows: Row[] = [];
let notReady: string | null = null;
let key = '';
const canary = { metric: '', body: '' };
let file = { id: '', sha256: '' };

beforeAll(async () => {
  notReady = await clusterNotReady();
  if (notReady !== null) return;
  key = await bootstrapAdmin(settings, `fault_${run}`);
  await waitFor(
    'the new admin key to work on both apis',
    async () => ((await call(`${apiFront}/api/v1/users`, key)).status === 200 ? true : undefined),
    60_000,
    200,
  );
  // What the probes ask for, stored before the cases: a metric's download and a file.
  canary.metric = `fault.${run}.canary`;
  const lines = Array.from({ length: 1000 }, (_, i) => `${formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000)},${i}`).join('\n');
  const { taskId, serverError } = await postUpload(canary.metric, `${lines}\n`, `${run}-canary`, 'file');
  expect(serverError, 'the canary upload answered a server error').toBeNull();
  expect((await waitForTask(apiFront, key, taskId!, 300_000)).status).toBe('succeeded');
  canary.body = await download(AbortSignal.timeout(60_000));
  expect(canary.body.split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(1000);
  const content = randomBytes(256 * 1024);
  const form = new FormData();
  form.append('file', new Blob([content]), 'probe.bin');
  const defined = await fetch(`${apiFront}/api/v1/file/new`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  expect(defined.status).toBe(202);
  const accepted = (await defined.json()) as { task_id: string; file_id: string };
  expect((await waitForTask(apiFront, key, accepted.task_id, 300_000)).status).toBe('succeeded');
  file = { id: accepted.file_id, sha256: createHash('sha256').update(content).digest('hex') };
}, 600_000);

afterAll(() => {
  if (rows.length === 0) return;
  const header = [
    'case',
    'killed',
    'lost',
    'doubled',
    'tasks',
    's without downloads',
    'download failures',
    's without files',
    'file failures',
    'upload retries',
    'upload 5xx',
    's to all succeeded',
  ];
  const table = [
    header,
    ...rows.map((r) =>
      [
        r.proc,
        r.what,
        r.lost,
        r.doubled,
        r.tasks,
        r.downloadGap.toFixed(1),
        r.downloadFailures,
        r.fileGap.toFixed(1),
        r.fileFailures,
        r.uploadRetries,
        r.uploadServerErrors,
        r.recoveredS.toFixed(0),
      ].map(String),
    ),
  ];
  const widths = header.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(
    `\nCluster fault tier: ${POINTS.toLocaleString('en')} points per case in ${UPLOADS} uploads, each process killed with SIGKILL for ${DOWN_MS / 1000} s\n` +
      `${line(table[0]!)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n${table.slice(1).map(line).join('\n')}\n`,
  );
});

describe(`the cluster loses and doubles nothing when one process is killed during a ${POINTS.toLocaleString('en')}-point ingest`, () => {
  for (const c of CASES.filter((x) => selected.includes(x.proc))) {
    it(
      `kill -9 ${c.proc} (${c.what})`,
      async (ctx) => {
        if (notReady !== null) throw new Error(`the cluster is not ready: ${notReady}`);
        ctx.onTestFailed(() =>
          console.log(`case ${c.proc} failed; the cluster's logs: ${process.env.MERIDIAN_CLUSTER_VAR ?? '~/.cache/meridian/cluster'}/log`),
        );
        await runCase(c);
      },
      RECOVERY_MS + 20 * 60_000,
    );
  }
});

async function runCase(c: (typeof CASES)[number]): Promise<void> {
  const prefix = `fault.${run}.${c.proc}.`;
  const survivor = c.proc === 'ch1' ? replicas[1]! : replicas[0]!;
  const downloads = new Prober(async (signal) => {
    if ((await download(signal)) !== canary.body) throw new Error('the canary download differs');
  });
  const files = new Prober(async (signal) => {
    const res = await fetch(`${apiFront}/api/v1/file/download/${file.id}`, { headers: { Authorization: `Bearer ${key}` }, signal });
    if (res.status !== 200) throw new Error(`file download ${res.status}`);
    if (
      createHash('sha256')
        .update(Buffer.from(await res.arrayBuffer()))
        .digest('hex') !== file.sha256
    )
      throw new Error('the file differs');
  });
  const stored = async () => Number(await clickhouse(survivor, db, `SELECT count() FROM points WHERE startsWith(metric_name, '${prefix}')`).catch(() => '0'));

  // The uploads: CLIENTS at a time, each retried under its Idempotency-Key until accepted.
  const taskIds = new Map<string, string>();
  let retries = 0;
  const serverErrors: string[] = [];
  let next = 0;
  let nextPush = 0;
  const pushing = Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let n = nextPush++; n < PUSHES; n = nextPush++) {
        const posted = await postUpload(`${prefix}p${n}`, pushBody(`${prefix}p${n}`, n), `${run}-${c.proc}-p${n}`, 'push');
        retries += posted.retries;
        if (posted.serverError !== null) serverErrors.push(posted.serverError);
        if (posted.taskId !== null) taskIds.set(`p${n}`, posted.taskId);
        await new Promise((r) => setTimeout(r, PUSH_INTERVAL_MS));
      }
    }),
  );
  const posting = Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let u = next++; u < UPLOADS; u = next++) {
        const posted = await postUpload(`${prefix}u${u}`, uploadBody(u), `${run}-${c.proc}-${u}`, 'file');
        retries += posted.retries;
        if (posted.serverError !== null) serverErrors.push(posted.serverError);
        if (posted.taskId !== null) taskIds.set(`u${u}`, posted.taskId);
      }
    }),
  );

  // The kill, while the case is under way; then the process stays dead DOWN_MS and starts again.
  await waitFor(
    `the ${c.proc} case to be under way`,
    async () => {
      const files = [...taskIds.keys()].filter((k) => k.startsWith('u')).length;
      if (c.killWhen === 'accepted') return files >= Math.ceil(UPLOADS / 3) ? true : undefined;
      return (await stored()) >= POINTS / 4 || (files === UPLOADS && (await stored()) > 0) ? true : undefined;
    },
    RECOVERY_MS,
    500,
  );
  const victim = c.proc === 'kafka-coordinator' ? await transactionCoordinator(`${settings.MERIDIAN_TOPIC_PREFIX}ingest-commands-p0`) : c.proc;
  const killedAt = Date.now();
  await clusterSh('kill', victim);
  await new Promise((r) => setTimeout(r, DOWN_MS));
  const restartAt = Date.now();
  await clusterSh('up', victim);

  // Recovery: every upload accepted, every accepted task succeeded.
  await Promise.all([posting, pushing]);
  const statuses = new Map<string, number>();
  const reasons: string[] = [];
  let accepted = 0;
  for (const [, id] of taskIds) {
    const task = await waitForTask(apiFront, key, id, RECOVERY_MS);
    statuses.set(task.status, (statuses.get(task.status) ?? 0) + 1);
    if (task.status !== 'succeeded') reasons.push(`${id}: ${task.reason}`);
    accepted += task.result?.points_accepted ?? 0;
  }
  const recoveredS = (Date.now() - killedAt) / 1000;
  // One more round of probes after recovery, then the figures.
  await new Promise((r) => setTimeout(r, 2000));
  await Promise.all([downloads.stop(), files.stop()]);

  // Lost and doubled, per upload, on each replica once it has fetched every part.
  const perReplica: Array<{ lost: number; doubled: number; catalogShort: number }> = [];
  for (const replica of replicas) {
    await clickhouse(replica, db, 'SYSTEM SYNC REPLICA points');
    const counted = await clickhouse(
      replica,
      db,
      `SELECT metric_name, count(), uniqExact(value) FROM points WHERE startsWith(metric_name, '${prefix}') GROUP BY metric_name FORMAT TSV`,
    );
    const byMetric = new Map(
      counted
        .split('\n')
        .filter(Boolean)
        .map((l) => {
          const [m, n, u] = l.split('\t');
          return [m!, { count: Number(n), unique: Number(u) }];
        }),
    );
    let lost = 0;
    let doubled = 0;
    const expected = [
      ...Array.from({ length: UPLOADS }, (_, u) => [`${prefix}u${u}`, pointsOf(u)] as const),
      ...Array.from({ length: PUSHES }, (_, n) => [`${prefix}p${n}`, PER_PUSH] as const),
    ];
    for (const [metric, points] of expected) {
      const got = byMetric.get(metric) ?? { count: 0, unique: 0 };
      lost += points - got.unique;
      doubled += got.count - got.unique;
    }
    const catalog = Number(
      await clickhouse(
        replica,
        db,
        `SELECT sum(n) FROM (SELECT countMerge(points) AS n FROM metric_catalog WHERE startsWith(metric_name, '${prefix}') GROUP BY metric_name)`,
      ),
    );
    perReplica.push({ lost, doubled, catalogShort: POINTS + PUSHES * PER_PUSH - catalog });
  }
  const worst = { lost: Math.max(...perReplica.map((r) => r.lost)), doubled: Math.max(...perReplica.map((r) => r.doubled)) };
  rows.push({
    proc: victim === c.proc ? c.proc : `${c.proc} (${victim})`,
    what: c.what,
    ...worst,
    tasks: [...statuses].map(([s, n]) => `${n} ${s}`).join(', '),
    downloadGap: downloads.secondsWithoutService(),
    downloadFailures: downloads.failures,
    fileGap: files.secondsWithoutService(),
    fileFailures: files.failures,
    uploadRetries: retries,
    uploadServerErrors: serverErrors.length,
    recoveredS,
  });
  if (downloads.failures + files.failures > 0) console.log(`${c.proc}: probe failures: ${[...downloads.reasons, ...files.reasons].join(' | ')}`);
  if (serverErrors.length > 0) console.log(`${c.proc}: uploads answered server errors: ${serverErrors.join(' | ')}`);

  expect(serverErrors, 'uploads answered a server error (5xx other than 502/503)').toEqual([]);
  expect(taskIds.size, 'every upload and push accepted').toBe(UPLOADS + PUSHES);
  expect(reasons, 'every accepted task succeeded').toEqual([]);
  expect(accepted, 'points accepted by the tasks').toBe(POINTS + PUSHES * PER_PUSH);
  expect(perReplica, 'lost and doubled points on each replica, and points missing from the catalog').toEqual(
    replicas.map(() => ({ lost: 0, doubled: 0, catalogShort: 0 })),
  );
  // Service went on from the survivors: right answers came while the process was dead.
  expect(downloads.answeredBetween(killedAt, restartAt), 'a download answered while the process was dead').toBe(true);
  expect(files.answeredBetween(killedAt, restartAt), 'a file downloaded while the process was dead').toBe(true);
}

/** Points of upload u: the last upload takes what is left. Values are unique across the case (u·PER_UPLOAD + i). */
function pointsOf(u: number): number {
  return Math.min(PER_UPLOAD, POINTS - u * PER_UPLOAD);
}

function uploadBody(u: number): string {
  const lines: string[] = [];
  for (let i = 0; i < pointsOf(u); i++) lines.push(`${formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000)},${u * PER_UPLOAD + i}`);
  return `${lines.join('\n')}\n`;
}

/** A push of PER_PUSH points; its values follow the files' (POINTS + n·PER_PUSH + i), unique across the case. */
function pushBody(metric: string, n: number): string {
  const values = Array.from({ length: PER_PUSH }, (_, i) => ({
    timestamp: formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000),
    value: POINTS + n * PER_PUSH + i,
  }));
  return JSON.stringify({ metric_name: metric, values });
}

/**
 * Statuses an upload is sent again for, with the same key: a cut connection (0; 502 is the front's
 * word for one, the api never answers it), 503 (a dependency down) and 429. Any other 5xx is a server
 * error: counted, and the upload given up, so a real 500 fails the case instead of passing unseen.
 */
const RETRIED = new Set([0, 429, 502, 503]);

/** Posts a file or a push through the front until it is accepted (taskId) or answered a server error (serverError). */
async function postUpload(
  metric: string,
  body: string,
  idempotencyKey: string,
  kind: 'file' | 'push',
): Promise<{ taskId: string | null; retries: number; serverError: string | null }> {
  const [url, type] =
    kind === 'file'
      ? [`${apiFront}/api/v1/metrics_file_upload?metric_name=${encodeURIComponent(metric)}`, 'text/csv']
      : [`${apiFront}/api/v1/metrics/upload`, 'application/json'];
  const deadline = Date.now() + RECOVERY_MS;
  for (let retries = 0; ; retries++) {
    if (Date.now() > deadline) throw new Error(`upload ${metric} not accepted within ${RECOVERY_MS} ms (${retries} attempts)`);
    let status = 0;
    let text = '';
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Idempotency-Key': idempotencyKey, 'Content-Type': type },
        body,
        signal: AbortSignal.timeout(120_000),
      });
      status = res.status;
      text = await res.text();
    } catch {
      status = 0; // the connection was cut (the api died under it): a client sends it again
    }
    if (status === 202) return { taskId: (JSON.parse(text) as { task_id: string }).task_id, retries, serverError: null };
    if (status >= 500 && !RETRIED.has(status)) return { taskId: null, retries, serverError: `${metric}: ${status} ${text.slice(0, 300)}` };
    if (!RETRIED.has(status)) throw new Error(`upload ${metric}: ${status} ${text}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function download(signal: AbortSignal): Promise<string> {
  const res = await fetch(`${apiFront}/api/v1/metrics/download?metrics=${encodeURIComponent(canary.metric)}&max_rows=100000`, {
    headers: { Authorization: `Bearer ${key}` },
    signal,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`download ${res.status}: ${text.slice(0, 200)}`);
  return text;
}
