import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Settings } from '@meridian/config';
import { apiClient, type ApiClient } from './api-client.ts';
import { resolveConnection } from './config.ts';
import { download, resumeStatePath } from './download.ts';
import { getFile, listFiles, putFile, shareFile } from './files.ts';
import { rethrowIfInterrupted } from './interrupt.ts';
import { partialPath } from './output-file.ts';
import { Progress } from './progress.ts';
import { getTask, rowErrorLines, type TaskView } from './tasks-wait.ts';
import { uploadFiles } from './upload.ts';

export const userUsage = `user commands (HTTP to the api with an API key):
  meridian upload FILE... [--metric NAME] [--on-error fail|skip] [--no-wait] [--json]
                          upload metric files (gzip on the wire), wait for their tasks
  meridian download --metrics X [--pattern P] [--from T] [--to T] [--format csv|json]
                          [--latest-only] [-o FILE] [--force] [--resume] [--page-rows N] [--json]
                          download points, every page into one file; --resume goes on
                          from FILE.meridian-resume after an interruption
  meridian tasks [TASK_ID] [--watch] [--json]      your tasks (or one), --watch refreshes
  meridian files ls [--name-contains T] [--json]   files you may see
  meridian files get FILE_ID [-o FILE|-] [--force] download a file (default: its own name)
  meridian files put FILE [--description D] [--json]   define a file
  meridian files share FILE_ID USER (--access r|rw | --revoke)
  an existing output file is refused unless --force; it is replaced only once the download is complete
  every user command takes --url and --api-key; else MERIDIAN_URL and MERIDIAN_API_KEY;
  else "url" and "api_key" in $XDG_CONFIG_HOME/meridian/config.json (~/.config/meridian/config.json)`;

export const USER_COMMANDS = new Set(['upload', 'download', 'tasks', 'files']);

export class UserUsageError extends Error {}

/** What a user command needs from its process: given by main, the only reader of env and argv. */
export type UserIo = {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly settings: Settings;
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WriteStream;
  /** Aborted by Ctrl-C (SIGINT) or SIGTERM: the command tidies up and throws Interrupted. */
  readonly signal?: AbortSignal;
};

const common = { url: { type: 'string' }, 'api-key': { type: 'string' }, json: { type: 'boolean' } } as const;

function parse<O extends ParseArgsConfig['options']>(args: string[], options: O) {
  try {
    return parseArgs({ args, options: { ...common, ...options }, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UserUsageError((error as Error).message);
  }
}

async function clientFor(values: { url?: unknown; 'api-key'?: unknown }, io: UserIo): Promise<ApiClient> {
  const connection = await resolveConnection({ url: values.url as string | undefined, api_key: values['api-key'] as string | undefined }, io.env);
  return apiClient(connection, io.settings.MERIDIAN_CLI_RETRIES, io.signal);
}

const progressFor = (io: UserIo, json: boolean | undefined) => new Progress(io.stderr.isTTY && !json ? io.stderr : null);
const print = (io: UserIo, text: string) => io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);

/** Runs a user command; returns the exit code (0 done, 1 a task failed or the api refused). */
export async function runUserCommand(argv: readonly string[], io: UserIo): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'upload': return upload(args, io);
    case 'download': return downloadCommand(args, io);
    case 'tasks': return tasks(args, io);
    case 'files': return files(args, io);
    default: throw new UserUsageError(`unknown command: ${command}`);
  }
}

