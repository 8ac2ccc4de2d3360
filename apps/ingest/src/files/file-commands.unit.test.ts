import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { loadSettings } from '@meridian/config';
import type { FileDefinitionRequested, TransactionalLog } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { describe, expect, it } from 'vitest';
import type { BlobStore } from '../blob-store.ts';
import type { CommandRun, TaskLog } from '../commands/handlers.ts';
import type { IngestDeps } from '../ingest-deps.ts';
import { claimsOfTask } from './blobs.ts';
import { startFileCommands } from './file-commands.ts';
import { fileCommandsOptions } from './options.ts';

const sha256 = createHash('sha256').update('abc').digest();
const cmd: FileDefinitionRequested = {
  type: 'FileDefinitionRequested',
  task_id: 'task-1',
  file_id: 'file-1',
  user_name: 'ada',
  at: 0,
  file_name: 'a.csv',
  description: '',
  content_type: 'text/csv',
  staged_object: 'staging/file-1',
  size: 3,
  sha256,
  enforce_schema: false,
};
const claims = claimsOfTask(sha256.toString('hex'), 'task-1');

/**
 * The file handler with storage unreachable (MinIO down: every call fails, but those named in
 * `up`, which work on a bucket holding the staged bytes) and a tasks log that records what it
 * writes; `steps` is the order of both. The worker's other parts are not used; its producer
 * cannot start a transaction.
 */
async function handlerWithStorageDown(up: ReadonlySet<'open' | 'size' | 'copy' | 'put'> = new Set()) {
  const steps: string[] = [];
  const keys = new Set([cmd.staged_object]);
  const call = <T>(what: string, key: string, work: () => Promise<T>) => {
    steps.push(`${what} ${key}`);
    return (up as ReadonlySet<string>).has(what) ? work() : Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
  };
  const blobs: BlobStore = {
    open: (key) => call('open', key, async () => Readable.from([Buffer.from('abc')])),
    size: (key) => call('size', key, async () => (keys.has(key) ? 3 : null)),
    copy: (from, to) => call('copy', from, async () => void keys.add(to)),
    put: (key) => call('put', key, async () => void keys.add(key)),
    remove: (key) => call('remove', key, async () => undefined),
    list: (prefix) => call('list', prefix, async () => []),
  };
  const tasks: TaskLog = {
    message: () => {
      throw new Error('not used');
    },
    send: async () => undefined,
    commitCommand: async () => undefined,
    fail: async (_producer, _at, taskId, failure) => void steps.push(`fail ${taskId}: ${failure.reason}`),
  };
  const ingest = {
    logger: createLogger({ name: 'test', level: 'silent' }),
    topics: { files: 'files', tasks: 'tasks' },
    log: { endOffsets: async () => new Map() },
    blobs,
    blobReferences: {},
    taskReadModel: { finishedAmong: async () => new Set() },
  } as unknown as IngestDeps;
  const options = fileCommandsOptions(loadSettings({ MERIDIAN_UPLOAD_ATTEMPTS: '1', MERIDIAN_BLOB_SWEEP_INTERVAL_MS: '3600000' }));
  const handler = await startFileCommands(ingest, options, tasks);
  const producer = { transaction: () => Promise.reject(new Error('the transaction could not start')) } as unknown as TransactionalLog;
  const run: CommandRun = { at: { topic: 'tasks', partition: 0, offset: 7 }, producer, heartbeat: async () => undefined, setAside: async () => undefined };
  /** The steps but the collector's own tries at start (it lists kept bytes first). */
  const mine = () => steps.filter((step) => !step.startsWith('list _blob-removals/'));
  return { mine, handler, run };
}

describe('the file handler when storage is down', () => {
  it('a refusal fails the task first and releases its claims best effort: it ends once, no redelivery and no second dead letter', async () => {
    const { mine, handler, run } = await handlerWithStorageDown();
    try {
      await handler.refuse(cmd, run, 'the command crashed its worker 3 times');
    } finally {
      await handler.stop();
    }
    expect(mine()[0]).toBe('fail task-1: the command crashed its worker 3 times');
    expect(mine()).toContain(`list ${claims}`); // every run's claim of the task
  });

  it('a definition that claimed its blob and failed to commit gives up without throwing when its claims cannot be removed: the task fails once', async () => {
    // The bucket reads and writes (the staged bytes are checked, the claim written, the bytes copied), but removes and lists nothing.
    const { mine, handler, run } = await handlerWithStorageDown(new Set(['open', 'size', 'copy', 'put']));
    try {
      await handler.run(cmd, run); // the commit cannot start; one attempt, then the task fails
    } finally {
      await handler.stop();
    }
    const steps = mine();
    const claimed = steps.findIndex((step) => step.startsWith(`put ${claims}`));
    const failed = steps.findIndex((step) => step.startsWith('fail'));
    expect(claimed).toBeGreaterThanOrEqual(0);
    expect(steps.filter((step) => step.startsWith('fail'))).toHaveLength(1);
    expect(steps.indexOf(`remove ${steps[claimed]!.slice('put '.length)}`)).toBeGreaterThan(claimed); // its own claim, when the commit failed
    expect(steps.indexOf(`list ${claims}`)).toBeGreaterThan(failed); // then every run's, once the task failed
  });
});
