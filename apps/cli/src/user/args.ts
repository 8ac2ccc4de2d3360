import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A mistake in how a command was called: exit 2, with a pointer to the command's --help. */
export class UserUsageError extends Error {
  /** The command's words (`files get`), for the pointer to its help; empty: the top level. */
  readonly command: string;

  constructor(message: string, command = '') {
    super(message);
    this.command = command;
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Every user command takes these. */
export const COMMON = { url: { type: 'string' }, 'api-key': { type: 'string' }, json: { type: 'boolean' } } as const;

/**
 * `--from -1h`: a value that starts with a dash and a digit (a relative time, a negative number)
 * is taken as the option's value, as `--from=-1h` is; parseArgs alone calls it ambiguous.
 */
export function joinDashValues(args: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    const name = arg.startsWith('--')
      ? arg.slice(2)
      : arg.length === 2 && arg.startsWith('-')
        ? Object.keys(options).find((k) => options[k]!.short === arg[1])
        : undefined;
    if (name !== undefined && options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`.replace(/^-(\w)=/, '-$1'));
      i++;
    } else out.push(arg);
  }
  return out;
}

/** parseArgs' own messages, said in the CLI's words. */
function explain(error: Error & { code?: string }): string {
  const message = error.message;
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${/'([^']+)'/.exec(message)?.[1] ?? message}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const flag = /'(-[^' ]+)/.exec(message)?.[1];
      if (/argument missing/.test(message)) return `${flag ?? 'an option'} needs a value`;
      if (/does not take an argument/.test(message)) return `${flag ?? 'an option'} takes no value`;
      return message;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${/'([^']+)'/.exec(message)?.[1] ?? message}`;
    default:
      return message;
  }
}

/**
 * The command's options (and the common ones) from its arguments; a mistake is a
 * UserUsageError in the CLI's words. `aliases` maps another spelling to an option's name
 * (`metrics` → `metric`); giving both spellings is a mistake.
 */
export function parseCommand<O extends Options>(command: string, args: readonly string[], options: O, aliases: Record<string, keyof O & string> = {}) {
  const all = { ...COMMON, ...options } as O & typeof COMMON;
  const spelled: Options = { ...all };
  for (const [alias, name] of Object.entries(aliases)) spelled[alias] = all[name]!;
  let parsed;
  try {
    parsed = parseArgs({ args: joinDashValues(args, spelled), options: spelled, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UserUsageError(explain(error as Error), command);
  }
  const values = parsed.values as Record<string, unknown>;
  for (const [alias, name] of Object.entries(aliases)) {
    if (values[alias] === undefined) continue;
    if (values[name] !== undefined) throw new UserUsageError(`give --${name} or --${alias}, not both`, command);
    values[name] = values[alias];
    delete values[alias];
  }
  return {
    values: values as ReturnType<typeof parseArgs<{ options: O & typeof COMMON; allowPositionals: true; strict: true }>>['values'],
    positionals: parsed.positionals,
  };
}
