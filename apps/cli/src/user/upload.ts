import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { parseTimestamp } from '@meridian/domain';
import { ApiError, type ApiClient } from './api-client.ts';
import { bar, formatBytes, type Progress } from './progress.ts';
import { getTask, waitForTask, type TaskView } from './tasks-wait.ts';

export type UploadOptions = {
  readonly metric: string | undefined;
  readonly onError: 'fail' | 'skip';
  readonly wait: boolean;
  readonly concurrency: number;
  /** Longest each task request waits for the task to end (MERIDIAN_CLI_TASK_WAIT_SECONDS). */
  readonly taskWaitSeconds: number;
  /** Ctrl-C: the upload under way stops, and uploadFiles rejects (no outcome is made up for it). */
  readonly signal?: AbortSignal | undefined;
};

/** What became of one file: its task as last seen, 'accepted' (--no-wait: not followed), or why the api refused it ('refused'). */
export type UploadOutcome = {
  file: string;
  task_id: string | null;
  status: TaskView['status'] | 'accepted' | 'refused';
  result: TaskView['result'];
  errors: TaskView['errors'];
  reason: string | null;
  /** The api already had this very upload (same file, metric and on_error): its task is an earlier one, and nothing new was stored. */
  already_uploaded: boolean;
};

/**
 * The Idempotency-Key of a file's upload: a hash of its content and of the parameters, so the
 * same file uploaded again the same way (a rerun after a network failure) is the same task and
 * stores nothing twice, while another metric or on_error is a new upload.
 */
export function idempotencyKey(contentSha256: string, metric: string | undefined, onError: string): string {
  return `meridian-cli-${createHash('sha256')
    .update(`${contentSha256}\n${metric ?? ''}\n${onError}`)
    .digest('hex')}`;
}

async function fingerprint(path: string): Promise<{ size: number; sha256: string; gzipped: boolean }> {
  const { size } = await stat(path);
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  const head = Buffer.alloc(2);
  const handle = await open(path, 'r');
  try {
    await handle.read(head, 0, 2, 0);
  } finally {
    await handle.close();
  }
  return { size, sha256: hash.digest('hex'), gzipped: head[0] === 0x1f && head[1] === 0x8b };
}

/**
 * The file as a request body, gzip-compressed as it is read (a file that already is gzip goes
 * as it is: the worker detects gzip by its magic bytes); `read` counts the file's bytes taken.
 */
function gzipBody(path: string, gzipped: boolean, read: (bytes: number) => void): ReadableStream {
  const source = createReadStream(path, { highWaterMark: 256 * 1024 });
  source.on('data', (chunk) => read(chunk.length));
  const out = gzipped ? source : pipeline(source, createGzip(), () => undefined);
  return Readable.toWeb(out) as ReadableStream;
}

/**
 * The api's clock when this request was sent, less a second: its Date header (whole seconds) less
 * the time the request took. A task the api had before then is an earlier upload's (the same
 * Idempotency-Key answers with the same task): a re-upload that stored nothing new. A rerun
 * within about a second of the first is not told apart.
 */
function serverTimeAtSend(res: Response, sentAt: number): number | null {
  const date = Date.parse(res.headers.get('Date') ?? '');
  return Number.isFinite(date) ? date - (Date.now() - sentAt) - 1000 : null;
}

function createdBefore(task: TaskView, at: number | null): boolean {
  const created = parseTimestamp(task.created_at);
  return at !== null && created.ok && created.ms < at;
}

async function uploadOne(client: ApiClient, path: string, options: UploadOptions, progress: Progress): Promise<UploadOutcome> {
  const name = basename(path);
  const line = progress.line(`${name}  hashing`);
  try {
    const file = await fingerprint(path);
    let sent = 0;
    const sentAt = Date.now();
    const res = await client.send('/api/v1/metrics_file_upload', {
      method: 'POST',
      query: { metric_name: options.metric, on_error: options.onError },
      headers: { 'Idempotency-Key': idempotencyKey(file.sha256, options.metric, options.onError) },
      idempotent: true,
      body: () => {
        sent = 0;
        return {
          contentType: 'application/octet-stream',
          body: gzipBody(path, file.gzipped, (n) => {
            sent += n;
            line.set(`${name}  sending ${bar(sent, file.size)} ${formatBytes(sent)}/${formatBytes(file.size)}`);
          }),
        };
      },
    });
    const { task_id } = (await res.json()) as { task_id: string };
    const startedAt = serverTimeAtSend(res, sentAt);
    line.set(`${name}  sent ${formatBytes(file.size)}, task ${task_id}`);
    if (!options.wait) {
      const task = await getTask(client, task_id);
      return { file: path, task_id, status: 'accepted', result: null, errors: [], reason: null, already_uploaded: createdBefore(task, startedAt) };
    }
    // The rows stay on the line once the task has succeeded: a task shorter than one wait shows only its end.
    const rows = (t: TaskView) =>
      `${bar(t.progress.rows_done, t.progress.rows_total)} ${t.progress.rows_done}${t.progress.rows_total === null ? '' : `/${t.progress.rows_total}`} rows`;
    const task = await waitForTask(client, task_id, options.taskWaitSeconds, (t) => line.set(`${name}  ${t.status} ${rows(t)}`));
    line.set(`${name}  ${task.status}${task.status === 'failed' ? `: ${task.reason ?? ''}` : ` ${rows(task)}`}`);
    return {
      file: path,
      task_id: task.task_id,
      status: task.status,
      result: task.result,
      errors: task.errors,
      reason: task.reason,
      already_uploaded: createdBefore(task, startedAt),
    };
  } catch (error) {
    if (options.signal?.aborted) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    line.set(`${name}  refused: ${reason}`);
    const errors =
      error instanceof ApiError
        ? (error.problem?.errors ?? []).map((e) => ({
            row: 0,
            column: String((e as { field?: string }).field ?? ''),
            reason: String((e as { reason?: string }).reason ?? ''),
          }))
        : [];
    return { file: path, task_id: null, status: 'refused', result: null, errors, reason, already_uploaded: false };
  }
}

/** Uploads the files, `concurrency` at a time, in the given order; one outcome per file. */
export async function uploadFiles(client: ApiClient, paths: readonly string[], options: UploadOptions, progress: Progress): Promise<UploadOutcome[]> {
  const outcomes: UploadOutcome[] = new Array(paths.length);
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const index = next++;
      outcomes[index] = await uploadOne(client, paths[index]!, options, progress);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, paths.length) }, worker));
  return outcomes;
}
