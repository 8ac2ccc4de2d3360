import type { LogRanges } from '@meridian/domain';
import { archivePrefix, type ArchiveObjects } from './archive-index.ts';

/**
 * What the last archiving pass saw, per partition, written by the pass at its end: where the
 * archive ends, and the timestamp of the first record it read and left unarchived (a tail not
 * old enough to be cut), null when it left none.
 */
export type ArchiveStatus = {
  readonly topic: string;
  /** When the pass ended (ms). */
  readonly at: number;
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly end: number; readonly oldestUnarchived: number | null }>;
};

/** How far a partition's archive is behind the log, as /metrics reports it. */
export type PartitionArchiveLag = {
  readonly partition: number;
  /** Offsets between the archive's end and the log's last stable offset (transaction markers included). */
  readonly offsets: number;
  /**
   * Age (ms) of the oldest record not archived: from its timestamp when the last pass read it;
   * since the last pass when it came after it (an upper bound); 0 when every offset is archived.
   */
  readonly oldestUnarchivedAgeMs: number;
};

export const statusKey = (topic: string): string => `${archivePrefix(topic)}status.json`;

export async function writeArchiveStatus(objects: ArchiveObjects, status: ArchiveStatus): Promise<void> {
  await objects.put(statusKey(status.topic), Buffer.from(JSON.stringify(status)));
}

/** The last pass's status, or null when no pass has ended yet (or archiving never ran). */
export async function readArchiveStatus(objects: ArchiveObjects, topic: string): Promise<ArchiveStatus | null> {
  if (!(await objects.list(statusKey(topic))).includes(statusKey(topic))) return null;
  return JSON.parse((await objects.get(statusKey(topic))).toString('utf8')) as ArchiveStatus;
}

/**
 * Per partition, the archive's lag behind the log now: the offsets from the archive's end (as the
 * last pass left it) to the last stable offset, and the age of the oldest record among them. A
 * stalled archiver shows as both growing. Null when no pass has ended yet.
 */
export async function archiveLag(
  log: Pick<LogRanges, 'offsets'>,
  objects: ArchiveObjects,
  topic: string,
  now = Date.now(),
): Promise<PartitionArchiveLag[] | null> {
  const [status, { low, end }] = await Promise.all([readArchiveStatus(objects, topic), log.offsets(topic)]);
  if (status === null) return null;
  const seen = new Map(status.partitions.map((p) => [p.partition, p]));
  return [...end]
    .sort((a, b) => a[0] - b[0])
    .map(([partition, lso]) => {
      const last = seen.get(partition);
      // A partition the last pass did not list (added since) has archived nothing: it lags from where its log begins.
      const offsets = Math.max(0, lso - (last?.end ?? low.get(partition) ?? 0));
      if (offsets === 0) return { partition, offsets, oldestUnarchivedAgeMs: 0 };
      const since = last?.oldestUnarchived ?? status.at;
      return { partition, offsets, oldestUnarchivedAgeMs: Math.max(0, now - since) };
    });
}