async function upload(args: string[], io: UserIo): Promise<number> {
  const { values, positionals } = parse(args, { metric: { type: 'string' }, 'on-error': { type: 'string' }, 'no-wait': { type: 'boolean' } });
  if (positionals.length === 0) throw new UserUsageError('upload needs at least one file');
  const onError = values['on-error'] ?? 'fail';
  if (onError !== 'fail' && onError !== 'skip') throw new UserUsageError('--on-error is fail or skip');
  const client = await clientFor(values, io);
  const progress = progressFor(io, values.json);
  const outcomes = await uploadFiles(client, positionals, {
    metric: values.metric,
    onError,
    wait: !values['no-wait'],
    concurrency: io.settings.MERIDIAN_CLI_UPLOADS_AT_ONCE,
    taskWaitSeconds: io.settings.MERIDIAN_CLI_TASK_WAIT_SECONDS,
  }, progress);
  progress.stop();
  const bad = outcomes.filter((o) => o.status === 'failed' || o.status === 'refused');
  if (values.json) print(io, JSON.stringify(outcomes, null, 2));
  else {
    for (const o of outcomes) {
      const result = o.result as { points_accepted?: number; rows_rejected?: number } | null;
      const detail = o.status === 'succeeded' && result ? `: ${result.points_accepted} points stored, ${result.rows_rejected} rows rejected` : o.reason ? `: ${o.reason}` : '';
      print(io, `${o.file}  ${o.status}${detail}${o.task_id ? `  (task ${o.task_id})` : ''}`);
    }
    for (const o of bad) if (o.errors.length > 0) io.stderr.write(`${o.file}: ${o.status === 'refused' ? 'refused' : 'row errors'}\n${rowErrorLines(o).join('\n')}\n`);
    // on_error=skip: the stored file still had rows rejected; show them too.
    for (const o of outcomes) if (o.status === 'succeeded' && o.errors.length > 0) io.stderr.write(`${o.file}: rows rejected\n${rowErrorLines(o).join('\n')}\n`);
  }
  return bad.length > 0 ? 1 : 0;
}

async function downloadCommand(args: string[], io: UserIo): Promise<number> {
  const { values, positionals } = parse(args, {
    metrics: { type: 'string' }, pattern: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' },
    format: { type: 'string' }, 'latest-only': { type: 'boolean' }, output: { type: 'string', short: 'o' },
    force: { type: 'boolean' }, resume: { type: 'boolean' }, 'page-rows': { type: 'string' },
  });
  if (positionals.length > 0) throw new UserUsageError(`download takes no positional arguments: ${positionals.join(' ')}`);
  if (!values.metrics) throw new UserUsageError('download needs --metrics');
  const format = values.format ?? 'csv';
  if (format !== 'csv' && format !== 'json') throw new UserUsageError('--format is csv or json');
  const output = values.output === undefined || values.output === '-' ? null : values.output;
  if (values.resume && output === null) throw new UserUsageError('--resume needs -o FILE (the resume state is kept beside it)');
  if (values.json && output === null) throw new UserUsageError('--json needs -o FILE (stdout carries the summary)');
  const pageRows = values['page-rows'] === undefined ? io.settings.MERIDIAN_CLI_DOWNLOAD_PAGE_ROWS : Number(values['page-rows']);
  if (!Number.isInteger(pageRows) || pageRows < 1) throw new UserUsageError('--page-rows is a positive integer');
  const client = await clientFor(values, io);
  const progress = progressFor(io, values.json);
  try {
    const summary = await download(client, {
      query: { metrics: values.metrics, pattern: values.pattern, start_date: values.from, end_date: values.to, format, latest_only: values['latest-only'] ?? false },
      output,
      force: values.force ?? false,
      resume: values.resume ?? false,
      pageRows,
    }, progress).catch((error: unknown) => rethrowIfInterrupted(io.signal, error, downloadHint(output)));
    progress.stop();
    if (values.json) print(io, JSON.stringify(summary));
    else if (output !== null) io.stderr.write(`${output}: ${summary.rows} rows, ${summary.bytes} bytes, ${summary.pages} pages\n`);
    return 0;
  } finally {
    progress.stop();
  }
}

/** What an interrupted download leaves, and how to go on. */
function downloadHint(output: string | null): string {
  if (output === null) return '';
  return existsSync(resumeStatePath(output))
    ? `the pages received are kept in ${partialPath(output)}; run the same command with --resume to go on from there`
    : `nothing was written to ${output}`;
}

function taskLine(t: TaskView): string {
  const { rows_done, rows_total } = t.progress;
  return [t.task_id, t.kind.padEnd(15), t.status.padEnd(9), t.created_at, `${rows_done}${rows_total === null ? '' : `/${rows_total}`} rows`, t.reason ?? ''].join('  ').trimEnd();
}

