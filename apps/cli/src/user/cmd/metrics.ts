import { withFlagNames } from '../api-fields.ts';
import { parseCommand, UserUsageError } from '../args.ts';
import { clientFor, print, type UserIo } from '../io.ts';

type CatalogEntry = { metric_name: string; points: number; first_timestamp: string; last_timestamp: string };

const PATTERNS = ['single', 'list', 'contains', 'starts_with', 'ends_with'];

/** meridian metrics ls: the catalog (GET /api/v1/metrics), every page. */
export async function metrics(args: string[], io: UserIo): Promise<number> {
  const [verb, ...rest] = args;
  if (verb !== 'ls') throw new UserUsageError(verb ? `unknown metrics command: ${verb}` : 'metrics needs ls', 'metrics');
  const { values, positionals } = parseCommand('metrics ls', rest, { metric: { type: 'string' }, pattern: { type: 'string' } }, { metrics: 'metric' });
  if (positionals.length > 0) throw new UserUsageError(`metrics ls takes no positional arguments: ${positionals.join(' ')}`, 'metrics ls');
  if (values.pattern !== undefined && !PATTERNS.includes(values.pattern)) throw new UserUsageError(`--pattern is one of ${PATTERNS.join(', ')}`, 'metrics ls');
  if (values.pattern !== undefined && values.metric === undefined) throw new UserUsageError('--pattern needs --metric (the text it applies to)', 'metrics ls');
  const client = await clientFor(values, io);
  const all: CatalogEntry[] = [];
  let after: string | undefined;
  try {
    do {
      const page = await client.json<{ metrics: CatalogEntry[]; next_after: string | null }>('/api/v1/metrics', {
        idempotent: true,
        query: { metrics: values.metric, pattern: values.pattern, after, limit: '1000' },
      });
      all.push(...page.metrics);
      after = page.next_after ?? undefined;
    } while (after !== undefined);
  } catch (error) {
    throw withFlagNames(error);
  }
  if (values.json) {
    print(io, JSON.stringify(all));
    return 0;
  }
  if (all.length === 0) {
    print(io, 'no metrics');
    return 0;
  }
  const width = Math.min(60, Math.max(...all.map((m) => m.metric_name.length)));
  const pointsWidth = Math.max(...all.map((m) => String(m.points).length));
  print(
    io,
    all.map((m) => `${m.metric_name.padEnd(width)}  ${String(m.points).padStart(pointsWidth)} points  ${m.first_timestamp}  ${m.last_timestamp}`).join('\n'),
  );
  return 0;
}
