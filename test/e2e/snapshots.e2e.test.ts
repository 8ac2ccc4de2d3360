import { randomBytes, randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsCodec, blobKeyOf, composeApiKey, foldAccounts, foldFiles, retentionKey, type AccountEvent, type FileEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { createProducer } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { listFiles } from '../support/files-reference.ts';
import { createPlatform, type Platform } from '../support/platform.ts';
import { createSnapshotStore } from '@meridian/storage';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { freePort } from '../support/ports.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

// Snapshots are written every 500 offsets (at most every 200 ms) so that a few thousand events
// leave several behind; a new api must then read only the tail after the newest one.
const EVERY = 500;
const settings = isolatedSettings({ MERIDIAN_SNAPSHOT_EVERY_EVENTS: String(EVERY), MERIDIAN_SNAPSHOT_MIN_INTERVAL_MS: '200' });
const accountCodec = createEventCodec<AccountEvent>();
const fileCodec = createEventCodec<FileEvent>();
const accountEvents: AccountEvent[] = [];
const fileEvents: FileEvent[] = [];
/** Offsets written per log: events, and on the files log a commit marker per transaction. */
const written = { accounts: 0, files: 0 };

let platform: Platform;
let producer: Producer;
let txProducer: Producer;
let fromZero: RunningApi;
let worker: Awaited<ReturnType<typeof startWorker>> | null = null;
let restarted: AppProcess | null = null;
const keys = new Map<string, string>();

/** Accounts events as the api writes them: plain sends keyed by user name (no transaction writes this topic). */
async function writeAccounts(events: AccountEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += 500) {
    const chunk = events.slice(i, i + 500);
    await producer.send({
      topic: platform.topics.accounts,
      acks: -1,
      messages: chunk.map((e) => ({
        key: 'user_name' in e ? e.user_name : retentionKey(e.match, e.value),
        value: accountCodec.encode(e),
        headers: { type: e.type },
      })),
    });
  }
  accountEvents.push(...events);
  written.accounts += events.length;
}

/** File events as the worker and the api write them; here in transactions of 100, as FileDefined is (markers take offsets too). */
async function writeFiles(events: FileEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += 100) {
    const tx = await txProducer.transaction();
    await tx.send({
      topic: platform.topics.files,
      acks: -1,
      messages: events.slice(i, i + 100).map((e) => ({ key: e.file_id, value: fileCodec.encode(e), headers: { type: e.type } })),
    });
    await tx.commit();
    written.files += Math.min(100, events.length - i) + 1;
  }
  fileEvents.push(...events);
}

function user(name: string, isAdmin = false): AccountEvent {
  const key = composeApiKey(randomBytes(8), randomBytes(32));
  keys.set(name, key.api_key);
  return { type: 'UserCreated', user_name: name, is_admin: isAdmin, key_id: key.key_id, secret_sha256: key.secret_sha256, at: Date.now(), actor: 'root' };
}

function file(owner: string, n: number): FileEvent {
  const sha256 = randomBytes(32);
  return {
    type: 'FileDefined',
    file_id: randomUUID(),
    task_id: randomUUID(),
    user_name: owner,
    at: 1_700_000_000_000 + n,
    file_name: `f${n}.csv`,
    description: `file ${n}`,
    content_type: 'text/csv',
    size: 10 + n,
    sha256,
    blob_key: blobKeyOf(sha256.toString('hex')),
  };
}

const ownerOf = (n: number) => `u${String(n % 10).padStart(4, '0')}`;

/**
 * Resolves once the log's end, as a read-committed client sees it, holds everything written: the
 * end Kafka reports can lag a transaction's commit marker for a moment.
 */
