import { ArchivedLog, type ArchiveObjects, type Topics } from '@meridian/kafka';
import type { Adapters } from './platform.ts';

/** The service bucket as the archive's narrow port. */
export function archiveObjects(blobs: Pick<Adapters['blobs'], 'put' | 'open' | 'list' | 'remove'>): ArchiveObjects {
  return {
    put: (key, bytes) => blobs.put(key, bytes),
    async get(key) {
      const chunks: Buffer[] = [];
      for await (const chunk of await blobs.open(key)) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    },
    list: async (prefix, startAfter) => (await blobs.list(prefix, startAfter)).map((k) => k.key),
    remove: (key) => blobs.remove(key),
  };
}

/**
 * The log read as one history of the archive and the brokers (ArchivedLog): every reader of
 * history (replay's rebuilds, swaps, exports; a staged upload's refill) goes through it, whether
 * archiving is on or not here, since another process may have archived and trimmed the topic.
 * Only the points topic is ever archived.
 */
export function archivedLog(adapters: Adapters, topics: Topics): ArchivedLog {
  return new ArchivedLog(adapters.log, archiveObjects(adapters.blobs), [topics.points]);
}
