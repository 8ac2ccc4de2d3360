import type { LogRanges, Offsets } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import type { ArchiveObjects } from './archive-index.ts';
import { chainEnds, type ChainEnds } from './chain-ends.ts';

export type TrimLog = Pick<LogRanges, 'offsets' | 'offsetsAtTime'> & {
  /** The offsets a consumer group has committed on a topic (absent: none). */
  committedOffsets(groupId: string, topic: string): Promise<Offsets>;
  /** Makes each partition's log begin at its offset (Kafka's DeleteRecords). */
  deleteRecordsBelow(topic: string, below: Offsets): Promise<void>;
};

export type TrimDeps = {
  readonly log: TrimLog;
  readonly objects: ArchiveObjects;
  readonly topic: string;
  /** The live projector's group: nothing it has not projected leaves the brokers. */
  readonly projectorGroup: string;
  readonly retentionMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
  /**
   * Where the archive ends, as the archive pass just before saw it and wrote it (its
   * `chainEnds`): the index is then not listed. At most the true end (the index only grows), so
   * the trim may keep more, never remove what is not archived. Absent: the whole index is listed.
   */
  readonly chainEnds?: ChainEnds;
};

/**
 * Removes from the brokers, per partition, the records that are at once older than the retention
 * (by record timestamp), archived and verified (below the archive's contiguous end) and
 * projected (below the projector group's committed offset). Returns where each partition's log
 * begins afterwards. Kafka's retention.ms stays -1 on the topic: time alone never removes a record.
 */
export async function trimPass(deps: TrimDeps): Promise<Offsets> {
  const now = (deps.now ?? Date.now)();
  const [{ low }, old, projected, archivedEnds] = await Promise.all([
    deps.log.offsets(deps.topic),
    deps.log.offsetsAtTime(deps.topic, now - deps.retentionMs),
    deps.log.committedOffsets(deps.projectorGroup, deps.topic),
    deps.chainEnds ?? chainEnds(deps.objects, deps.topic, []),
  ]);
  const below: Offsets = new Map();
  for (const [p, lo] of low) {
    const archived = archivedEnds.get(p)?.end ?? 0;
    const target = Math.min(archived, projected.get(p) ?? 0, old.get(p) ?? 0);
    if (target > lo) below.set(p, target);
  }
  if (below.size > 0) {
    await deps.log.deleteRecordsBelow(deps.topic, below);
    deps.logger.info({ topic: deps.topic, below: Object.fromEntries(below) }, 'archived records older than the retention left the brokers');
  }
  return new Map([...low].map(([p, lo]) => [p, below.get(p) ?? lo]));
}
