import type { RowError, TaskCommand, TaskEvent } from './events.ts';

export type TaskStatus = 'queued' | 'running' | 'succeeded' | 'failed';
export type TaskKind = 'metrics_upload' | 'file_definition' | 'points_rebuild' | 'points_deletion';

export type MetricsUploadResult = {
  points_accepted: number;
  rows_rejected: number;
  metrics: readonly string[];
  file_id?: never;
  generation?: never;
  points_selected?: never;
};
/** A defined file: its id (for GET /file/download/{file_id}), size and hex SHA-256. */
export type FileDefinitionResult = {
  file_id: string;
  size: number;
  sha256: string;
  points_accepted?: never;
  rows_rejected?: never;
  metrics?: never;
  generation?: never;
  points_selected?: never;
};
/** A finished rebuild: the generation (null: a separate database) and table it wrote, its counts, its verification, whether it is live. */
export type PointsRebuildResult = {
  generation: number | null;
  database: string;
  table: string;
  events: number;
  points: number;
  verified: boolean | null;
  swapped: boolean;
  points_accepted?: never;
  rows_rejected?: never;
  metrics?: never;
  file_id?: never;
  points_selected?: never;
};

/** A deletion: the metrics it reached and the points it selected when accepted (points projected before its markers go too). */
export type PointsDeletionResult = {
  points_selected: number;
  metrics: readonly string[];
  points_accepted?: never;
  rows_rejected?: never;
  file_id?: never;
  generation?: never;
};

export type Task = {
  readonly task_id: string;
  readonly kind: TaskKind;
  readonly user_name: string;
  status: TaskStatus;
  readonly created_at: number;
  updated_at: number;
  rows_done: number;
  rows_total: number | null;
  /** What a finished task produced: counts and the metrics written, or the file defined. */
  result: MetricsUploadResult | FileDefinitionResult | PointsRebuildResult | PointsDeletionResult | null;
  errors: readonly RowError[];
  reason: string | null;
  /** Points partitions still to be projected before the task is done. */
  pending_partitions: number[];
  /**
   * Runs of the command that started and then neither ended (an outcome) nor were released:
   * each is a worker that died while on it. The crash-loop breaker reads it (decideStart).
   */
  open_runs: number;
  readonly idempotency_key: string | null;
  readonly payload_sha256: string;
  /** What an upload asked for besides its bytes (uploadRequest); a retry must ask the same. */
  readonly upload_request?: string;
  /** Bytes the command carried or staged (a pending file counts against its owner's quota). Set by the fold. */
  readonly payload_bytes?: number;
  /** The file a file definition will have; null for other kinds. Set by the fold. */
  readonly file_id?: string | null;
};

/**
 * Which status each event may move a task from, and to. Anything else is ignored, so
 * late events (progress after success, a second projection, a start after the end) cannot
 * move a finished task. Each TaskStarted is one run of the command (the worker writes it once
 * per run), so starts are counted; replaying the log counts the same.
 */
export const taskTransitions: Readonly<
  Record<Exclude<TaskEvent['type'], TaskCommand['type']>, { from: readonly TaskStatus[]; to: TaskStatus | 'same' | 'decided' }>
> = {
  // A second start is a new run after a crash or a release: counted, the status stays.
  TaskStarted: { from: ['queued', 'running'], to: 'running' },
  TaskReleased: { from: ['running'], to: 'same' },
  TaskProgress: { from: ['queued', 'running'], to: 'running' },
  UploadParsed: { from: ['queued', 'running'], to: 'decided' }, // succeeded when nothing is left to project
  UploadSegmentProjected: { from: ['running'], to: 'decided' },
  TaskFailed: { from: ['queued', 'running'], to: 'failed' },
  FileDefinitionSucceeded: { from: ['queued', 'running'], to: 'succeeded' },
  RebuildSucceeded: { from: ['queued', 'running'], to: 'succeeded' },
};

export type TasksState = Map<string, Task>;

export function initialTasks(): TasksState {
  return new Map();
}

