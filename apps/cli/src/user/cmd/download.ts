import { existsSync } from 'node:fs';
import { withFlagNames } from '../api-fields.ts';
import { parseCommand, UserUsageError } from '../args.ts';
import { download, resumeStatePath } from '../download.ts';
import { rethrowIfInterrupted } from '../interrupt.ts';
import { clientFor, print, progressFor, type UserIo } from '../io.ts';
import { partialPath } from '../output-file.ts';
import { resolveTime } from '../times.ts';

const PATTERNS = ['single', 'list', 'contains', 'starts_with', 'ends_with'];

/** What an interrupted download leaves, and how to go on. */
function downloadHint(output: string | null): string {
  if (output === null) return '';
  return existsSync(resumeStatePath(output))
    ? `the pages received are kept in ${partialPath(output)}; run the same command with --resume to go on from there`
    : `nothing was written to ${output}`;
}

/** --from and --to as the api takes them (relative times resolved now); a time it would refuse is a usage error. */
function timeOf(flag: string, text: string | undefined, now: number): string | undefined {
  if (text === undefined) return undefined;
  const resolved = resolveTime(text, now);
  if (!resolved.ok) throw new UserUsageError(`${flag} ${JSON.stringify(text)}: ${resolved.reason}`, 'download');
  return resolved.value;
}

/** meridian download: every page into one file (or stdout). */
export async function downloadCommand(args: string[], io: UserIo): Promise<number> {
  const { values, positionals } = parseCommand(
    'download',
    args,
    {
      metric: { type: 'string' },
      pattern: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      format: { type: 'string' },
      'latest-only': { type: 'boolean' },
      output: { type: 'string', short: 'o' },
      force: { type: 'boolean' },
      resume: { type: 'boolean' },
      'page-rows': { type: 'string' },
    },
    { metrics: 'metric' },
  );
  const usage = (message: string) => new UserUsageError(message, 'download');
  if (positionals.length > 0) throw usage(`download takes no positional arguments: ${positionals.join(' ')}`);
  if (!values.metric) throw usage('download needs --metric');
  if (values.pattern !== undefined && !PATTERNS.includes(values.pattern)) throw usage(`--pattern is one of ${PATTERNS.join(', ')}`);
  const format = values.format ?? 'csv';
  if (format !== 'csv' && format !== 'json') throw usage('--format is csv or json');
  const output = values.output === undefined || values.output === '-' ? null : values.output;
  if (values.resume && output === null) throw usage('--resume needs -o FILE (the resume state is kept beside it)');
  if (values.json && output === null) throw usage('--json needs -o FILE (stdout carries the summary)');
  const pageRows = values['page-rows'] === undefined ? io.settings.MERIDIAN_CLI_DOWNLOAD_PAGE_ROWS : Number(values['page-rows']);
  if (!Number.isInteger(pageRows) || pageRows < 1) throw usage('--page-rows is a positive integer');
  const now = Date.now();
  const from = timeOf('--from', values.from, now);
  const to = timeOf('--to', values.to, now);
  const client = await clientFor(values, io);
  const progress = progressFor(io, values.json);
  try {
    const summary = await download(
      client,
      {
        query: {
          metrics: values.metric,
          pattern: values.pattern,
          start_date: from,
          end_date: to,
          format,
          latest_only: values['latest-only'] ?? false,
          typed: { from: values.from, to: values.to },
        },
        output,
        force: values.force ?? false,
        resume: values.resume ?? false,
        pageRows,
      },
      progress,
    ).catch((error: unknown) => rethrowIfInterrupted(io.signal, withFlagNames(error), downloadHint(output)));
    progress.stop();
    if (values.json) print(io, JSON.stringify(summary));
    else if (output !== null) io.stderr.write(`${output}: ${summary.rows} rows, ${summary.bytes} bytes, ${summary.pages} pages\n`);
    return 0;
  } finally {
    progress.stop();
  }
}
