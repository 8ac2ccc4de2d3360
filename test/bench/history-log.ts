import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Admin, Kafka, Message, Producer } from 'kafkajs';
import {
  applyAccountEvent,
  composeApiKey,
  decideCreateUser,
  decideReplaceEntitlements,
  fileDefinedFrom,
  formatTimestamp,
  initialAccounts,
  type AccountEvent,
  type FileEvent,
  type MetricsUploadRequested,
  type TaskEvent,
} from '@meridian/domain';
import { createEventCodec, type EventCodec, type EventLike } from '@meridian/events';
import { createProducer, type Topics } from '@meridian/kafka';

/**
 * The synthetic history bench-history starts processes on, written straight to the log through
 * the real codec (not over HTTP, which would take hours for a million tasks): users made by the
 * account decisions, finished upload tasks spread over them, and files owned by a few of them.
 * Nothing here knows how a process keeps its state: it only writes what the api and ingest write.
 */
export type HistoryPlan = {
  readonly users: number;
  readonly tasks: number;
  readonly files: number;
  /** The first `fileOwners` users own the files, evenly (each as many as MERIDIAN_MAX_FILES_PER_USER allows by default at 100k). */
  readonly fileOwners: number;
  /** How many existing tasks to remember (with their owner) for the lookups. */
  readonly sample: number;
};

export type WrittenHistory = {
  /** The API key of user i. */
  readonly keys: readonly string[];
  readonly sampledTasks: ReadonlyArray<{ readonly task_id: string; readonly user: number }>;
  readonly events: number;
  readonly bytes: number;
  /** Writing the events, without moving the command group (finding a new group's coordinator takes Kafka seconds). */
  readonly ms: number;
};

/** Messages per send, and sends in flight (one per idempotent producer, as createProducer allows one request in flight). */
const BATCH_MESSAGES = 5000;
const SENDS_IN_FLIGHT = 4;
const DAY_MS = 86_400_000;
const SPAN_DAYS = 29;
const ACTOR = 'bench-history';

export const userName = (i: number) => `bench-u${String(i).padStart(4, '0')}`;
/** The metrics user i may write (its one rule: this prefix, rw). */
const metricPrefix = (i: number) => `bench.u${String(i).padStart(4, '0')}.`;

/**
 * Appends keyed messages to one topic in batches, several sends at once. A group (a task's
 * events) never straddles two batches: batches in flight on different producers may land in
 * any order, the events of one key within a batch keep theirs.
 */
class BatchedAppender {
  private batch: Message[] = [];
  private readonly idle: Producer[];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly topic: string;
  bytes = 0;
  count = 0;

  constructor(producers: readonly Producer[], topic: string) {
    this.idle = [...producers];
    this.topic = topic;
  }

  async add<E extends EventLike>(codec: EventCodec<E>, key: string, events: readonly E[]): Promise<void> {
    for (const e of events) {
      const value = codec.encode(e);
      this.bytes += value.length;
      this.batch.push({ key, value, headers: { type: e.type } });
    }
    this.count += events.length;
    if (this.batch.length >= BATCH_MESSAGES) await this.send();
  }

  private async send(): Promise<void> {
    if (this.batch.length === 0) return;
    while (this.idle.length === 0) await Promise.race(this.inFlight);
    const producer = this.idle.pop()!;
    const messages = this.batch;
    this.batch = [];
    const sent: Promise<void> = producer.send({ topic: this.topic, acks: -1, messages }).then(() => {
      this.inFlight.delete(sent);
      this.idle.push(producer);
    });
    this.inFlight.add(sent);
  }

  async flush(): Promise<void> {
    await this.send();
    await Promise.all(this.inFlight);
  }
}

/** A JSON upload body as clients send them: one metric, 1 to 20 values. */
function jsonBody(metric: string, at: number, values: number): Buffer {
  const points = Array.from({ length: values }, (_, k) => ({
    timestamp: formatTimestamp(at - (values - k) * 1000),
    value: Math.round(Math.random() * 1e4) / 100,
  }));
  return Buffer.from(JSON.stringify({ metric_name: metric, values: points }));
}

