import { loadSettings, ConfigError } from '@meridian/config';
import { createLogger, silenceKnownWarnings } from '@meridian/observability';
import { createPlatform } from '@meridian/platform';
import { runCommand, UsageError, usage } from './commands.ts';

silenceKnownWarnings();

/** The CLI's entry point: the only place that reads the environment and argv. */
async function main(): Promise<number> {
  let settings;
  try {
    settings = loadSettings(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`meridian: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const logger = createLogger({ name: 'cli', level: process.env.LOG_LEVEL ?? 'warn', stream: 'stderr' });
  // A command waits out a fresh Kafka's first answers ("not the leader"), for about 20 s at most, then fails.
  const platform = createPlatform(settings, logger, 'cli', { attempts: 7 });
  try {
    const output = await runCommand(platform, process.argv.slice(2));
    // An empty output prints nothing: a command that streamed bytes to stdout (events export) ends there.
    if (output.length > 0) process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`meridian: ${error.message}\n\n${usage}\n`);
      return 2;
    }
    process.stderr.write(`meridian: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await platform.close();
  }
}

main().then((code) => process.exit(code), (error: unknown) => {
  process.stderr.write(`meridian: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
