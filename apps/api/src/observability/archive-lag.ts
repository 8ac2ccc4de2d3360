import { archiveLag } from '@meridian/kafka';
import { withTimeout } from '@meridian/observability';
import type { ApiServices } from '../api-services.ts';

/**
 * The points archive's lag per partition (lag.ts); empty when no archiving pass has ended yet, or
 * when Kafka or the bucket does not answer in time (a scrape never hangs).
 */
export async function pointsArchiveLag(services: Pick<ApiServices, 'log' | 'archiveObjects' | 'topics'>) {
  const topic = services.topics.points;
  try {
    const lag = await withTimeout(archiveLag(services.log, services.archiveObjects, topic), 2000, 'archive');
    return (lag ?? []).map((l) => ({ topic, ...l }));
  } catch {
    return [];
  }
}