/** The fold over the tasks topic: deterministic, no I/O; updates the map in place. */
export function applyTaskEvent(state: TasksState, event: TaskEvent): TasksState {
  if (isTaskCommand(event)) {
    if (state.has(event.task_id)) return state;
    state.set(event.task_id, queuedTask(event));
    // A push arrives decided: its outcome applies as a worker's UploadParsed would.
    if (event.type === 'MetricsPushed') {
      const { task_id, at, rows_total, points_accepted, rows_rejected, errors, partitions, metrics } = event;
      applyTaskEvent(state, { type: 'UploadParsed', task_id, at, rows_total, points_accepted, rows_rejected, errors, partitions, metrics });
    }
    // A deletion arrives decided too: it waits for its markers' partitions only.
    if (event.type === 'MetricsDeleted') {
      const task = state.get(event.task_id)!;
      task.result = { points_selected: event.points, metrics: event.metrics };
      task.pending_partitions = [...event.partitions];
      task.status = task.pending_partitions.length === 0 ? 'succeeded' : 'running';
    }
    return state;
  }
  const task = state.get(event.task_id);
  if (!task || !taskTransitions[event.type].from.includes(task.status)) return state;
  task.updated_at = Math.max(task.updated_at, event.at);
  switch (event.type) {
    case 'TaskStarted':
      task.status = 'running';
      task.open_runs += 1; // until it is released, this run counts as one that died
      break;
    case 'TaskReleased':
      task.open_runs = Math.max(0, task.open_runs - 1);
      break;
    case 'TaskProgress':
      task.status = 'running';
      task.rows_done = Math.max(task.rows_done, event.rows_done);
      break;
    case 'UploadParsed':
      task.rows_done = event.rows_total;
      task.rows_total = event.rows_total;
      task.errors = event.errors;
      task.result = { points_accepted: event.points_accepted, rows_rejected: event.rows_rejected, metrics: event.metrics };
      task.pending_partitions = [...event.partitions];
      task.status = task.pending_partitions.length === 0 ? 'succeeded' : 'running';
      break;
    case 'UploadSegmentProjected':
      task.pending_partitions = task.pending_partitions.filter((p) => p !== event.partition);
      if (task.pending_partitions.length === 0 && task.result !== null) task.status = 'succeeded';
      break;
    case 'RebuildSucceeded':
      task.status = 'succeeded';
      task.rows_done = Math.max(task.rows_done, event.points);
      task.rows_total = task.rows_done;
      task.result = {
        generation: event.generation,
        database: event.database,
        table: event.table,
        events: event.events,
        points: event.points,
        verified: event.verified,
        swapped: event.swapped,
      };
      break;
    case 'FileDefinitionSucceeded':
      task.status = 'succeeded';
      task.result = { file_id: event.file_id, size: event.size, sha256: event.sha256.toString('hex') };
      break;
    case 'TaskFailed':
      task.status = 'failed';
      task.reason = event.reason;
      // A failure found after parsing carries no row errors: keep the ones parsing reported.
      if (event.errors.length > 0 || task.result === null) task.errors = event.errors;
      // A failure found after parsing (a batch the projector could not store) carries no count: keep the parsed one.
      if (task.rows_total === null || event.rows_total > 0) task.rows_total = event.rows_total;
      task.rows_done = task.rows_total;
      break;
    default: {
      const never: never = event;
      return never;
    }
  }
  return state;
}

/** Whether the event creates a task (a second one for the same id is ignored). */
export function isTaskCommand(event: TaskEvent): event is TaskCommand {
  return (
    event.type === 'MetricsUploadRequested' ||
    event.type === 'MetricsPushed' ||
    event.type === 'FileDefinitionRequested' ||
    event.type === 'RebuildRequested' ||
    event.type === 'MetricsDeleted'
  );
}

function queuedTask(event: TaskCommand): Task {
  const common = {
    task_id: event.task_id,
    user_name: event.user_name,
    status: 'queued' as const,
    created_at: event.at,
    updated_at: event.at,
    rows_done: 0,
    rows_total: null,
    result: null,
    errors: [],
    reason: null,
    pending_partitions: [],
    open_runs: 0,
  };
  if (event.type === 'MetricsDeleted') {
    return { ...common, kind: 'points_deletion', idempotency_key: null, payload_sha256: '', payload_bytes: 0, file_id: null };
  }
  if (event.type === 'RebuildRequested') {
    return { ...common, kind: 'points_rebuild', idempotency_key: null, payload_sha256: '', payload_bytes: 0, file_id: null };
  }
  if (event.type === 'FileDefinitionRequested') {
    return {
      ...common,
      kind: 'file_definition',
      idempotency_key: null,
      payload_sha256: event.sha256.toString('hex'),
      payload_bytes: event.size,
      file_id: event.file_id,
    };
  }
  return {
    ...common,
    kind: 'metrics_upload',
    idempotency_key: event.idempotency_key,
    payload_sha256: event.payload_sha256.toString('hex'),
    upload_request: uploadRequest(event),
    payload_bytes: event.payload_bytes,
    file_id: null,
  };
}

/**
 * The parameters of an upload that decide what it stores, besides its bytes: two requests
 * under one Idempotency-Key are the same upload only when these and the bytes are equal.
 */
export function uploadRequest(cmd: { readonly source: string; readonly metric_name: string | null; readonly on_error: string }): string {
  return JSON.stringify([cmd.source, cmd.metric_name, cmd.on_error]);
}

export function foldTasks(events: Iterable<TaskEvent>): TasksState {
  const state = initialTasks();
  for (const e of events) applyTaskEvent(state, e);
  return state;
}
