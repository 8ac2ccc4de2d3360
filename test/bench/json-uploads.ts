import { loadavg } from 'node:os';
import { formatTimestamp } from '@meridian/domain';
import { percentile } from './common.ts';

/**
 * The JSON case of bench-ingest: `points` points as JSON bodies of
 * `perBody`, sent by `producers` producers back to back (each sends its next body as soon as
 * the last one is acknowledged). Measured per body: the ack (request sent → 202) and the
 * freshness (202 → its task succeeded, which it does once its points are queryable), the
 * tasks followed from the first 202 on, while the producers still send, so a backlog shows
 * as freshness growing with the run. A producer that gets a 429 (the api refusing more work
 * for now) waits its Retry-After and sends the body again; those waits count in its ack.
 */
export type JsonUploadFigures = {
  readonly ms: number;
  readonly acks: readonly number[];
  readonly freshness: readonly number[];
  readonly refusals: number;
  readonly loadBefore: number;
  readonly loadAfter: number;
};

/** Pending tasks followed at once (each user may hold 16 long-polls per api by default). */
const FOLLOWED = 8;

type Options = {
  readonly base: string;
  readonly key: string;
  readonly points: number;
  readonly perBody: number;
  readonly producers: number;
  readonly metrics: number;
  readonly t0: number;
};

export async function benchJsonUploads(o: Options): Promise<JsonUploadFigures> {
  const auth = { Authorization: `Bearer ${o.key}` };
  // Built before the clock starts: the client's own formatting would otherwise take CPU from the api and ingest.
  const bodies = Array.from({ length: Math.ceil(o.points / o.perBody) }, (_, b) =>
    JSON.stringify({
      metric_name: `bench.json.${b % o.metrics}`,
      values: Array.from({ length: Math.min(o.perBody, o.points - b * o.perBody) }, (_, k) => ({
        timestamp: formatTimestamp(o.t0 + (b * o.perBody + k) * 1000),
        value: k / 4,
      })),
    }),
  );
  const acks: number[] = [];
  const freshness: number[] = [];
  const pending = new Map<string, number>(); // task id → ack time
  let refusals = 0;
  let sending = true;
  const loadBefore = loadavg()[0]!;
  const started = performance.now();

  const produce = async (next: { i: number }) => {
    while (next.i < bodies.length) {
      const b = next.i++;
      const t = performance.now();
      for (;;) {
        const res = await fetch(`${o.base}/api/v1/metrics/upload`, {
          method: 'POST',
          headers: { ...auth, 'Content-Type': 'application/json' },
          body: bodies[b],
        });
        if (res.status === 429) {
          refusals++;
          await res.arrayBuffer();
          await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? 1) * 1000));
          continue;
        }
        if (res.status !== 202) throw new Error(`upload ${b}: ${res.status} ${await res.text()}`);
        const id = ((await res.json()) as { task_id: string }).task_id;
        const ackAt = performance.now();
        acks.push(ackAt - t);
        pending.set(id, ackAt);
        break;
      }
    }
  };

  /**
   * Follows the FOLLOWED oldest tasks not yet succeeded, each with a long-poll
   * (`GET /tasks/{id}?wait=30`, answered the moment the task ends): a few requests however long
   * the backlog, so the bench does not load the api it measures. A task that succeeds behind
   * older pending ones is seen once it is among the followed: its freshness can only read high,
   * never low. A failed task ends the bench.
   */
  const followed = new Map<string, Promise<void>>();
  const followOne = async (id: string, ackAt: number) => {
    const res = await fetch(`${o.base}/api/v1/tasks/${id}?wait=30`, { headers: auth });
    const t = (await res.json()) as { status?: string };
    if (t.status === 'failed') throw new Error(`task ${id} failed`);
    if (t.status === 'succeeded') {
      freshness.push(performance.now() - ackAt);
      pending.delete(id);
    }
  };
  const follow = async () => {
    while (sending || pending.size > 0) {
      for (const [id, ackAt] of pending) {
        if (followed.size >= FOLLOWED) break;
        if (!followed.has(id))
          followed.set(
            id,
            followOne(id, ackAt).finally(() => followed.delete(id)),
          );
      }
      // On when one ends, or every 25 ms to take up tasks acknowledged since.
      await Promise.race([...followed.values(), new Promise((r) => setTimeout(r, 25))]);
      if (performance.now() - started > 600_000) throw new Error('timed out waiting for the JSON uploads to succeed');
    }
  };

  const next = { i: 0 };
  const following = follow();
  try {
    await Promise.all(Array.from({ length: o.producers }, () => produce(next)));
  } finally {
    sending = false;
  }
  await following;
  const ms = performance.now() - started;
  return { ms, acks: [...acks].sort((a, b) => a - b), freshness: [...freshness].sort((a, b) => a - b), refusals, loadBefore, loadAfter: loadavg()[0]! };
}

/** Two lines: the rate and its ratio to the baseline; ack and freshness percentiles, refusals and the load. */
export function jsonFigureLines(f: JsonUploadFigures, points: number, directRate: number): string[] {
  const rate = (points * 1000) / f.ms;
  const ms = (sorted: readonly number[], p: number) => percentile([...sorted], p).toFixed(0);
  return [
    `${Math.round(rate).toLocaleString('en')} points/s first request → all queryable (${(f.ms / 1000).toFixed(1)} s): ${(rate / directRate).toFixed(2)}× ClickHouse's straight insert (goal 0.25×)`,
    `ack p50 ${ms(f.acks, 50)} ms, p99 ${ms(f.acks, 99)} ms (goal ≤ 100); freshness (ack → queryable) p50 ${ms(f.freshness, 50)} ms, p99 ${ms(f.freshness, 99)} ms (goal ≤ 1000); ${f.refusals} 429s; load average ${f.loadBefore.toFixed(1)} before, ${f.loadAfter.toFixed(1)} after`,
  ];
}
