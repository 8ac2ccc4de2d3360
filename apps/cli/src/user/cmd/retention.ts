import { withFlagNames } from '../api-fields.ts';
import { parseCommand, UserUsageError } from '../args.ts';
import { clientFor, print, type UserIo } from '../io.ts';

type Rule = { match: 'exact' | 'prefix'; value: string; keep_seconds: number; days: number; set_at: string; set_by: string };

const selectorOptions = { prefix: { type: 'string' }, metric: { type: 'string' } } as const;

/** --prefix P or --metric NAME: the rule's match and value. */
function selectorOf(command: string, values: { prefix?: string; metric?: string }): { match: 'exact' | 'prefix'; value: string } {
  if ((values.prefix === undefined) === (values.metric === undefined))
    throw new UserUsageError(`${command} needs --prefix P or --metric NAME (one of them)`, command);
  return values.prefix !== undefined ? { match: 'prefix', value: values.prefix } : { match: 'exact', value: values.metric! };
}

function show(io: UserIo, rules: readonly Rule[], json: boolean | undefined): void {
  if (json) print(io, JSON.stringify(rules));
  else if (rules.length === 0) print(io, 'no retention rules: every point is kept');
  else
    print(
      io,
      rules
        .map((r) => `${r.match.padEnd(6)}  ${r.value}  keeps ${r.days >= 1 ? `${r.days} days` : `${r.keep_seconds} s`}  (set ${r.set_at} by ${r.set_by})`)
        .join('\n'),
    );
}

/** meridian retention ls | set | rm: the retention rules over GET/PUT/DELETE /api/v1/retention (an admin's key). */
export async function retention(args: string[], io: UserIo): Promise<number> {
  const [verb, ...rest] = args;
  const command = `retention ${verb ?? ''}`.trim();
  try {
    switch (verb) {
      case 'ls': {
        const { values } = parseCommand(command, rest, {});
        show(io, (await (await clientFor(values, io)).json<{ rules: Rule[] }>('/api/v1/retention', { idempotent: true })).rules, values.json);
        return 0;
      }
      case 'set': {
        const { values } = parseCommand(command, rest, { ...selectorOptions, days: { type: 'string' }, seconds: { type: 'string' } });
        const selector = selectorOf(command, values);
        if ((values.days === undefined) === (values.seconds === undefined))
          throw new UserUsageError('retention set needs --days N or --seconds N (one of them)', command);
        const keep = values.days !== undefined ? { days: Number(values.days) } : { seconds: Number(values.seconds) };
        if (!Object.values(keep).every((n) => Number.isFinite(n) && n > 0)) throw new UserUsageError('--days and --seconds are positive numbers', command);
        const client = await clientFor(values, io);
        show(
          io,
          (await client.json<{ rules: Rule[] }>('/api/v1/retention', { method: 'PUT', idempotent: true, json: { ...selector, ...keep } })).rules,
          values.json,
        );
        return 0;
      }
      case 'rm': {
        const { values } = parseCommand(command, rest, selectorOptions);
        const selector = selectorOf(command, values);
        const client = await clientFor(values, io);
        await client.json<unknown>('/api/v1/retention', { method: 'DELETE', idempotent: true, query: selector });
        if (values.json) print(io, JSON.stringify({ removed: selector }));
        else print(io, `removed the retention rule of ${selector.match} ${selector.value}`);
        return 0;
      }
      default:
        throw new UserUsageError(verb ? `unknown retention command: ${verb}` : 'retention needs ls, set or rm', 'retention');
    }
  } catch (error) {
    throw withFlagNames(error);
  }
}
