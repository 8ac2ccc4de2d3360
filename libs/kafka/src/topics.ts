/** Every topic Meridian uses, named under one prefix so environments and test runs never meet. */
export type Topics = {
  /** Account events (users, keys, entitlements), keyed by user name. */
  readonly accounts: string;
  /**
   * Commands that start tasks (uploads, file definitions) and the tasks' lifecycle events,
   * keyed by task id: one ordered history per task.
   */
  readonly tasks: string;
  /** Point-batch facts, keyed by metric name. */
  readonly points: string;
  /** File facts, keyed by file id. */
  readonly files: string;
  /** Messages no handler could process, with the reason in their headers. */
  readonly deadLetter: string;
};

export function topicsFor(prefix: string): Topics {
  return {
    accounts: `${prefix}accounts`,
    tasks: `${prefix}tasks`,
    points: `${prefix}points`,
    files: `${prefix}files`,
    deadLetter: `${prefix}dead-letter`,
  };
}

/** The ingest worker's consumer groups, named under the topic prefix; the api reports their lag. */
export type ConsumerGroups = {
  /** Runs the commands of the tasks topic (uploads, file definitions); its transactional ids derive from it. */
  readonly commands: string;
  /** Projects the points topic into ClickHouse. */
  readonly projector: string;
  /** Projects the tasks topic into the tasks read model. */
  readonly tasksProjector: string;
  /** Projects the files topic into the files read model. */
  readonly filesProjector: string;
};

export function consumerGroupsFor(prefix: string): ConsumerGroups {
  return {
    commands: `${prefix}ingest-commands`,
    projector: `${prefix}ingest-projector`,
    tasksProjector: `${prefix}ingest-tasks-projector`,
    filesProjector: `${prefix}ingest-files-projector`,
  };
}

/**
 * How Meridian's topics are laid out when created. Partitions of the tasks topic bound the
 * commands the ingest worker runs at once (KAFKA_TASKS_PARTITIONS); partitions of the points
 * topic spread the projection (KAFKA_POINTS_PARTITIONS). Replication applies to every topic.
 */
export type TopicLayout = {
  readonly pointsPartitions: number;
  readonly tasksPartitions: number;
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
  /** How long archived point batches stay on the brokers (MERIDIAN_ARCHIVE_RETENTION_MS): sizes the points topic's segments. */
  readonly pointsRetentionMs: number;
};

export type TopicSpec = {
  readonly topic: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly minInsyncReplicas: number;
  /** The topic's segment.ms where Meridian sets it (points only); absent: the broker's default. */
  readonly segmentMs?: number;
};

const HOUR_MS = 3_600_000;

/**
 * The points topic's segment.ms: a tenth of the brokers' window, at least an hour. Kafka deletes
 * a segment file only once all of it lies below the log's start (where the trim moved it), and
 * rolls a segment at 1 GiB or 7 days by default: a 7-day window could then hold about 14 days
 * on disk. Segments of a tenth of the window hold at most 10% more than it; an hour is the floor
 * so that a short window does not cut the log into many small files.
 */
export function pointsSegmentMs(retentionMs: number): number {
  return Math.max(HOUR_MS, Math.floor(retentionMs / 10));
}

/**
 * The topics as they are created. Accounts and files stay at one partition: every process folds
 * them whole (no consumer group splits them, so more partitions would add no parallelism), and
 * one partition gives the fold one order across keys, which replay reproduces. Dead letters are
 * rare and read by people.
 */
export function topicSpecs(topics: Topics, layout: TopicLayout): TopicSpec[] {
  const replication = { replicationFactor: layout.replicationFactor, minInsyncReplicas: layout.minInsyncReplicas };
  return [
    { topic: topics.accounts, partitions: 1, ...replication },
    { topic: topics.tasks, partitions: layout.tasksPartitions, ...replication },
    { topic: topics.points, partitions: layout.pointsPartitions, ...replication, segmentMs: pointsSegmentMs(layout.pointsRetentionMs) },
    { topic: topics.files, partitions: 1, ...replication },
    { topic: topics.deadLetter, partitions: 1, ...replication },
  ];
}

/** What the cluster says of a topic that already exists. */
export type ExistingTopic = {
  readonly partitions: number;
  /** The fewest replicas any of its partitions has. */
  readonly replicationFactor: number;
  /** Its min.insync.replicas (its own, or the broker's default it inherits). */
  readonly minInsyncReplicas: number;
  /** Its segment.ms (its own, or the broker's default it inherits). */
  readonly segmentMs: number;
};

/** A property of an existing topic that differs from what the settings would create. */
export type TopicMismatch = {
  readonly topic: string;
  readonly property: 'partitions' | 'replication factor' | 'min.insync.replicas' | 'segment.ms';
  readonly actual: number;
  readonly wanted: number;
};

/** Why an existing topic that differs from its spec is kept as it is, and what an operator can do. */
export const WHY_KEPT: Readonly<Record<TopicMismatch['property'], string>> = {
  partitions: "adding partitions would move a key's later events away from its earlier ones and break their order (create a new topic prefix to get more)",
  'replication factor': "changing it is a partition reassignment (kafka-reassign-partitions), an operator's job",
  'min.insync.replicas': 'an operator changes it with kafka-configs --alter --entity-type topics --add-config min.insync.replicas=N',
  // kafkajs has only the non-incremental AlterConfigs, which would reset every other config of the topic (retention.ms=-1 among them).
  'segment.ms':
    'until it is set, the brokers keep trimmed point batches on disk until their whole segment is trimmed; an operator sets it with kafka-configs --alter --entity-type topics --add-config segment.ms=N',
};

/**
 * Where an existing topic differs from its spec. Meridian never alters an existing topic (the
 * caller warns instead): adding partitions would move a key's later events away from its
 * earlier ones, and replication is changed by a reassignment an operator runs. More partitions
 * than asked is no mismatch: the topic was made larger on purpose.
 */
export function topicMismatches(spec: TopicSpec, existing: ExistingTopic): TopicMismatch[] {
  const found: TopicMismatch[] = [];
  if (existing.partitions < spec.partitions) found.push({ topic: spec.topic, property: 'partitions', actual: existing.partitions, wanted: spec.partitions });
  if (existing.replicationFactor !== spec.replicationFactor) {
    found.push({ topic: spec.topic, property: 'replication factor', actual: existing.replicationFactor, wanted: spec.replicationFactor });
  }
  if (existing.minInsyncReplicas !== spec.minInsyncReplicas) {
    found.push({ topic: spec.topic, property: 'min.insync.replicas', actual: existing.minInsyncReplicas, wanted: spec.minInsyncReplicas });
  }
  if (spec.segmentMs !== undefined && existing.segmentMs !== spec.segmentMs) {
    found.push({ topic: spec.topic, property: 'segment.ms', actual: existing.segmentMs, wanted: spec.segmentMs });
  }
  return found;
}

/**
 * The warning for a replication factor below what the cluster could hold (up to 3): the
 * single-node default of 1 left on a cluster loses every event of a partition whose one broker
 * dies. Null when the replication is as high as the brokers allow, or 3 or more.
 */
export function replicationWarning(replicationFactor: number, brokers: number): string | null {
  if (replicationFactor >= Math.min(brokers, 3)) return null;
  return `Kafka has ${brokers} brokers but Meridian creates its topics with ${replicationFactor} replica(s) (KAFKA_REPLICATION_FACTOR): losing a broker would lose the events it alone holds; on a cluster set KAFKA_REPLICATION_FACTOR=3 and KAFKA_MIN_INSYNC_REPLICAS=2`;
}
