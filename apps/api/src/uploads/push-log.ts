import type { LogMessage, LogRecord, LogTransaction, MetricsPushed, PointsFact, Position, TaskEvent, TopicAcknowledgement } from '@meridian/domain';
import type { EventCodec } from '@meridian/events';
import { eventMessage, partitionFor } from '@meridian/kafka';
import { withTimeout, type Logger } from '@meridian/observability';
import type { EncodedBatch } from './push-decision.ts';

/** A decided push as it goes to the log: its batches, and its task's event but for the partitions the batches take. */
export type PushToLog = { readonly batches: readonly EncodedBatch[]; readonly pushed: Omit<MetricsPushed, 'type' | 'partitions'> };

export type PushLogDeps = {
  /**
   * Transactional writers of this api instance's own (each id fences a predecessor's open
   * transaction), each running one transaction at a time: while one's commit completes on the
   * broker (a new transaction on the same id would be refused as concurrent until it has), the
   * next group goes on another.
   */
  readonly writers: readonly PushWriter[];
  /** Longest a transaction may take; past it the writer is renewed, which ends it (MERIDIAN_KAFKA_ACK_TIMEOUT_MS). */
  readonly deadlineMs: number;
  readonly topics: { readonly points: string; readonly tasks: string };
  /** Partitions of the points and tasks topics, as the broker has them: a record's partition is chosen here, to know its offset. */
  readonly partitions: () => Promise<{ readonly points: number; readonly tasks: number }>;
  readonly pointsCodec: EventCodec<PointsFact>;
  readonly taskCodec: EventCodec<TaskEvent>;
  /** Most bytes of point batches per points partition in one produce request (the broker's record batch bound). */
  readonly bytesPerPartition: number;
  /** Most bytes of point batches in one transaction: what the pushes waiting together may hold. */
  readonly bytesPerTransaction: number;
  readonly logger: Logger;
  /** Told of each committed transaction and the pushes it held. */
  readonly committed?: (pushes: number) => void;
};

/** A transactional writer: its transactions, and a new producer under its id, which fences the old one and settles what it left open. */
export type PushWriter = { transaction(): Promise<LogTransaction>; renew(): Promise<void> };

/** A push waiting for a transaction; `queuedAt` (performance.now()) times its wait for a writer. */
type Waiting = { readonly push: PushToLog; readonly bytes: number; readonly queuedAt: number; resolve(at: Position): void; reject(error: unknown): void };

/** One produce request of a transaction: its records per topic, and where each push's task event sits in it. */
type Request = {
  readonly points: LogMessage[];
  readonly tasks: LogMessage[];
  readonly bytesByPartition: Map<number, number>;
  readonly taskSlots: Array<{ readonly waiting: Waiting; readonly partition: number; readonly index: number }>;
};

/**
 * Writes pushes to the log, each whole or not at all, in transactions shared by the pushes that
 * arrive together (a group commit): while every writer has a transaction under way the next
 * pushes wait, then go together in the next one that starts. Each push's batches, a seal after them in each points partition they
 * took (the projector announces the push once the rows before its seal are stored), and its
 * MetricsPushed on the tasks topic commit together; a push resolves with the position of its
 * MetricsPushed once Kafka has the commit from every in-sync replica. A transaction costs Kafka
 * a few requests whatever it holds, so many producers share that cost instead of each paying it.
 * A failed transaction fails every push in it, and none of them is visible (consumers read committed).
 */
export class PushLog {
  private readonly deps: PushLogDeps;
  private readonly queue: Waiting[] = [];
  private readonly idle: PushWriter[];

  constructor(deps: PushLogDeps) {
    if (deps.writers.length === 0) throw new Error('a push log needs at least one writer');
    this.deps = deps;
    this.idle = [...deps.writers];
  }

  append(push: PushToLog): Promise<Position> {
    const bytes = push.batches.reduce((n, b) => n + b.value.byteLength, 0);
    return new Promise((resolve, reject) => {
      this.queue.push({ push, bytes, queuedAt: performance.now(), resolve, reject });
      this.drain();
    });
  }

