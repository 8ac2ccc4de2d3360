import { describe, expect, it } from 'vitest';
import type { LogTransaction, MetricsPushed, PointsFact, TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { createLogger } from '@meridian/observability';
import { PushLog, type PushToLog, type PushWriter } from './push-log.ts';

// The push log's choice of writers, on writers whose commits are held until the test lets them
// end: the records themselves are the e2e tests' (test/e2e/push.e2e.test.ts).

type HeldWriter = PushWriter & { readonly name: string };

function heldWriters(n: number) {
  const begun: string[] = [];
  const open: Array<() => void> = [];
  const writers: HeldWriter[] = Array.from({ length: n }, (_, k) => {
    const name = `w${k}`;
    const tx: LogTransaction = {
      send: () => Promise.resolve([]),
      sendAll: (records) => Promise.resolve(records.flatMap((r) => r.messages.map((m) => ({ topic: r.topic, partition: m.partition ?? 0, baseOffset: '0' })))),
      commitConsumed: () => Promise.resolve(),
      commit: () => new Promise<void>((resolve) => open.push(resolve)),
      abort: () => Promise.resolve(),
      isActive: () => true,
    };
    return {
      name,
      transaction: () => {
        begun.push(name);
        return Promise.resolve(tx);
      },
      renew: () => Promise.resolve(),
    };
  });
  /** Ends the oldest commit under way, and lets the log start what it starts next. */
  const commitOldest = async () => {
    open.shift()!();
    await new Promise((r) => setTimeout(r, 0));
  };
  return { writers, begun, open, commitOldest };
}

function pushLog(writers: readonly PushWriter[], underWay?: number): PushLog {
  return new PushLog({
    writers,
    ...(underWay === undefined ? {} : { underWay }),
    deadlineMs: 5000,
    topics: { points: 'points', tasks: 'tasks' },
    partitions: () => Promise.resolve({ points: 3, tasks: 3 }),
    pointsCodec: createEventCodec<PointsFact>(),
    taskCodec: createEventCodec<TaskEvent>(),
    bytesPerPartition: 1 << 20,
    bytesPerTransaction: 1 << 20,
    logger: createLogger({ name: 'push-log-test', level: 'silent' }),
  });
}

let tasks = 0;
function push(): PushToLog {
  const pushed: Omit<MetricsPushed, 'type' | 'partitions'> = {
    task_id: `00000000-0000-4000-8000-${String(++tasks).padStart(12, '0')}`,
    user_name: 'ada',
    at: 0,
    metric_name: 'm',
    on_error: 'fail',
    source: 'json_body',
    payload_bytes: 1,
    payload_sha256: Buffer.alloc(32),
    idempotency_key: null,
    rows_total: 0,
    points_accepted: 0,
    rows_rejected: 0,
    errors: [],
    metrics: [],
  };
  return { batches: [], pushed };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('PushLog writers', () => {
  it('keeps at most `underWay` transactions under way, the pushes waiting meanwhile going together in the next', async () => {
    const { writers, begun, open, commitOldest } = heldWriters(4);
    const log = pushLog(writers, 2);
    const acked = Array.from({ length: 6 }, () => log.append(push()));
    await settle();
    expect(begun).toEqual(['w0', 'w1']);
    expect(open).toHaveLength(2);
    await commitOldest();
    // The four pushes that waited go in one transaction, on a writer that has not just committed.
    expect(begun).toEqual(['w0', 'w1', 'w2']);
    expect(open).toHaveLength(2);
    while (open.length > 0) await commitOldest();
    expect(await Promise.all(acked)).toHaveLength(6);
  });

  it('gives each new transaction to the writer idle longest, so a writer rests through another transaction after its commit', async () => {
    const { writers, begun, open, commitOldest } = heldWriters(4);
    const log = pushLog(writers, 2);
    const acked: Array<Promise<unknown>> = [];
    for (let round = 0; round < 6; round++) {
      acked.push(log.append(push()));
      await settle();
      if (open.length === 2) await commitOldest();
    }
    while (open.length > 0) await commitOldest();
    await Promise.all(acked);
    expect(begun).toEqual(['w0', 'w1', 'w2', 'w3', 'w0', 'w1']);
    // No writer begins again before another has begun since its own last transaction.
    for (let i = 1; i < begun.length; i++) expect(begun[i]).not.toBe(begun[i - 1]);
  });

  it('uses every writer at once when no bound is given', async () => {
    const { writers, begun, open, commitOldest } = heldWriters(3);
    const log = pushLog(writers);
    const acked = Array.from({ length: 3 }, () => log.append(push()));
    await settle();
    expect(begun).toEqual(['w0', 'w1', 'w2']);
    while (open.length > 0) await commitOldest();
    await Promise.all(acked);
  });
});
