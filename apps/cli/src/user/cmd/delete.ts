import { withFlagNames } from '../api-fields.ts';
import { parseCommand, UserUsageError } from '../args.ts';
import { clientFor, print, type UserIo } from '../io.ts';
import { waitForTask } from '../tasks-wait.ts';
import { resolveTime } from '../times.ts';

const PATTERNS = ['single', 'list', 'contains', 'starts_with', 'ends_with'];

type Accepted = { task_id: string; metrics: string[]; points_selected: number };

/** meridian delete: POST /api/v1/metrics/delete, then wait until the points are gone. */
export async function deleteCommand(args: string[], io: UserIo): Promise<number> {
  const { values, positionals } = parseCommand(
    'delete',
    args,
    {
      metric: { type: 'string' },
      pattern: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      reason: { type: 'string' },
      'no-wait': { type: 'boolean' },
    },
    { metrics: 'metric' },
  );
  const usage = (message: string) => new UserUsageError(message, 'delete');
  if (positionals.length > 0) throw usage(`delete takes no positional arguments: ${positionals.join(' ')}`);
  if (!values.metric) throw usage('delete needs --metric');
  if (values.pattern !== undefined && !PATTERNS.includes(values.pattern)) throw usage(`--pattern is one of ${PATTERNS.join(', ')}`);
  if (values.from === undefined || values.to === undefined) throw usage('delete needs --from and --to (a whole history is deleted by naming its range)');
  if (!values.reason?.trim()) throw usage('delete needs --reason (kept in the log with who asked and when)');
  const now = Date.now();
  const time = (flag: string, text: string) => {
    const resolved = resolveTime(text, now);
    if (!resolved.ok) throw usage(`${flag} ${JSON.stringify(text)}: ${resolved.reason}`);
    return resolved.value;
  };
  const body = {
    metrics: values.metric,
    pattern: values.pattern,
    start_date: time('--from', values.from),
    end_date: time('--to', values.to),
    reason: values.reason,
  };
  const client = await clientFor(values, io);
  let accepted: Accepted;
  try {
    // Not repeated after a lost answer: a deletion sent again would also take points accepted in between.
    accepted = await client.json<Accepted>('/api/v1/metrics/delete', { method: 'POST', idempotent: false, json: body });
  } catch (error) {
    throw withFlagNames(error);
  }
  if (values['no-wait']) {
    if (values.json) print(io, JSON.stringify({ ...accepted, status: 'accepted' }));
    else print(io, `deletion ${accepted.task_id} accepted: ${accepted.points_selected} points of ${accepted.metrics.length} metrics selected`);
    return 0;
  }
  const task = await waitForTask(client, accepted.task_id, io.settings.MERIDIAN_CLI_TASK_WAIT_SECONDS, () => undefined);
  if (values.json) print(io, JSON.stringify({ ...accepted, status: task.status, reason: task.reason }));
  else if (task.status === 'succeeded')
    print(
      io,
      `deleted: ${accepted.points_selected} points of ${accepted.metrics.length} metrics (${accepted.metrics.slice(0, 5).join(', ')}${accepted.metrics.length > 5 ? ', …' : ''}); task ${accepted.task_id}`,
    );
  else io.stderr.write(`deletion ${accepted.task_id} failed: ${task.reason ?? 'no reason given'}\n`);
  return task.status === 'succeeded' ? 0 : 1;
}
