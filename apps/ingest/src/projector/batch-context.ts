import type { BatchPayload, LogWriter, PointsFact, TaskEvent } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import type { Logger } from '@meridian/observability';
import type { Projection } from '@meridian/projection';
import { retry, RETRY_POLICIES, type RetryPolicy } from '@meridian/retry';
import { Stopping } from '../persist.ts';
import type { Heart } from './heart.ts';
import type { InsertLog } from './insert-log.ts';
import type { ProjectorOptions } from './options.ts';
import type { IngestDeps } from '../ingest-deps.ts';

/** What one projector's pieces share for its whole life: its adapters, codecs and buffer. */
export type ProjectorWork = {
  readonly ingest: IngestDeps;
  readonly options: ProjectorOptions;
  readonly logger: Logger;
  readonly groupId: string;
  readonly sink: IngestDeps['pointsSink'];
  readonly stages: IngestDeps['pointsStages'];
  readonly pointsCodec: EventCodec<PointsFact>;
  readonly taskCodec: EventCodec<TaskEvent>;
  readonly producer: LogWriter;
  readonly projection: Projection;
  readonly inserts: InsertLog;
};

/** One eachBatch call: what kafkajs hands the projector for it, and the heart that keeps the membership alive. */
export type BatchContext = Pick<BatchPayload, 'isRunning' | 'commitOffsetsIfNecessary' | 'uncommittedOffsets'> & { heart: Heart };

/**
 * Throws once the partitions may no longer be ours: the consumer is stopping, or a heartbeat
 * failed (a rebalance; the new owner may already have read the sink positions).
 */
export function stillOwned(ctx: BatchContext, what: string): void {
  if (!ctx.isRunning()) throw new Stopping(`${what}: stopping`);
  ctx.heart.check();
}

/** Runs `attempt` until it succeeds, heartbeating, backing off; stops only when the consumer stops. */
export async function persist(
  logger: Logger,
  what: string,
  ctx: BatchContext,
  attempt: (retry: boolean) => Promise<void>,
  policy: RetryPolicy = RETRY_POLICIES.projector,
): Promise<void> {
  await retry((n) => ctx.heart.during(attempt(n > 1)), {
    ...policy,
    // Every failure is retried while the partitions are ours; a stopping consumer leaves the work to the next owner.
    retriable: () => {
      stillOwned(ctx, what);
      return true;
    },
    onRetry: (error, n, delay) => logger.warn({ err: error, attempt: n, retry_in_ms: delay }, `${what} failed; retrying`),
    wait: (ms) => ctx.heart.during(new Promise((r) => setTimeout(r, ms))),
  });
}