  /**
   * Starts a transaction on every idle writer while pushes wait; each takes the pushes waiting
   * when it starts. A transaction that fails or outlasts the deadline leaves its outcome unknown
   * (a commit cut short may land yet): the writer is renewed before the pushes are told, so that
   * by then the transaction has committed or aborted for good, and the log read to its end says
   * which (the caller's part: a push whose task is there was stored).
   */
  private drain(): void {
    while (this.queue.length > 0 && this.idle.length > 0) {
      // The writer idle longest: the broker completes a commit after answering it, and a writer's
      // next transaction begun before that is refused as concurrent and retried after a wait.
      const writer = this.idle.shift()!;
      const group = this.takeGroup();
      void this.commitWithin(writer, group, this.deps.writers.indexOf(writer))
        .then(
          (positions) => {
            this.deps.committed?.(group.length);
            group.forEach((w, i) => w.resolve(positions[i]!));
          },
          async (error: unknown) => {
            this.deps.logger.warn({ err: error, pushes: group.length }, 'a transaction of pushes failed; its writer is renewed, which settles it');
            await withTimeout(writer.renew(), this.deps.deadlineMs, 'renewing a push writer').catch((renewal: unknown) =>
              this.deps.logger.warn({ err: renewal }, 'a push writer could not be renewed yet; its next transaction tries again'),
            );
            for (const w of group) w.reject(error);
          },
        )
        .finally(() => {
          this.idle.push(writer);
          this.drain();
        });
    }
  }

  private commitWithin(writer: PushWriter, group: readonly Waiting[], index: number): Promise<Position[]> {
    const commit = this.commit(writer, group, index);
    commit.catch(() => undefined); // told through the race below, or too late to matter once renewed
    return withTimeout(commit, this.deps.deadlineMs, 'a transaction of pushes');
  }

