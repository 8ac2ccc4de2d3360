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

export type TopicSpec = { readonly topic: string; readonly partitions: number };

/**
 * The topics and their partitions when created. Tasks partitions bound the commands the ingest
 * worker runs at once (KAFKA_TASKS_PARTITIONS); points partitions spread the projection.
 */
export function topicSpecs(topics: Topics, pointsPartitions: number, tasksPartitions: number): TopicSpec[] {
  return [
    { topic: topics.accounts, partitions: 1 },
    { topic: topics.tasks, partitions: tasksPartitions },
    { topic: topics.points, partitions: pointsPartitions },
    { topic: topics.files, partitions: 1 },
    { topic: topics.deadLetter, partitions: 1 },
  ];
}
