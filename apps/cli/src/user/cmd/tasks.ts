import { setTimeout as sleep } from 'node:timers/promises';
import { parseCommand, UserUsageError } from '../args.ts';
import { clientFor, print, type UserIo } from '../io.ts';
import { getTask, rowErrorLines, waitForTask, type TaskView } from '../tasks-wait.ts';

const STATUSES = ['queued', 'running', 'succeeded', 'failed'];
const KINDS = ['metrics_upload', 'file_definition', 'points_rebuild', 'points_deletion'];
/** The long-poll asked for by --wait (the api shortens it to its cap, MERIDIAN_TASK_MAX_WAIT_SECONDS). */
const WAIT_SECONDS = 30;

const ended = (t: TaskView) => t.status === 'succeeded' || t.status === 'failed';

function taskLine(t: TaskView): string {
  const { rows_done, rows_total } = t.progress;
  return [t.task_id, t.kind.padEnd(15), t.status.padEnd(9), t.created_at, `${rows_done}${rows_total === null ? '' : `/${rows_total}`} rows`, t.reason ?? '']
    .join('  ')
    .trimEnd();
}

/** meridian tasks [TASK_ID]: a list (filtered), one task, --watch, or --wait for one task's end. */
export async function tasks(args: string[], io: UserIo): Promise<number> {
  const { values, positionals } = parseCommand('tasks', args, {
    watch: { type: 'boolean' },
    wait: { type: 'boolean' },
    limit: { type: 'string' },
    status: { type: 'string' },
    kind: { type: 'string' },
  });
  const usage = (message: string) => new UserUsageError(message, 'tasks');
  if (positionals.length > 1) throw usage('tasks takes at most one task id');
  const id = positionals[0];
  if (values.status !== undefined && !STATUSES.includes(values.status)) throw usage(`--status is one of ${STATUSES.join(', ')}`);
  if (values.kind !== undefined && !KINDS.includes(values.kind)) throw usage(`--kind is one of ${KINDS.join(', ')}`);
  if (values.limit !== undefined && !/^\d{1,4}$/.test(values.limit)) throw usage('--limit is a whole number, 1 to 1000');
  if (id !== undefined && (values.status || values.kind || values.limit)) throw usage('--status, --kind and --limit filter the list; not with a task id');
  if (values.wait && id === undefined) throw usage('--wait needs a task id');
  if (values.wait && values.watch) throw usage('--wait or --watch, not both');
  const client = await clientFor(values, io);

  const show = (list: TaskView[]) => {
    if (values.json) print(io, JSON.stringify(id ? list[0] : list));
    else {
      print(io, list.length === 0 ? 'no tasks' : list.map(taskLine).join('\n'));
      if (id) for (const line of rowErrorLines(list[0]!)) print(io, line);
    }
  };
  /** One task's end as the exit code: 0 it succeeded, 1 it failed. */
  const result = (t: TaskView) => (t.status === 'failed' ? 1 : 0);

  if (values.wait) {
    const task = await waitForTask(client, id!, WAIT_SECONDS, () => undefined);
    show([task]);
    return result(task);
  }
  const fetchOnce = async (): Promise<TaskView[]> =>
    id
      ? [await getTask(client, id)]
      : (
          await client.json<{ tasks: TaskView[] }>('/api/v1/tasks', {
            idempotent: true,
            query: { limit: values.limit, status: values.status, kind: values.kind },
          })
        ).tasks;
  if (!values.watch) {
    show(await fetchOnce());
    return 0;
  }
  // Until interrupted (Ctrl-C), or for one task until it has ended; on a TTY each refresh replaces the last.
  const clear = (io.stdout as NodeJS.WriteStream).isTTY === true && !values.json;
  for (;;) {
    const list = await fetchOnce();
    if (clear) io.stdout.write('\x1b[H\x1b[2J');
    show(list);
    if (id && ended(list[0]!)) return result(list[0]!);
    await sleep(io.settings.MERIDIAN_CLI_POLL_MS, undefined, io.signal ? { signal: io.signal } : {});
  }
}
