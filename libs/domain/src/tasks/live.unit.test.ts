import { describe, expect, it } from 'vitest';
import type { MetricsUploadRequested } from '../uploads/events.ts';
import type { TaskEvent } from './events.ts';
import { LiveTasks, type PositionedEvent } from './live.ts';
import { finishedStatus, type TaskRow } from './read-model.ts';
import { applyTaskEvent, initialTasks, type Task, type TasksState } from './state.ts';

const requested = (task_id: string, user_name = 'ada'): MetricsUploadRequested => ({
  type: 'MetricsUploadRequested',
  task_id,
  user_name,
  at: 1,
  metric_name: 'cpu',
  on_error: 'fail',
  source: 'json_body',
  payload: Buffer.from('{}'),
  staged_object: null,
  payload_bytes: 2,
  payload_sha256: Buffer.alloc(32, 1),
  idempotency_key: 'k',
});
const started = (task_id: string): TaskEvent => ({ type: 'TaskStarted', task_id, at: 2 });
const parsed = (task_id: string, partitions: number[]): TaskEvent => ({
  type: 'UploadParsed',
  task_id,
  rows_total: 1,
  points_accepted: 1,
  rows_rejected: 0,
  errors: [],
  partitions,
  metrics: ['cpu'],
  at: 3,
});
const projected = (task_id: string, partition: number): TaskEvent => ({ type: 'UploadSegmentProjected', task_id, partition, at: 4 });
const failed = (task_id: string): TaskEvent => ({ type: 'TaskFailed', task_id, reason: 'x', rows_total: 0, rows_rejected: 0, errors: [], at: 5 });

/** A log on one partition: each event at its index. */
const positioned = (events: TaskEvent[]): PositionedEvent[] => events.map((event, offset) => ({ event, partition: 0, offset }));

/** What the read model holds once it covers `upTo`: the full fold's rows, with the offset of each task's last change. */
function readModelAt(log: PositionedEvent[], upTo: number): { rows: Map<string, TaskRow>; state: TasksState } {
  const state = initialTasks();
  const rows = new Map<string, TaskRow>();
  for (const e of log.slice(0, upTo + 1)) {
    const before = JSON.stringify(state.get(e.event.task_id) ?? null);
    applyTaskEvent(state, e.event);
    const task = state.get(e.event.task_id);
    if (task && JSON.stringify(task) !== before) rows.set(task.task_id, { task: structuredClone(task), partition: 0, offset: e.offset });
  }
  return { rows, state };
}

/** Feeds `events` to `live` in batches, answering its duplicate check from `finished`. */
function feed(live: LiveTasks, events: PositionedEvent[], finished: (ids: string[]) => Set<string>, batch = 3): void {
  for (let i = 0; i < events.length; i += batch) {
    const chunk = events.slice(i, i + batch);
    const answer = finished(live.commandsToCheck(chunk));
    for (const e of chunk) live.apply(e, answer);
  }
}

function randomLog(seed: number, tasks: number): TaskEvent[] {
  let s = seed;
  const random = (n: number) => (s = (s * 1103515245 + 12345) % 2 ** 31) % n;
  const log: TaskEvent[] = [];
  for (let step = 0; step < tasks * 6; step++) {
    const id = `t${random(tasks)}`;
    const pick = random(7);
    log.push(
      pick === 0
        ? requested(id, `u${random(3)}`)
        : pick === 1
          ? started(id)
          : pick === 2
            ? parsed(id, random(2) === 0 ? [] : [0, 1])
            : pick === 3
              ? projected(id, random(2))
              : pick === 4
                ? failed(id)
                : pick === 5
                  ? requested(id)
                  : started(id),
    );
  }
  return log;
}

const unfinishedOf = (state: TasksState) => new Map([...state].filter(([, t]) => !finishedStatus(t.status)));

describe('the live tasks fold, bounded by what is unfinished', () => {
  it('holds every unfinished task as the full fold has it, whatever part of the history the read model covers at start', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const log = positioned(randomLog(seed, 12));
      const full = readModelAt(log, log.length - 1).state;
      for (const cut of [-1, 5, 20, log.length - 1]) {
        const model = readModelAt(log, cut);
        const live = new LiveTasks();
        live.seed([...model.rows.values()].filter((r) => !finishedStatus(r.task.status)).map((r) => ({ ...r, task: structuredClone(r.task) })));
        // The duplicate check answers from the read model as it was: it only grows.
        feed(
          live,
          log.slice(cut + 1),
          (ids) =>
            new Set(
              ids.filter((id) => {
                const t = model.state.get(id);
                return t !== undefined && finishedStatus(t.status);
              }),
            ),
        );
        for (const [id, task] of unfinishedOf(full)) expect(live.state.get(id), `seed ${seed}, cut ${cut}, ${id}`).toEqual(task);
        for (const [id, task] of live.state) expect(full.get(id), `seed ${seed}, cut ${cut}, ${id}`).toEqual(task);
        const counts = new Map<string, number>();
        for (const t of unfinishedOf(full).values()) counts.set(t.user_name, (counts.get(t.user_name) ?? 0) + 1);
        expect(live.unfinished).toEqual(counts);
      }
    }
  });

  it('ignores a command repeated after its task finished and left memory: the read model answers that it is finished', () => {
    const live = new LiveTasks();
    const log = positioned([requested('a'), started('a'), parsed('a', []), requested('a')]);
    feed(live, log.slice(0, 3), () => new Set());
    expect(live.state.get('a')?.status).toBe('succeeded');
    expect(live.prune(new Map([[0, 2]]))).toBe(1);
    expect(live.state.has('a')).toBe(false);
    expect(live.commandsToCheck(log.slice(3))).toEqual(['a']);
    expect(live.apply(log[3]!, new Set(['a']))).toBeNull();
    expect(live.state.has('a')).toBe(false);
    expect(live.unfinished.size).toBe(0);
  });

  it('asks the read model only about commands that may repeat an id: not about an upload sent without an Idempotency-Key', () => {
    const live = new LiveTasks();
    const keyless: MetricsUploadRequested = { ...requested('random'), idempotency_key: null };
    expect(live.commandsToCheck(positioned([keyless, requested('keyed'), started('random')]))).toEqual(['keyed']);
  });

  it('keeps a finished task until the read model covers the event that finished it', () => {
    const live = new LiveTasks();
    feed(live, positioned([requested('a'), requested('b'), failed('a'), started('b')]), () => new Set());
    expect(live.prune(new Map([[0, 1]]))).toBe(0);
    expect(live.state.get('a')?.status).toBe('failed');
    expect(live.prune(new Map([[1, 9]]))).toBe(0); // another partition's position covers nothing here
    expect(live.prune(new Map([[0, 2]]))).toBe(1);
    expect([...live.state.keys()]).toEqual(['b']);
  });

  it('does not count a start twice when a seeded row is ahead of the positions the tail starts from', () => {
    const log = positioned([requested('a'), started('a'), started('a')]);
    const ahead = readModelAt(log, 2).rows.get('a')!;
    const live = new LiveTasks();
    live.seed([{ ...ahead, task: structuredClone(ahead.task) }]);
    feed(live, log.slice(1), () => new Set()); // the positions said 0: offsets 1 and 2 are read again
    expect((live.state.get('a') as Task).open_runs).toBe(2);
  });
});
