import { countPoints } from '@meridian/clickhouse';
import type { PointsFact } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { DeletionLog } from '@meridian/kafka';
import type { ApiParts } from '../api-parts.ts';
import { instanceWriter } from '../uploads/push-path.ts';
import type { DeletionDeps } from './routes.ts';

/** The deletion routes' dependencies, and their writer: deletions go through a transactional writer of their own, one transaction at a time. */
export function createDeletions(
  parts: ApiParts,
  pointsCodec: EventCodec<PointsFact>,
): { readonly deps: DeletionDeps; connect(): void; disconnect(): Promise<void> } {
  const { services, settings, tasks, taskCodec, partitions } = parts;
  const { writer, handle } = instanceWriter(parts, 'delete');
  const log = new DeletionLog({
    writer: handle,
    topics: { points: services.topics.points, tasks: services.topics.tasks },
    partitions,
    pointsCodec,
    taskCodec,
    deadlineMs: settings.MERIDIAN_KAFKA_ACK_TIMEOUT_MS,
    rollups: true, // a user's deletion reaches the rollups of its range
  });
  return {
    deps: {
      catalog: services.catalog,
      maxListNames: settings.MERIDIAN_MAX_DOWNLOAD_NAMES,
      maxPoints: settings.MERIDIAN_DELETE_MAX_POINTS,
      count: (metrics, fromMs, toMs) => countPoints(services.clickhouseOptions, metrics, fromMs, toMs),
      append: async (deletion) => (await log.append(deletion)).position,
      applied: (position) => tasks.waitFor(position),
      tasks: { unfinished: () => tasks.unfinished, max: settings.MERIDIAN_MAX_QUEUED_TASKS_PER_USER },
    },
    connect() {
      writer
        .connect()
        .catch((error: unknown) => services.logger.warn({ err: error }, 'the deletion writer could not connect yet; its first deletion tries again'));
    },
    disconnect: () => writer.disconnect(),
  };
}