  /** The pushes waiting, in order, up to the transaction's bytes (always at least one). */
  private takeGroup(): Waiting[] {
    let bytes = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || bytes + this.queue[n]!.bytes <= this.deps.bytesPerTransaction)) bytes += this.queue[n++]!.bytes;
    return this.queue.splice(0, n);
  }

  /** One transaction for the group; returns each push's MetricsPushed position, in the group's order. */
  private async commit(writer: PushWriter, group: readonly Waiting[], index: number): Promise<Position[]> {
    const { topics } = this.deps;
    const started = performance.now();
    const partitions = await this.deps.partitions();
    const requests = this.requests(group, partitions);
    const tx = await writer.transaction();
    const positions = new Map<Waiting, Position>();
    let sent = started;
    try {
      for (const request of requests) {
        // A request of a split push's middle batches holds no task event.
        const records: LogRecord[] = request.tasks.length > 0 ? [{ topic: topics.tasks, acks: -1, messages: request.tasks }] : [];
        if (request.points.length > 0) records.unshift({ topic: topics.points, acks: -1, messages: request.points });
        const acks = await tx.sendAll(records);
        for (const slot of request.taskSlots)
          positions.set(slot.waiting, { partition: slot.partition, offset: baseOffset(acks, topics.tasks, slot.partition) + slot.index });
      }
      sent = performance.now();
      await tx.commit();
    } catch (error) {
      if (tx.isActive()) await tx.abort().catch(() => undefined);
      throw error;
    }
    // After the try: nothing here may turn a committed transaction into failed pushes.
    this.timed(group, index, requests.length, started, sent);
    return group.map((w) => positions.get(w)!);
  }

  /**
   * The group's records in produce requests, each within the broker's bound per points
   * partition. A push starts a request of its own when it does not fit whole in the one being
   * filled, and goes on into the next ones when it is larger than the bound itself (its batches
   * are each within it: the batchers cut them at it); its seal in a partition follows its last
   * batch there, and its MetricsPushed is in the last request it takes. The requests go in order
   * in one transaction, so a push split over several is still written whole or not at all.
   */
  private requests(group: readonly Waiting[], partitions: { readonly points: number; readonly tasks: number }): Request[] {
    const { taskCodec, bytesPerPartition } = this.deps;
    const requests: Request[] = [];
    let current: Request | null = null;
    const tasksIndex = new Map<number, number>();
    const next = (): Request => {
      current = { points: [], tasks: [], bytesByPartition: new Map(), taskSlots: [] };
      requests.push(current);
      tasksIndex.clear();
      return current;
    };
    for (const waiting of group) {
      const { pushed } = waiting.push;
      const shares = sharesByPartition(waiting.push.batches, partitions.points);
      const fits = (r: Request) => [...shares].every(([p, share]) => (r.bytesByPartition.get(p) ?? 0) + share.bytes <= bytesPerPartition);
      let request: Request = current === null || !fits(current) ? next() : current;
      for (const [partition, share] of [...shares].sort(([a], [b]) => a - b)) {
        for (const b of share.batches) {
          const held = request.bytesByPartition.get(partition) ?? 0;
          if (held > 0 && held + b.value.byteLength > bytesPerPartition) request = next();
          request.points.push({ key: b.key, value: Buffer.from(b.value.buffer, b.value.byteOffset, b.value.byteLength), partition });
          request.bytesByPartition.set(partition, (request.bytesByPartition.get(partition) ?? 0) + b.value.byteLength);
        }
        request.points.push({ key: pushed.task_id, value: this.sealOf(pushed.task_id, share.points), partition });
      }
      const event: MetricsPushed = { type: 'MetricsPushed', ...pushed, partitions: [...shares.keys()].sort((a, b) => a - b) };
      const taskPartition = partitionFor(pushed.task_id, partitions.tasks);
      const index = tasksIndex.get(taskPartition) ?? 0;
      tasksIndex.set(taskPartition, index + 1);
      request.tasks.push({ ...eventMessage(taskCodec, pushed.task_id, event), partition: taskPartition });
      request.taskSlots.push({ waiting, partition: taskPartition, index });
    }
    return requests;
  }

  /**
   * Where a committed transaction's time went, at debug level: the longest wait of its pushes
   * for a writer, its produce requests (AddPartitionsToTxn, retried while the coordinator still
   * completes the writer's last commit, then the records with acks=all) and its commit (EndTxn).
   */
  private timed(group: readonly Waiting[], writer: number, requests: number, started: number, sent: number): void {
    const { logger } = this.deps;
    if (!logger.isLevelEnabled('debug')) return;
    const ms = (n: number) => Math.round(n * 10) / 10;
    const waited = Math.max(...group.map((w) => started - w.queuedAt));
    const done = performance.now();
    logger.debug(
      { pushes: group.length, writer, requests, waited_ms: ms(waited), produce_ms: ms(sent - started), commit_ms: ms(done - sent) },
      'a transaction of pushes committed',
    );
  }

  private sealOf(taskId: string, points: number): Buffer {
    return this.deps.pointsCodec.encode({ type: 'UploadSealed', task_id: taskId, points });
  }
}

/** A push's batches by the points partition their keys go to, with their points and bytes there. */
function sharesByPartition(batches: readonly EncodedBatch[], partitions: number): Map<number, { points: number; bytes: number; batches: EncodedBatch[] }> {
  const shares = new Map<number, { points: number; bytes: number; batches: EncodedBatch[] }>();
  for (const b of batches) {
    const p = partitionFor(b.key, partitions);
    let share = shares.get(p);
    if (!share) shares.set(p, (share = { points: 0, bytes: 0, batches: [] }));
    share.points += b.points;
    share.bytes += b.value.byteLength;
    share.batches.push(b);
  }
  return shares;
}

function baseOffset(acks: readonly TopicAcknowledgement[], topic: string, partition: number): number {
  const ack = acks.find((a) => a.topic === topic && a.partition === partition);
  if (ack?.baseOffset === undefined) throw new Error(`no acknowledgement for ${topic} partition ${partition}`);
  return Number(ack.baseOffset);
}
