import { afterAll, beforeAll } from 'vitest';
import type { Settings } from '@meridian/config';
import { bootstrapAdmin } from './accounts.ts';
import { startApi, type RunningApi } from './api.ts';
import type { AppProcess } from './processes.ts';

/** What a fault test of the ingest process works with: an api in this process, its admin's key, and the ingest processes the test starts. */
export type FaultWorld = { api: RunningApi; key: string; readonly processes: AppProcess[] };

/**
 * Starts an api and its admin before the suite's tests; after them, kills every ingest process
 * the test pushed into `processes` (SIGKILL: their state is the test's, not theirs to save)
 * and closes the api. Fields are set once the suite's beforeAll has run.
 */
export function faultWorld(settings: Settings): FaultWorld {
  const world: FaultWorld = { api: undefined as unknown as RunningApi, key: '', processes: [] };
  beforeAll(async () => {
    world.api = await startApi(settings);
    world.key = await bootstrapAdmin(settings);
    await world.api.api.accounts.syncToEnd();
  });
  afterAll(async () => {
    await Promise.all(world.processes.map((p) => p.stop('SIGKILL')));
    await world.api?.close();
  });
  return world;
}
