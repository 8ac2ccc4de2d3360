import { adapterOptions, loadSettingsOrExit, type Settings } from '@meridian/config';
import { createLogger, silenceKnownWarnings } from '@meridian/observability';
import { createAdapters, createPlatform } from '@meridian/platform';
import { composeCli } from './cli-services.ts';
import { helpRequest } from './help.ts';
import { runCommand, UsageError } from './commands.ts';
import { ApiError, NetworkError } from './user/api-client.ts';
import { ConnectionError } from './user/config.ts';
import { catchInterrupts, Interrupted } from './user/interrupt.ts';
import { runUserCommand, USER_COMMANDS, UserUsageError } from './user/commands.ts';

/** The admin commands' first words (they talk to Kafka); anything else is refused before any service is reached. */
const ADMIN_COMMANDS = new Set(['users', 'keys', 'grant', 'quota', 'events', 'replay']);

/** A usage error: what was wrong, and where the help is (clig.dev: say what to do next). */
function usageError(message: string, command = ''): number {
  process.stderr.write(`meridian: ${message}\nRun 'meridian ${command ? `${command} ` : ''}--help' for usage.\n`);
  return 2;
}

silenceKnownWarnings();

/** The CLI (main.ts loads it once the compile cache is on): the only place that reads the environment and argv. */
async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const help = helpRequest(argv);
  if (help) {
    (help.toStderr ? process.stderr : process.stdout).write(`${help.text}\n`);
    return help.code;
  }
  const settings = loadSettingsOrExit(process.env, 'meridian');
  if (USER_COMMANDS.has(argv[0] ?? '')) return userMain(argv, settings);
  if (!ADMIN_COMMANDS.has(argv[0] ?? '')) return usageError(`unknown command: ${argv[0]}`);
  const logger = createLogger({ name: 'cli', level: process.env.LOG_LEVEL ?? 'warn', stream: 'stderr' });
  // A command waits out a fresh Kafka's first answers ("not the leader"), for about 20 s at most, then fails.
  const startRetry = { attempts: 7 };
  const options = adapterOptions(settings, 'cli');
  const adapters = createAdapters(options, logger);
  const platform = createPlatform(adapters, options, logger, startRetry);
  try {
    const output = await runCommand(composeCli(logger, adapters, options, platform, startRetry), argv);
    // An empty output prints nothing: a command that streamed bytes to stdout (events export) ends there.
    if (output.length > 0) process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message, argv[0]);
    process.stderr.write(`meridian: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await platform.close();
  }
}

/** The user commands talk HTTP to the api: no Kafka, no platform. */
async function userMain(argv: string[], settings: Settings): Promise<number> {
  const interruption = catchInterrupts(process.stderr);
  const interrupted = (message: string) => {
    process.stderr.write(`meridian: ${message}\n`);
    interruption.reraise();
    return 130;
  };
  try {
    const code = await runUserCommand(argv, { env: process.env, settings, stdout: process.stdout, stderr: process.stderr, signal: interruption.signal });
    return interruption.received() === null ? code : interrupted('interrupted');
  } catch (error) {
    if (interruption.received() !== null) return interrupted(error instanceof Interrupted ? error.message : 'interrupted');
    if (error instanceof UserUsageError) return usageError(error.message, error.command);
    if (error instanceof ConnectionError || error instanceof NetworkError) {
      process.stderr.write(`meridian: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`meridian: ${(error as Error).message}\n`);
    if (error instanceof ApiError) for (const e of error.problem?.errors ?? []) process.stderr.write(`  ${JSON.stringify(e)}\n`);
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`meridian: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