async function tasks(args: string[], io: UserIo): Promise<number> {
  const { values, positionals } = parse(args, { watch: { type: 'boolean' }, limit: { type: 'string' } });
  if (positionals.length > 1) throw new UserUsageError('tasks takes at most one task id');
  const client = await clientFor(values, io);
  const fetchOnce = async (): Promise<TaskView[]> => positionals[0]
    ? [await getTask(client, positionals[0])]
    : (await client.json<{ tasks: TaskView[] }>('/api/v1/tasks', { idempotent: true, query: { limit: values.limit } })).tasks;
  const show = (list: TaskView[]) => {
    if (values.json) print(io, JSON.stringify(positionals[0] ? list[0] : list));
    else {
      print(io, list.length === 0 ? 'no tasks' : list.map(taskLine).join('\n'));
      if (positionals[0]) for (const line of rowErrorLines(list[0]!)) print(io, line);
    }
  };
  if (!values.watch) {
    show(await fetchOnce());
    return 0;
  }
  // Until interrupted (Ctrl-C ends the process); on a TTY each refresh replaces the last.
  const clear = (io.stdout as NodeJS.WriteStream).isTTY === true && !values.json;
  for (;;) {
    const list = await fetchOnce();
    if (clear) io.stdout.write('\x1b[H\x1b[2J');
    show(list);
    await sleep(io.settings.MERIDIAN_CLI_POLL_MS, undefined, io.signal ? { signal: io.signal } : {});
  }
}

async function files(args: string[], io: UserIo): Promise<number> {
  const [verb, ...rest] = args;
  switch (verb) {
    case 'ls': {
      const { values } = parse(rest, { 'name-contains': { type: 'string' } });
      const list = await listFiles(await clientFor(values, io), values['name-contains']);
      if (values.json) print(io, JSON.stringify(list));
      else print(io, list.length === 0 ? 'no files' : list.map((f) => [f.file_id, f.entitlement.padEnd(2), f.user_name, f.created_at, f.file_name].join('  ')).join('\n'));
      return 0;
    }
    case 'get': {
      const { values, positionals } = parse(rest, { output: { type: 'string', short: 'o' }, force: { type: 'boolean' } });
      if (positionals.length !== 1) throw new UserUsageError('files get needs exactly one file id');
      const progress = progressFor(io, values.json || values.output === '-');
      const got = await getFile(await clientFor(values, io), positionals[0]!, values.output, values.force ?? false, progress)
        .catch((error: unknown) => rethrowIfInterrupted(io.signal, error, 'nothing was written'));
      progress.stop();
      if (values.json) print(io, JSON.stringify(got));
      else if (got.output !== '-') io.stderr.write(`${got.output}: ${got.bytes} bytes\n`);
      return 0;
    }
    case 'put': {
      const { values, positionals } = parse(rest, { description: { type: 'string' } });
      if (positionals.length !== 1) throw new UserUsageError('files put needs exactly one file');
      const progress = progressFor(io, values.json);
      const { file_id, task } = await putFile(await clientFor(values, io), positionals[0]!, values.description, io.settings.MERIDIAN_CLI_TASK_WAIT_SECONDS, progress);
      progress.stop();
      if (values.json) print(io, JSON.stringify({ file_id, status: task.status, reason: task.reason }));
      else print(io, task.status === 'succeeded' ? file_id : `${positionals[0]}  failed: ${task.reason ?? ''}`);
      return task.status === 'succeeded' ? 0 : 1;
    }
    case 'share': {
      const { values, positionals } = parse(rest, { access: { type: 'string' }, revoke: { type: 'boolean' } });
      if (positionals.length !== 2) throw new UserUsageError('files share needs a file id and a user name');
      if (values.revoke === (values.access !== undefined)) throw new UserUsageError('files share needs either --access r|rw or --revoke');
      if (values.access !== undefined && values.access !== 'r' && values.access !== 'rw') throw new UserUsageError('--access is r or rw');
      const answer = await shareFile(await clientFor(values, io), positionals[0]!, positionals[1]!, values.revoke ? null : values.access as 'r' | 'rw');
      if (values.json) print(io, JSON.stringify(answer ?? { revoked: true }));
      else print(io, values.revoke ? `${positionals[1]} no longer has access to ${positionals[0]}` : `${positionals[1]} has ${values.access} access to ${positionals[0]}`);
      return 0;
    }
    default:
      throw new UserUsageError(verb ? `unknown files command: ${verb}` : 'files needs ls, get, put or share');
  }
}
