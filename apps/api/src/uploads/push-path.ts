import type { PointsFact } from '@meridian/domain';
import { createEventCodec, type EventCodec } from '@meridian/events';
import type { ApiParts } from '../api-parts.ts';
import { PushLog } from './push-log.ts';
import type { PushDeps } from './push-submit.ts';

/**
 * kafkajs waits this long before its first retry of a transactional request the coordinator
 * answers "not yet" (the coordinator still completes the writer's last one: CONCURRENT_TRANSACTIONS),
 * as Kafka's own client does, rather than the 200 ms the other clients wait: a push's answer waits on it.
 */
const PUSH_FIRST_RETRY_MS = 20;

/**
 * A transactional writer of this instance's, `api-<role>-<instance>[-<k>]`, renewed after a
 * transaction that did not end cleanly.
 */
export function instanceWriter({ services, settings, instance }: ApiParts, role: string, k?: number) {
  const id = `${settings.MERIDIAN_TOPIC_PREFIX}api-${role}-${instance}${k === undefined ? '' : `-${k}`}`;
  const writer = services.log.transactional(id, { transactionTimeoutMs: settings.MERIDIAN_PUSH_TRANSACTION_TIMEOUT_MS, firstRetryMs: PUSH_FIRST_RETRY_MS });
  return {
    writer,
    handle: {
      transaction: () => writer.transaction(),
      renew: async () => {
        await writer.disconnect();
        await writer.connect();
      },
    },
  };
}

export type PushPath = {
  /** Absent when MERIDIAN_PUSH_MAX_BYTES is 0: every upload is staged. */
  readonly deps: PushDeps | undefined;
  readonly pointsCodec: EventCodec<PointsFact>;
  /** Connects the push writers; the first push tries again for one that cannot connect yet. */
  connect(): void;
  disconnect(): Promise<void>;
};

/** The push path's writers and log, as the settings configure them. */
export function createPushPath(parts: ApiParts): PushPath {
  const { services, settings, tasks, taskCodec, metrics, partitions } = parts;
  const { logger } = services;
  const writers = Array.from({ length: settings.MERIDIAN_PUSH_WRITERS }, (_, k) => instanceWriter(parts, 'push', k));
  const pointsCodec = createEventCodec<PointsFact>(undefined, {
    writeDeltas: settings.MERIDIAN_POINT_BATCH_DELTAS,
    writePacked: settings.MERIDIAN_POINT_BATCH_PACKED,
  });
  const pushLog = new PushLog({
    writers: writers.map((w) => w.handle),
    deadlineMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
    topics: { points: services.topics.points, tasks: services.topics.tasks },
    partitions,
    pointsCodec,
    taskCodec,
    bytesPerPartition: settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION,
    bytesPerTransaction: settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_REQUEST,
    logger: logger.child({ component: 'push' }),
    committed: (pushes) => metrics.pushesCommitted(pushes),
  });
  const deps: PushDeps | undefined =
    settings.MERIDIAN_PUSH_MAX_BYTES > 0
      ? {
          maxBytes: settings.MERIDIAN_PUSH_MAX_BYTES,
          log: pushLog,
          maxLagPoints: settings.MERIDIAN_PUSH_MAX_LAG_POINTS,
          awaitingProjection: () => tasks.pointsAwaitingProjection,
          pointsPartitions: async () => (await partitions()).points,
          parse: {
            batch: { points: settings.MERIDIAN_POINT_BATCH_SIZE, bytes: settings.MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION },
            maxLineLength: settings.MERIDIAN_MAX_LINE_BYTES,
            maxColumns: settings.MERIDIAN_MAX_COLUMNS,
            maxJsonDocumentLength: settings.MERIDIAN_MAX_JSON_DOCUMENT_BYTES,
            timestampDeltas: settings.MERIDIAN_POINT_BATCH_DELTAS,
            packedPoints: settings.MERIDIAN_POINT_BATCH_PACKED,
          },
        }
      : undefined;
  return {
    deps,
    pointsCodec,
    connect() {
      // The writers connect first: an id fences a transaction a predecessor under the same instance
      // name left open, which would otherwise hold the tasks fold's catch-up until it times out.
      for (const { writer } of writers)
        writer.connect().catch((error: unknown) => logger.warn({ err: error }, 'a push writer could not connect yet; its first push tries again'));
    },
    async disconnect() {
      await Promise.all(writers.map(({ writer }) => writer.disconnect()));
    },
  };
}
