export { createKafka, createProducer, ensureTopics, DEFAULT_LOG_COMPRESSION, type KafkaOptions } from './client.ts';
export { LOG_COMPRESSIONS, type LogCompression, ZSTD_SYNC_MAX_BYTES } from './compression.ts';
export {
  topicsFor,
  consumerGroupsFor,
  topicSpecs,
  replicationWarning,
  WHY_KEPT,
  type ConsumerGroups,
  type Topics,
  type TopicLayout,
  type TopicSpec,
  type ExistingTopic,
  type TopicMismatch,
} from './topics.ts';
export { appendEvents, eventMessage } from './append.ts';
export { TopicFollower, type FollowerOptions } from './follow.ts';
export { ConsumerWatch, notServing, type ConsumerState, type ConsumerEvent } from './consumer-watch.ts';
export { KafkaEventLog } from './event-log.ts';
export { partitionFor } from './partition.ts';
export { advertisingAssigner, capabilitiesOf } from './capabilities.ts';
export { DeletionLog, metricsByPartition, type AppendedDeletion, type DeletionLogDeps, type DeletionWriter } from './deletion-log.ts';
export { ArchivedLog } from './archive/archived-log.ts';
export { archivePass, type ArchivePass, type ArchiverDeps, type ArchiverLog, type ArchiveTail } from './archive/archiver.ts';
export { archiveLag, readArchiveStatus, type ArchiveStatus, type PartitionArchiveLag } from './archive/lag.ts';
export { trimPass, type TrimDeps, type TrimLog } from './archive/trim.ts';
export type { ChainEnds } from './archive/chain-ends.ts';
export { archiveChains, archivePrefix, chainSpan, type ArchiveObjects, type SegmentEntry, type SegmentRef } from './archive/archive-index.ts';
