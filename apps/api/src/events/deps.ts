import { planExport, streamExport, type ExportDeps } from '@meridian/export';
import type { ApiParts } from '../api-parts.ts';
import type { EventsDeps } from './routes.ts';

export function eventsDeps({ services, settings, cursors, slots }: ApiParts): EventsDeps {
  const exportDeps: ExportDeps = { log: services.history, topics: services.topics, topicPrefix: settings.MERIDIAN_TOPIC_PREFIX };
  return {
    plan: (request) => planExport(exportDeps, request),
    stream: (plan, request, signal) => streamExport(exportDeps, plan, request, signal),
    maxEventsCeiling: settings.MERIDIAN_MAX_ROWS_CEILING,
    cursors,
    streams: slots.downloads,
  };
}
