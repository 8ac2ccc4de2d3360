import {
  applyFileEvent,
  catalogOf,
  DomainError,
  InfrastructureError,
  unavailable,
  type Caller,
  type FileEvent,
  type FileListQuery,
  type FileReadModel,
  type FilesState,
} from '@meridian/domain';
import type { Position } from '@meridian/domain';
import { withTimeout, type Logger } from '@meridian/observability';

export type FileCatalogDeps = {
  readonly readModel: FileReadModel;
  /** Per files partition, the offset after its last record now (Kafka's high watermark, as a read-committed client sees it). */
  readonly logEnds: () => Promise<ReadonlyMap<number, number>>;
  /** Appends events to the files topic keyed by file id (acks=all); their last position, null for none. */
  readonly append: (fileId: string, events: readonly FileEvent[]) => Promise<Position | null>;
  readonly ackTimeoutMs: number;
  /** How long a request waits for the files projection to reach an offset (MERIDIAN_FILES_READ_MODEL_WAIT_MS). */
  readonly waitMs: number;
  readonly logger: Logger;
};

/** Between two reads of the read model's positions while waiting for the projection. */
const POLL_MS = 25;

/**
 * The file catalog as the api sees it: the files read model in ClickHouse, which the
 * ingest worker's files projector writes from the files topic. The api holds no file in memory.
 *
 * What each decision reads:
 * - A file's own commands (describe, share, unshare, delete) decide on its row read once the read
 *   model covers the files log as it is now (every acknowledged command of any process counts), or
 *   not at all: 503 when the projection does not get there within the bound. Commands of one
 *   process run one at a time up to their append; processes racing each other are ordered by the
 *   log, and the projection keeps the first write, as the fold does.
 * - Lookups and lists read the read model; an id it does not show (or a list while a definition
 *   of the caller has succeeded but is not shown yet) waits, bounded, for the projection to reach
 *   the log's end first, so a file is found right after its task succeeded on any instance.
 * - The quota and the files cap (define-routes.ts, quota.ts) read usage after the same wait, but decide past the
 *   bound with what the read model holds: the definitions in flight are counted from the tasks
 *   in memory either way.
 * - After its own command an instance answers with the state it decided (it knows its own) and
 *   waits, bounded, for the read model to show it, so the caller's next read sees it.
 */
export class FileCatalog {
  private readonly deps: FileCatalogDeps;
  private commands: Promise<unknown> = Promise.resolve();

  constructor(deps: FileCatalogDeps) {
    this.deps = deps;
  }

  /** The live file (the caller checks access). */
  get(fileId: string) {
    return answered(this.deps.readModel.get(fileId));
  }

  /** The rows of these ids, deleted ones included. */
  rows(fileIds: readonly string[]) {
    return answered(this.deps.readModel.rows(fileIds));
  }

  list(caller: Caller, query: FileListQuery) {
    return answered(this.deps.readModel.list(caller, query));
  }

  usage(owners: readonly string[]) {
    return answered(this.deps.readModel.usage(owners));
  }

  /** Whether the read model covers `target` (per partition, the last offset wanted) within the bound. */
  covers(target: ReadonlyMap<number, number>): Promise<boolean> {
    return answered(this.coversNow(target));
  }

  private async coversNow(target: ReadonlyMap<number, number>): Promise<boolean> {
    const deadline = Date.now() + this.deps.waitMs;
    for (;;) {
      const positions = await this.deps.readModel.positions();
      if ([...target].every(([p, offset]) => (positions.get(p) ?? -1) >= offset)) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** Whether the read model covers the files log as it is now, within the bound. */
  async current(): Promise<boolean> {
    const ends = await answered(this.deps.logEnds());
    const covered = await this.covers(new Map([...ends].filter(([, end]) => end > 0).map(([p, end]) => [p, end - 1])));
    if (!covered) this.deps.logger.warn({ ends: Object.fromEntries(ends) }, "the files read model did not reach the files log's end in time");
    return covered;
  }

  /**
   * Runs a command on one file: decides on its row once the read model covers the log, appends
   * the events keyed by the file id (acks=all, bounded), and returns the file's state after them.
   * Commands of this process run one at a time up to their append; the wait for the read model to
   * show the change comes after, outside that order (the next command waits for the log's end,
   * which holds this append, anyway). A command still queued when `signal` aborts (its request
   * timed out and the client was told to retry) is dropped, so it never appends after the answer.
   */
  async execute(fileId: string, decide: (state: FilesState) => FileEvent[], signal?: AbortSignal): Promise<FilesState> {
    const givenUp = () => {
      if (signal?.aborted) throw new DomainError('unavailable', 'the request was given up before its command ran; retry later');
    };
    const run = async () => {
      givenUp();
      if (!(await this.current())) throw new DomainError('unavailable', 'the file catalog is catching up with the log; retry later');
      givenUp();
      const state = catalogOf(await this.rows([fileId]));
      const events = decide(state);
      try {
        // Bounded like an upload's append, so one stuck send cannot hold every command behind it.
        const position = await withTimeout(this.deps.append(fileId, events), this.deps.ackTimeoutMs, 'kafka');
        return { state, events, position };
      } catch (cause) {
        throw new DomainError('unavailable', 'the event log did not acknowledge the change in time; retry later', [], { cause });
      }
    };
    const appended = this.commands.then(run, run);
    this.commands = appended.catch(() => undefined);
    const { state, events, position } = await appended;
    for (const event of events) applyFileEvent(state, event);
    if (position && !(await this.covers(new Map([[position.partition, position.offset]])))) {
      this.deps.logger.warn({ file_id: fileId, position }, 'the files read model does not show a change yet; answered from the decided state');
    }
    return state;
  }
}

/** A read model or log that does not answer: 503, retry later (never a 500). */
async function answered<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (cause) {
    if (cause instanceof DomainError || cause instanceof InfrastructureError) throw cause;
    throw unavailable('clickhouse', 'the file catalog did not answer; retry later', cause);
  }
}
