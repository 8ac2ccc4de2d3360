import { createHash } from 'node:crypto';
import { loadSettings } from '@meridian/config';
import type { FileDefinitionRequested, TransactionalLog } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { describe, expect, it } from 'vitest';
import type { BlobStore } from '../blob-store.ts';
import type { CommandRun, TaskLog } from '../commands/handlers.ts';
import type { IngestDeps } from '../ingest-deps.ts';
import { claimKeyOf } from './blobs.ts';
import { startFileCommands } from './file-commands.ts';

const sha256 = createHash('sha256').update('abc').digest();
const cmd: FileDefinitionRequested = {
  type: 'FileDefinitionRequested', task_id: 'task-1', file_id: 'file-1', user_name: 'ada', at: 0, file_name: 'a.csv', description: '',
  content_type: 'text/csv', staged_object: 'staging/file-1', size: 3, sha256, enforce_schema: false,
};
const claim = claimKeyOf(sha256.toString('hex'), 'task-1');

/**
 * The file handler with storage unreachable (MinIO down: every call fails) and a tasks log that
 * records what it writes; `steps` is the order of both. The worker's other parts are not used.
 */
async function handlerWithStorageDown() {
  const steps: string[] = [];
  const down = (what: string) => async (key: string) => {
    steps.push(`${what} ${key}`);
    throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  };
  const blobs: BlobStore = {
    open: down('open'), size: down('size'), remove: down('remove'), list: down('list'),
    copy: (from) => down('copy')(from), put: (key) => down('put')(key),
  };
  const tasks: TaskLog = {
    message: () => { throw new Error('not used'); },
    send: async () => undefined,
    commitCommand: async () => undefined,
    fail: async (_producer, _at, taskId, failure) => void steps.push(`fail ${taskId}: ${failure.reason}`),
  };
  const ingest = {
    settings: loadSettings({ MERIDIAN_UPLOAD_ATTEMPTS: '1', MERIDIAN_BLOB_SWEEP_INTERVAL_MS: '3600000' }),
    logger: createLogger({ name: 'test', level: 'silent' }),
    topics: { files: 'files', tasks: 'tasks' },
    log: { endOffsets: async () => new Map() },
    blobs,
    blobReferences: {},
    taskReadModel: { finishedAmong: async () => new Set() },
  } as unknown as IngestDeps;
  const handler = await startFileCommands(ingest, tasks);
  const run: CommandRun = { at: { topic: 'tasks', partition: 0, offset: 7 }, producer: {} as TransactionalLog, heartbeat: async () => undefined, setAside: async () => undefined };
  return { steps, handler, run };
}

describe('the file handler when storage is down', () => {
  it('a refusal fails the task first and releases the claim best effort: it ends once, no redelivery and no second dead letter', async () => {
    const { steps, handler, run } = await handlerWithStorageDown();
    try {
      await handler.refuse(cmd, run, 'the command crashed its worker 3 times');
    } finally {
      await handler.stop();
    }
    const mine = steps.filter((s) => !s.startsWith('list')); // the collector's own tries at start
    expect(mine[0]).toBe('fail task-1: the command crashed its worker 3 times');
    expect(mine).toContain(`remove ${claim}`);
  });

  it('a definition that fails gives up without throwing when its claim cannot be removed: the task fails once', async () => {
    const { steps, handler, run } = await handlerWithStorageDown();
    try {
      await handler.run(cmd, run); // the staged bytes cannot be read; one attempt, then the task fails
    } finally {
      await handler.stop();
    }
    const mine = steps.filter((s) => !s.startsWith('list'));
    expect(mine.filter((s) => s.startsWith('fail'))).toHaveLength(1);
    expect(mine.indexOf(`remove ${claim}`)).toBeGreaterThan(mine.findIndex((s) => s.startsWith('fail')));
  });
});
