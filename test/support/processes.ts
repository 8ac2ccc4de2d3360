import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Settings } from '@meridian/config';
import { settingsEnv } from './settings.ts';
import { waitFor } from './wait.ts';
import { API_NODE_ENV, API_NODE_FLAGS } from '../../apps/api/src/node-flags.ts';
import { INGEST_NODE_FLAGS } from '../../apps/ingest/src/node-flags.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** A real app process (api, ingest or cli) started from its entry point, with its output kept. */
export type AppProcess = {
  readonly child: ChildProcess;
  output(): string;
  /** SIGTERM and wait; or SIGKILL for a crash. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
};

export function startApp(app: 'api' | 'ingest', settings: Settings, extraEnv: Record<string, string> = {}): AppProcess {
  const child = spawn(process.execPath, [...(app === 'api' ? API_NODE_FLAGS : INGEST_NODE_FLAGS), `${repoRoot}apps/${app}/src/main.ts`], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...(app === 'api' ? API_NODE_ENV : {}),
      ...settingsEnv(settings),
      LOG_LEVEL: 'info',
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Until the api at `url` answers /readyz with 200 (a process just started, or restarted). */
export async function untilReady(url: string, timeoutMs = 60_000): Promise<void> {
  const status = () =>
    fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
  await waitFor('the api to be ready', async () => ((await status()) === 200 ? true : undefined), timeoutMs, 100);
}
