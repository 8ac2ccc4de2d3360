import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { startWorker } from '../support/ingest.ts';
import { freePort } from '../support/ports.ts';
import { startApp, untilReady, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';

const PRODUCERS = 8;
const PUSHES_PER_PRODUCER = 60;
const POINTS = 50;
const KILLS = 3;

/**
 * Invariants 1 and 2 on the push path: the api is killed with SIGKILL while producers push, and
 * started again under the same instance name. Each producer retries a push whose answer it did
 * not get, under the same Idempotency-Key, as a client of the contract does; every push ends
 * acknowledged, and every point of every push is stored exactly once: none lost with a killed
 * transaction that was acknowledged, none doubled by a retry of one that had committed.
 */
describe(`api killed with SIGKILL ${KILLS} times while ${PRODUCERS} producers push`, () => {
  let settings: ReturnType<typeof isolatedSettings>;
  let url: string;
  let api: AppProcess | null = null;
  let ingest: Awaited<ReturnType<typeof startWorker>>;
  let writer: string;

  const startApi = async () => {
    api = startApp('api', settings);
    await untilReady(url);
  };

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    settings = isolatedSettings({
      MERIDIAN_API_PORT: String(port),
      MERIDIAN_API_INSTANCE: `fault-api-${port}`,
      MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
      MERIDIAN_MAX_UPLOADS_IN_FLIGHT_PER_USER: '64',
    });
    ingest = await startWorker(settings);
    const root = await bootstrapAdmin(settings);
    await startApi();
    writer = await createUser(url, root, 'pusher', [{ match: 'prefix', value: 'crash.', access: 'rw' }]);
  });
  afterAll(async () => {
    await api?.stop('SIGKILL');
    await ingest?.close();
  });

  it('acknowledges every push once retried, and stores each point exactly once', async () => {
    const taskIds = new Map<string, string>();
    let running = true;
    let retried = 0;
    const pushOnce = async (producer: number, n: number): Promise<string | null> => {
      const first = (producer * PUSHES_PER_PRODUCER + n) * POINTS;
      const values = Array.from({ length: POINTS }, (_, i) => ({
        timestamp: formatTimestamp(Date.UTC(2024, 0, 1) + (n * POINTS + i) * 1000),
        value: first + i,
      }));
      try {
        const res = await fetch(`${url}/api/v1/metrics/upload`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json', 'Idempotency-Key': `crash-${producer}-${n}` },
          body: JSON.stringify({ metric_name: `crash.${producer}`, values }),
          signal: AbortSignal.timeout(20_000),
        });
        return res.status === 202 ? ((await res.json()) as { task_id: string }).task_id : null;
      } catch {
        return null; // the api went away under it
      }
    };
    const producer = async (p: number) => {
      for (let n = 0; n < PUSHES_PER_PRODUCER; n++) {
        let id = await pushOnce(p, n);
        while (id === null) {
          retried++;
          await new Promise((r) => setTimeout(r, 100));
          id = await pushOnce(p, n);
        }
        taskIds.set(`${p}-${n}`, id);
      }
    };
    const producers = Promise.all(Array.from({ length: PRODUCERS }, (_, p) => producer(p))).finally(() => {
      running = false;
    });

    let kills = 0;
    while (running && kills < KILLS) {
      await new Promise((r) => setTimeout(r, 300 + Math.floor(Math.random() * 700)));
      if (!running) break;
      await api!.stop('SIGKILL');
      kills++;
      await startApi();
    }
    await producers;
    expect(kills).toBe(KILLS);
    expect(retried).toBeGreaterThan(0);
    expect(taskIds.size).toBe(PRODUCERS * PUSHES_PER_PRODUCER);
    for (const id of new Set(taskIds.values())) expect((await waitForTask(url, writer, id, 120_000)).status).toBe('succeeded');

    const total = PRODUCERS * PUSHES_PER_PRODUCER * POINTS;
    const [count, unique, min, max] = (await clickhouse(settings, 'SELECT count(), uniqExact(value), min(value), max(value) FROM points FORMAT TabSeparated'))
      .trim()
      .split('\t')
      .map(Number);
    expect({ count, unique, min, max }).toEqual({ count: total, unique: total, min: 0, max: total - 1 });
  });
});
