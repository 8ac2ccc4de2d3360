import { randomBytes } from 'node:crypto';
import type { PointsFact, TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { DeletionLog } from '@meridian/kafka';
import { AccountsStore } from '@meridian/folds';
import type { IngestDeps } from '../ingest-deps.ts';
import { startRetention } from './runner.ts';
import type { RetentionOptions } from './options.ts';

/**
 * The retention runner of this worker: its own accounts fold (the rules), a transactional writer
 * for its deletions, and the pass every MERIDIAN_POINTS_RETENTION_INTERVAL_MS while `leads` says so.
 */
export function startRetentionRunner(ingest: IngestDeps, options: RetentionOptions, leads: () => boolean): { stop(): Promise<void> } {
  const { log, topics } = ingest;
  const logger = ingest.logger.child({ component: 'retention' });
  const accounts = new AccountsStore(ingest.folds, 'ingest-retention', { writesSnapshots: false });
  // Not awaited: the worker is ready without it; the first pass waits for the fold.
  const started = accounts.start();
  started.catch((error: unknown) => logger.warn({ err: error }, 'the retention rules could not be read yet; the next pass tries again'));
  const writer = log.transactional(`${options.writerIdPrefix}${randomBytes(6).toString('hex')}`);
  const partitions = async () => ({ points: (await log.endOffsets(topics.points)).size, tasks: (await log.endOffsets(topics.tasks)).size });
  const deletions = new DeletionLog({
    writer: {
      transaction: () => writer.transaction(),
      renew: async () => {
        await writer.disconnect();
        await writer.connect();
      },
    },
    topics: { points: topics.points, tasks: topics.tasks },
    partitions,
    pointsCodec: createEventCodec<PointsFact>(),
    taskCodec: createEventCodec<TaskEvent>(),
    deadlineMs: options.ackTimeoutMs,
    rollups: false, // rollups outlive the raw points retention deletes
  });
  const runner = startRetention({
    rules: async () => {
      await started;
      await accounts.syncToEnd();
      return [...accounts.state.retention.values()];
    },
    catalog: () => ingest.retentionQueries.catalog(),
    countOlder: (metrics, cutoff) => ingest.retentionQueries.countOlder(metrics, cutoff),
    append: async (deletion) => (await deletions.append(deletion)).partitions,
    appliedIn: (taskIds) => ingest.retentionQueries.appliedPartitions(taskIds),
    leads,
    intervalMs: options.intervalMs,
    logger,
  });
  return {
    async stop() {
      await runner.stop();
      await started.catch(() => undefined);
      await Promise.all([accounts.stop(), writer.disconnect()]);
    },
  };
}