async function endOf(name: 'accounts' | 'files'): Promise<number> {
  const topic = platform.topics[name];
  return waitFor(`the ${name} log to end at ${written[name]}`, async () => {
    const end = (await platform.admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
    return end === written[name] ? end : undefined;
  });
}

/** Every page of GET /api/v1/files for a key. */
async function allFiles(url: string, key: string): Promise<unknown[]> {
  const out: unknown[] = [];
  let cursor: string | null = null;
  do {
    const res = await call(`${url}/api/v1/files?limit=1000${cursor === null ? '' : `&cursor=${cursor}`}`, key);
    expect(res.status).toBe(200);
    out.push(...res.json.files_list);
    cursor = res.json.next_cursor;
  } while (cursor !== null);
  return out;
}

beforeAll(async () => {
  platform = createPlatform(settings, createLogger({ name: 'test', level: 'silent' }), 'test');
  await platform.prepare();
  producer = await platform.producer();
  txProducer = createProducer(platform.kafka, { transactionalId: `${settings.MERIDIAN_TOPIC_PREFIX}snapshots-test` });
  await txProducer.connect();
  // Started on empty logs, before any snapshot exists: its fold is the one from offset 0.
  fromZero = await startApi(settings);
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([restarted?.stop(), worker?.close(), fromZero?.close(), txProducer?.disconnect()]);
  await platform?.close();
});

describe('a fold starts from the newest snapshot plus the tail of its log', () => {
  it('a new api process reads only the events after the snapshot and answers as the fold from offset 0 does', async () => {
    expect(fromZero.api.accounts.startup).toMatchObject({ snapshotPosition: null });

    // History: 3,001 users, 300 metric grants; 1,200 files, 300 shares, 400 deletions.
    await writeAccounts([user('root', true), ...Array.from({ length: 3000 }, (_, i) => user(`u${String(i).padStart(4, '0')}`))]);
    await writeAccounts(
      Array.from({ length: 300 }, (_, i) => ({
        type: 'MetricEntitlementGranted',
        user_name: ownerOf(i),
        match: 'prefix',
        value: `m${i}.`,
        access: 'r',
        at: Date.now(),
        actor: 'root',
      })),
    );
    const defined = Array.from({ length: 1200 }, (_, i) => file(ownerOf(i), i)) as Array<Extract<FileEvent, { type: 'FileDefined' }>>;
    await writeFiles(defined);
    await writeFiles(
      defined
        .slice(0, 300)
        .map((f, i) => ({ type: 'FileAccessGranted', file_id: f.file_id, user_name: ownerOf(i + 1), access: 'rw', at: Date.now(), actor: f.user_name })),
    );
    await writeFiles(defined.slice(200, 600).map((f) => ({ type: 'FileDeleted', file_id: f.file_id, at: Date.now(), actor: f.user_name })));

    // The worker folds the accounts log and writes snapshots as it goes (files: it folds none, the
    // files read model serves its blob collector too, so no process writes files snapshots).
    worker = await startWorker(settings);
    const stores = { accounts: createSnapshotStore(platform.storage, platform.topics.accounts) };
    for (const name of ['accounts'] as const) {
      const store = stores[name];
      const end = await endOf(name);
      await waitFor(
        `a ${name} snapshot within ${EVERY} offsets of the end (${end})`,
        async () => (((await store.positions())[0] ?? 0) > end - EVERY ? true : undefined),
        120_000,
        250,
      );
      expect((await store.positions()).length).toBeLessThanOrEqual(settings.MERIDIAN_SNAPSHOT_KEEP);
    }

    // The tail after the snapshots: more grants, a file shared, defined and deleted.
    await writeAccounts(
      Array.from({ length: 40 }, (_, i) => ({
        type: 'MetricEntitlementGranted',
        user_name: ownerOf(i),
        match: 'exact',
        value: `tail${i}`,
        access: 'rw',
        at: Date.now(),
        actor: 'root',
      })),
    );
    const late = Array.from({ length: 20 }, (_, i) => file(ownerOf(i), 5000 + i)) as Array<Extract<FileEvent, { type: 'FileDefined' }>>;
    await writeFiles([
      ...late,
      ...late.slice(0, 5).map((f): FileEvent => ({ type: 'FileDeleted', file_id: f.file_id, at: Date.now(), actor: f.user_name })),
      { type: 'FileAccessGranted', file_id: defined[700]!.file_id, user_name: 'u0009', access: 'r', at: Date.now(), actor: defined[700]!.user_name },
    ]);

    const newest = { accounts: (await stores.accounts.positions())[0]! };
    const ends = { accounts: await endOf('accounts') };

    // A new api process, as deployed.
    const [port, adminPort] = [await freePort(), await freePort()];
    restarted = startApp('api', settings, { MERIDIAN_API_PORT: String(port), MERIDIAN_ADMIN_PORT: String(adminPort) });
    const url = `http://127.0.0.1:${port}`;
    await waitFor('the new api to be ready', async () => ((await fetch(`${url}/readyz`).catch(() => null))?.status === 200 ? true : undefined), 120_000, 250);

    // Its start, as it logs it and as /metrics shows it.
    const starts = new Map(
      restarted
        .output()
        .split('\n')
        .filter((l) => l.includes('"fold caught up'))
        .map((l) => JSON.parse(l) as { topic: string; snapshot: number | null; events_read: number })
        .map((l) => [l.topic, l]),
    );
    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    // The api folds accounts only: files are the files read model's.
    for (const name of ['accounts'] as const) {
      const start = starts.get(platform.topics[name])!;
      expect(start, `${name} start logged`).toBeDefined();
      expect(start.snapshot, `${name} started from a snapshot`).not.toBeNull();
      expect(start.snapshot!).toBeGreaterThanOrEqual(newest[name]);
      // At most the offsets after its snapshot; far below the whole log.
      expect(start.events_read).toBeLessThanOrEqual(ends[name] - start.snapshot!);
      expect(start.events_read).toBeLessThan(ends[name] / 3);
      expect(metrics).toContain(`meridian_fold_start_events_read{fold="${name}"} ${start.events_read}`);
    }
    expect(accountEvents.length).toBeGreaterThan(3300);

    // The api that folded from offset 0 holds exactly the fold of every event written; the files
    // read model, once it covers the files log, lists exactly what the fold of every file event does.
    await fromZero.api.accounts.syncToEnd();
    expect(accountsCodec.toJSON(fromZero.api.accounts.state)).toEqual(accountsCodec.toJSON(foldAccounts(accountEvents)));
    expect(await fromZero.api.files.current()).toBe(true);
    const folded = listFiles(foldFiles(fileEvents), { user_name: 'root', is_admin: true }, { limit: 100_000 }).files.map(({ file }) => file.file_id);
    expect(((await allFiles(fromZero.url, keys.get('root')!)) as Array<{ file_id: string }>).map((f) => f.file_id)).toEqual(folded);

    // And the new one answers exactly as it does: users (keys, rules, file usage) and files, for an admin and for users.
    const root = keys.get('root')!;
    const users = await call(`${url}/api/v1/users`, root);
    expect(users.status).toBe(200);
    expect(users.json.users).toHaveLength(3001);
    expect(users.json).toEqual((await call(`${fromZero.url}/api/v1/users`, root)).json);
    for (const key of [root, keys.get('u0001')!, keys.get('u0009')!]) {
      const [mine, theirs] = [await allFiles(url, key), await allFiles(fromZero.url, key)];
      expect(mine.length).toBeGreaterThan(0);
      expect(mine).toEqual(theirs);
    }
    expect(await allFiles(url, root)).toHaveLength(1200 - 400 + 20 - 5);
  }, 300_000);
});