/** The three events of an upload that succeeded with nothing left to project: command, start, parse. */
function finishedUpload(task_id: string, user: number, at: number, i: number): TaskEvent[] {
  const metric = `${metricPrefix(user)}m${i % 5}`;
  // One upload in ten is a file (staged, bytes not in the event); the rest are JSON bodies carried inline.
  const file = i % 10 === 0;
  const values = 1 + (i % 20);
  const payload = file ? null : jsonBody(metric, at, values);
  const payloadBytes = payload?.length ?? 100_000 + ((i * 7919) % 10_000_000);
  const rows = file ? Math.floor(payloadBytes / 30) : values;
  const command: MetricsUploadRequested = {
    type: 'MetricsUploadRequested',
    task_id,
    user_name: userName(user),
    at,
    metric_name: metric,
    on_error: 'fail',
    source: file ? 'file' : 'json_body',
    payload,
    staged_object: file ? `staging/uploads/${task_id}/${randomUUID()}` : null,
    payload_bytes: payloadBytes,
    payload_sha256: createHash('sha256')
      .update(payload ?? task_id)
      .digest(),
    idempotency_key: null,
  };
  return [
    command,
    { type: 'TaskStarted', task_id, at: at + 5 },
    { type: 'UploadParsed', task_id, rows_total: rows, points_accepted: rows, rows_rejected: 0, errors: [], partitions: [], metrics: [metric], at: at + 40 },
  ];
}

/** Writes users, files and tasks under `topics`; then moves the ingest command group past the tasks, as a worker that ran them would have. */
export async function writeHistory(kafka: Kafka, admin: Admin, topics: Topics, commandGroup: string, plan: HistoryPlan): Promise<WrittenHistory> {
  const started = performance.now();
  const producers = Array.from({ length: SENDS_IN_FLIGHT }, () => createProducer(kafka));
  await Promise.all(producers.map((p) => p.connect()));
  try {
    // 29 days back: inside MERIDIAN_TASK_RETENTION_DAYS' default (30), so the read model keeps every task written.
    const from = Date.now() - SPAN_DAYS * DAY_MS;

    // Users through the account decisions, folded as they go (a decision reads the state before it).
    const accountsCodec = createEventCodec<AccountEvent>();
    const accounts = new BatchedAppender(producers, topics.accounts);
    let state = initialAccounts();
    const keys: string[] = [];
    for (let u = 0; u < plan.users; u++) {
      const name = userName(u);
      const key = composeApiKey(randomBytes(8), randomBytes(32));
      const created = decideCreateUser(state, { user_name: name, is_admin: false, key, at: from, actor: ACTOR });
      for (const e of created) state = applyAccountEvent(state, e);
      const granted = decideReplaceEntitlements(state, {
        user_name: name,
        rules: [{ match: 'prefix', value: metricPrefix(u), access: 'rw' }],
        at: from,
        actor: ACTOR,
      });
      for (const e of granted) state = applyAccountEvent(state, e);
      await accounts.add(accountsCodec, name, [...created, ...granted]);
      keys.push(key.api_key);
    }
    await accounts.flush();

    // Files: the fact a succeeded definition writes, from its command.
    const filesCodec = createEventCodec<FileEvent>();
    const files = new BatchedAppender(producers, topics.files);
    for (let f = 0; f < plan.files; f++) {
      const sha256 = createHash('sha256').update(`bench-file-${f}`).digest();
      const defined = fileDefinedFrom({
        type: 'FileDefinitionRequested',
        task_id: randomUUID(),
        file_id: randomUUID(),
        user_name: userName(f % plan.fileOwners),
        at: from + Math.floor((f * SPAN_DAYS * DAY_MS) / plan.files),
        file_name: `export-${f}.csv`,
        description: f % 3 === 0 ? 'daily export' : '',
        content_type: 'text/csv',
        staged_object: `staging/files/${f}`,
        size: 1000 + ((f * 7919) % 10_000_000),
        sha256,
        enforce_schema: false,
      });
      await files.add(filesCodec, defined.file_id, [defined]);
    }
    await files.flush();

    // Tasks, oldest first, over the span; a random sample of them kept for the lookups.
    const tasksCodec = createEventCodec<TaskEvent>();
    const tasks = new BatchedAppender(producers, topics.tasks);
    const sampleAt = new Set<number>();
    while (sampleAt.size < Math.min(plan.sample, plan.tasks)) sampleAt.add(Math.floor(Math.random() * plan.tasks));
    const sampledTasks: Array<{ task_id: string; user: number }> = [];
    for (let i = 0; i < plan.tasks; i++) {
      const user = Math.floor(Math.random() * plan.users);
      const task_id = randomUUID();
      if (sampleAt.has(i)) sampledTasks.push({ task_id, user });
      await tasks.add(tasksCodec, task_id, finishedUpload(task_id, user, from + Math.floor((i * SPAN_DAYS * DAY_MS) / Math.max(plan.tasks, 1)), i));
    }
    await tasks.flush();
    const ms = performance.now() - started;

    const ends = await admin.fetchTopicOffsets(topics.tasks);
    await admin.setOffsets({ groupId: commandGroup, topic: topics.tasks, partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })) });

    return { keys, sampledTasks, events: accounts.count + files.count + tasks.count, bytes: accounts.bytes + files.bytes + tasks.bytes, ms };
  } finally {
    await Promise.all(producers.map((p) => p.disconnect()));
  }
}
