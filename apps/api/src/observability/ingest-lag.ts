import { withTimeout } from '@meridian/observability';
import type { ApiServices } from '../api-services.ts';

/** Every ingest consumer group's lag per partition; empty when Kafka does not answer in time (a scrape never hangs). */
export async function ingestLag(services: ApiServices) {
  const { groups: g, topics: t } = services;
  const groups = [
    { group: g.commands, topic: t.tasks },
    { group: g.projector, topic: t.points },
    { group: g.tasksProjector, topic: t.tasks },
    { group: g.filesProjector, topic: t.files },
  ];
  try {
    return await withTimeout(
      Promise.all(
        groups.map(async ({ group, topic }) => (await services.log.groupLag(group, topic)).map(({ partition, lag }) => ({ group, topic, partition, lag }))),
      ),
      2000,
      'kafka',
    ).then((lists) => lists.flat());
  } catch {
    return [];
  }
}
