import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** Following tasks, the folds' snapshots, and the read models in ClickHouse. */
export const tasksSettings = {
  MERIDIAN_TASK_MAX_WAIT_SECONDS: {
    schema: z.coerce.number().int().min(0).max(3600),
    default: '30',
    doc: "Longest GET /api/v1/tasks/{task_id}?wait=N holds its answer waiting for the task to end; a larger wait is shortened to it (0 turns waiting off). The request timeout and the connection's idle timeout are extended by the wait.",
  },
  MERIDIAN_MAX_TASK_WAITERS_PER_USER: {
    schema: positiveInt,
    default: '16',
    doc: 'Task long-polls (GET /api/v1/tasks/{task_id}?wait=N) one api instance holds at once for one user; the next gets 429 /problems/too-many.',
  },
  MERIDIAN_SNAPSHOT_EVERY_EVENTS: {
    schema: z.coerce.number().int().min(0),
    default: '10000',
    doc: 'A process that writes snapshots of a folded log (the accounts log, by the api and the ingest worker) writes one once the log has moved this many offsets past the newest snapshot it has seen. Bounds what a new process reads at start to the snapshot plus about this many events; 0 writes none (starts still use those there are).',
  },
  MERIDIAN_SNAPSHOT_MIN_INTERVAL_MS: {
    schema: z.coerce.number().int().min(0),
    default: '60000',
    doc: 'Least time between two snapshots of one log written by one process: bounds the storage writes and the pause (serializing the state) a busy log costs.',
  },
  MERIDIAN_SNAPSHOT_KEEP: {
    schema: z.coerce.number().int().min(1).max(100),
    default: '3',
    doc: 'Snapshots kept per log (the newest); older ones are removed after each write. A start skips a snapshot it cannot read and takes the next older one, or the log from offset 0.',
  },
  MERIDIAN_TASK_RETENTION_DAYS: {
    schema: z.coerce.number().positive(),
    default: '30',
    doc: 'Days a finished task stays in the tasks read model after its last change; the ingest process then removes it (GET /api/v1/tasks/{id} answers 404). The log keeps every task (meridian replay rebuild tasks --swap-if-verified restores them). An Idempotency-Key is honoured for as long as its task is kept.',
  },
  MERIDIAN_TASK_RETENTION_INTERVAL_MS: {
    schema: z.coerce.number().int().min(100),
    default: '3600000',
    doc: 'How often the ingest process removes tasks past MERIDIAN_TASK_RETENTION_DAYS from the read model (when any is due: one ALTER TABLE ... DELETE per read-model table, background mutations in ClickHouse).',
  },
  MERIDIAN_TASK_RELEASE_INTERVAL_MS: {
    schema: z.coerce.number().int().min(50),
    default: '1000',
    doc: "How often api and ingest processes read the tasks read model's positions to let go of finished tasks it covers: how long a finished task stays in their memory after the read model has it.",
  },
  MERIDIAN_READ_MODEL_MARKER_FLUSH_MS: {
    schema: positiveInt,
    default: '100',
    doc: "How long the tasks and files projectors gather positions past transaction markers (every committed transaction ends in a fetch of markers only) before writing them as one row per partition: fewer tiny parts in ClickHouse, at the cost of this much delay before the positions reach the log's end.",
  },
  MERIDIAN_READ_MODEL_QUERY_TIMEOUT_MS: {
    schema: positiveInt,
    default: '5000',
    doc: 'Longest one query of the tasks or files read model (a lookup, a list, usage, positions) may take in ClickHouse; past it the query is abandoned and counts as ClickHouse unavailable: the api answers 503 (retry later), a projector retries.',
  },
} as const;
