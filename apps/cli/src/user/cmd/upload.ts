import { Interrupted } from '../interrupt.ts';
import { parseCommand, UserUsageError } from '../args.ts';
import { clientFor, print, progressFor, type UserIo } from '../io.ts';
import { rowErrorLines } from '../tasks-wait.ts';
import { metricFlagProblem, needsMetric } from '../upload-check.ts';
import { uploadFiles, type UploadOutcome } from '../upload.ts';

const RESUME_HINT = 'to resume, run the same command again: files the api already has become their earlier tasks and store nothing twice';

function outcomeLine(o: UploadOutcome): string {
  const result = o.result as { points_accepted?: number; rows_rejected?: number } | null;
  let detail = o.reason ? `: ${o.reason}` : '';
  if (o.already_uploaded) detail = ': already uploaded, nothing new stored';
  else if (o.status === 'succeeded' && result) detail = `: ${result.points_accepted} points stored, ${result.rows_rejected} rows rejected`;
  return `${o.file}  ${o.status}${detail}${o.task_id ? `  (task ${o.task_id})` : ''}`;
}

/** meridian upload FILE... : checks every file before the first byte is sent, then uploads them. */
export async function upload(args: string[], io: UserIo): Promise<number> {
  const { values, positionals } = parseCommand(
    'upload',
    args,
    { metric: { type: 'string' }, 'on-error': { type: 'string' }, 'no-wait': { type: 'boolean' } },
    { metrics: 'metric' },
  );
  if (positionals.length === 0) throw new UserUsageError('upload needs at least one file', 'upload');
  const onError = values['on-error'] ?? 'fail';
  if (onError !== 'fail' && onError !== 'skip') throw new UserUsageError('--on-error is fail or skip', 'upload');
  if (values.metric !== undefined) {
    const problem = metricFlagProblem(values.metric);
    if (problem) throw new UserUsageError(problem, 'upload');
  } else {
    for (const file of positionals) {
      const problem = await needsMetric(file);
      if (problem) throw new UserUsageError(`${file}: ${problem}; pass --metric NAME`, 'upload');
    }
  }
  const client = await clientFor(values, io);
  const progress = progressFor(io, values.json);
  let outcomes: UploadOutcome[];
  try {
    outcomes = await uploadFiles(
      client,
      positionals,
      {
        metric: values.metric,
        onError,
        wait: !values['no-wait'],
        concurrency: io.settings.MERIDIAN_CLI_UPLOADS_AT_ONCE,
        taskWaitSeconds: io.settings.MERIDIAN_CLI_TASK_WAIT_SECONDS,
        signal: io.signal,
      },
      progress,
    );
  } catch (error) {
    if (io.signal?.aborted) throw new Interrupted(RESUME_HINT);
    throw error;
  } finally {
    progress.stop();
  }
  const bad = outcomes.filter((o) => o.status === 'failed' || o.status === 'refused');
  if (values.json) print(io, JSON.stringify(outcomes, null, 2));
  else {
    for (const o of outcomes) print(io, outcomeLine(o));
    for (const o of bad)
      if (o.errors.length > 0) io.stderr.write(`${o.file}: ${o.status === 'refused' ? 'refused' : 'row errors'}\n${rowErrorLines(o).join('\n')}\n`);
    // on_error=skip: the stored file still had rows rejected; show them too.
    for (const o of outcomes)
      if (o.status === 'succeeded' && o.errors.length > 0) io.stderr.write(`${o.file}: rows rejected\n${rowErrorLines(o).join('\n')}\n`);
  }
  return bad.length > 0 ? 1 : 0;
}
