import type { Settings } from '@meridian/config';
import { apiClient, type ApiClient } from './api-client.ts';
import { resolveConnection } from './config.ts';
import { Progress } from './progress.ts';

/** What a user command needs from its process: given by main, the only reader of env and argv. */
export type UserIo = {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly settings: Settings;
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WriteStream;
  /** Aborted by Ctrl-C (SIGINT) or SIGTERM: the command tidies up and throws Interrupted. */
  readonly signal?: AbortSignal;
};

/** The api client of the command's --url/--api-key (else the environment, else the config file); retries are told on stderr. */
export async function clientFor(values: { url?: unknown; 'api-key'?: unknown }, io: UserIo): Promise<ApiClient> {
  const connection = await resolveConnection({ url: values.url as string | undefined, api_key: values['api-key'] as string | undefined }, io.env);
  return apiClient(connection, {
    retries: io.settings.MERIDIAN_CLI_RETRIES,
    interrupt: io.signal,
    report: (line) => io.stderr.write(`meridian: ${line}\n`),
  });
}

/** Progress lines on stderr when it is a terminal and the output is not --json. */
export const progressFor = (io: UserIo, json: boolean | undefined) => new Progress(io.stderr.isTTY && !json ? io.stderr : null);

export const print = (io: UserIo, text: string) => io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
