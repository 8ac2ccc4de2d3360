import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Settings } from '@meridian/config';
import { bootstrapAdmin, createUser } from './accounts.ts';
import { startApi, type RunningApi } from './api.ts';
import { startWorker } from './ingest.ts';
import { freePort } from './ports.ts';
import { SilentServer } from './silent-server.ts';

/**
 * What a test of the user CLI runs it against: a real api and ingest worker with a user whose key
 * may write `prefix`, a working directory with a HOME of its own, an address where nothing listens
 * (connection refused) and one that accepts and never answers.
 */
export type CliWorld = {
  readonly dir: string;
  readonly api: RunningApi;
  readonly key: string;
  readonly downUrl: string;
  readonly silent: SilentServer;
  close(): Promise<void>;
};

export async function startCliWorld(settings: Settings, name: string, prefix: string): Promise<CliWorld> {
  const dir = await mkdtemp(join(tmpdir(), `meridian-${name}-`));
  await mkdir(join(dir, 'home'));
  const api = await startApi(settings);
  const ingest = await startWorker(settings);
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  const key = await createUser(api.url, root, 'ada', [{ match: 'prefix', value: prefix, access: 'rw' }]);
  const silent = await SilentServer.start();
  return {
    dir,
    api,
    key,
    downUrl: `http://127.0.0.1:${await freePort()}`,
    silent,
    async close() {
      silent.close();
      await ingest.close();
      await api.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
