import type { LogMessage, LogTransaction, MetricsDeleted, PointsFact, Position, TaskEvent, TopicAcknowledgement } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { eventMessage } from './append.ts';
import { partitionFor } from './partition.ts';
import { withTimeout } from '@meridian/observability';

/** A transactional writer of this api instance's own, and a new producer under its id (which settles what the old one left open). */
export type DeletionWriter = { transaction(): Promise<LogTransaction>; renew(): Promise<void> };

export type DeletionLogDeps = {
  readonly writer: DeletionWriter;
  readonly topics: { readonly points: string; readonly tasks: string };
  readonly partitions: () => Promise<{ readonly points: number; readonly tasks: number }>;
  readonly pointsCodec: EventCodec<PointsFact>;
  readonly taskCodec: EventCodec<TaskEvent>;
  /** Longest a transaction may take (MERIDIAN_KAFKA_ACK_TIMEOUT_MS); past it the writer is renewed, which ends it. */
  readonly deadlineMs: number;
  /**
   * Whether the markers take the rollups along (PointsDeleted.rollups): true for a user's
   * deletions, false for retention's, whose rollups outlive the raw points.
   */
  readonly rollups: boolean;
};

/** The metrics of a deletion grouped by the points partition each lives in (its name is the batches' key). */
export function metricsByPartition(metrics: readonly string[], pointsPartitions: number): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const name of metrics) {
    const p = partitionFor(name, pointsPartitions);
    out.set(p, [...(out.get(p) ?? []), name]);
  }
  return new Map([...out].sort(([a], [b]) => a - b));
}

/** A deletion in the log: its MetricsDeleted's position, and the points partitions holding its markers. */
export type AppendedDeletion = { readonly position: Position; readonly partitions: readonly number[] };

/**
 * Writes deletions to the log, one transaction each, one at a time (deletions are rare): a
 * PointsDeleted marker in every points partition holding a selected metric, and the MetricsDeleted
 * that makes the task, on the tasks topic. Together or not at all: a marker never lands without
 * the task that waits for it, nor a task without its markers. Resolves with the task event's
 * position and the points partitions its markers went to, once Kafka has the commit from every
 * in-sync replica.
 */
export class DeletionLog {
  private readonly deps: DeletionLogDeps;
  private last: Promise<unknown> = Promise.resolve();

  constructor(deps: DeletionLogDeps) {
    this.deps = deps;
  }

  append(deletion: Omit<MetricsDeleted, 'type' | 'partitions'>): Promise<AppendedDeletion> {
    const run = this.last.catch(() => undefined).then(() => this.commitWithin(deletion));
    this.last = run;
    return run;
  }

  private async commitWithin(deletion: Omit<MetricsDeleted, 'type' | 'partitions'>): Promise<AppendedDeletion> {
    const commit = this.commit(deletion);
    commit.catch(() => undefined);
    try {
      return await withTimeout(commit, this.deps.deadlineMs, "a deletion's transaction");
    } catch (error) {
      // Its outcome is unknown until the writer is renewed (a commit cut short may land yet).
      await withTimeout(this.deps.writer.renew(), this.deps.deadlineMs, 'renewing the deletion writer').catch(() => undefined);
      throw error;
    }
  }

  private async commit(deletion: Omit<MetricsDeleted, 'type' | 'partitions'>): Promise<AppendedDeletion> {
    const { topics, pointsCodec, taskCodec } = this.deps;
    const counts = await this.deps.partitions();
    const byPartition = metricsByPartition(deletion.metrics, counts.points);
    const markers: LogMessage[] = [...byPartition].map(([partition, metrics]) => ({
      ...eventMessage(pointsCodec, deletion.task_id, {
        type: 'PointsDeleted',
        task_id: deletion.task_id,
        metrics,
        from_ms: deletion.from_ms,
        to_ms: deletion.to_ms,
        rollups: this.deps.rollups,
      }),
      partition,
    }));
    const event: MetricsDeleted = { type: 'MetricsDeleted', ...deletion, partitions: [...byPartition.keys()] };
    const taskPartition = partitionFor(deletion.task_id, counts.tasks);
    const tx = await this.deps.writer.transaction();
    let acks: TopicAcknowledgement[];
    try {
      const task = { topic: topics.tasks, acks: -1 as const, messages: [{ ...eventMessage(taskCodec, deletion.task_id, event), partition: taskPartition }] };
      acks = await tx.sendAll(markers.length > 0 ? [{ topic: topics.points, acks: -1, messages: markers }, task] : [task]);
      await tx.commit();
    } catch (error) {
      if (tx.isActive()) await tx.abort().catch(() => undefined);
      throw error;
    }
    const ack = acks.find((a) => a.topic === topics.tasks && a.partition === taskPartition);
    if (ack?.baseOffset === undefined) throw new Error(`no acknowledgement for ${topics.tasks} partition ${taskPartition}`);
    return { position: { partition: taskPartition, offset: Number(ack.baseOffset) }, partitions: event.partitions };
  }
}
