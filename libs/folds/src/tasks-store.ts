import { LiveTasks, unavailable, type Position, type Task, type TaskEvent, type TaskReadModel, type TasksState, type UnfinishedTasks } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import type { TopicFollower } from '@meridian/kafka';
import type { FoldContext } from './fold-context.ts';
import { TaskEndWaiters } from './task-end-waiters.ts';
import { untilDone } from '@meridian/runtime';

/**
 * Task state for one process, bounded by what is live: the queued and running
 * tasks, and finished ones until the read model covers them. It starts from the read model
 * (its unfinished rows and the positions they cover) and follows the tasks topic's tail from
 * there, never from offset 0. What it let go, the read model answers for (`find`).
 */
export class TasksStore {
  private readonly live = new LiveTasks();
  private readonly follower: TopicFollower<TaskEvent>;
  private readonly context: FoldContext;
  readonly readModel: TaskReadModel;
  /** Ids of the batch being applied whose tasks the read model holds finished. */
  private finishedElsewhere: ReadonlySet<string> = new Set();
  private releaseTimer: NodeJS.Timeout | null = null;
  /** Tasks seen finishing since start, and the points of the succeeded ones (the api's metrics). */
  readonly finished = { succeeded: 0, failed: 0, points: 0 };
  /** Requests waiting for a task to end (long-poll), woken as the tail applies the event that ends it. */
  readonly ends = new TaskEndWaiters();

  constructor(context: FoldContext, role: string, readModel: TaskReadModel) {
    this.context = context;
    this.readModel = readModel;
    this.follower = context.log.follower<TaskEvent>({
      topic: context.topics.tasks,
      groupPrefix: `${context.groupPrefix}${role}-tasks-`,
      codec: createEventCodec<TaskEvent>(),
      logger: context.logger.child({ component: context.topics.tasks }),
      prepare: async (events) => {
        const ids = this.live.commandsToCheck(events.map(({ event, position }) => ({ event, ...position })));
        this.finishedElsewhere =
          ids.length === 0 ? new Set() : await untilDone('asking the tasks read model for finished tasks', () => readModel.finishedAmong(ids), context.logger);
      },
      apply: (event, position) => {
        const task = this.live.apply({ event, ...position }, this.finishedElsewhere);
        // A task that ends here is still in memory: it leaves only when a later release finds
        // the read model covering it, so its waiters read it as ended.
        this.ends.touched(task ?? undefined);
        if (task?.status === 'succeeded') {
          this.finished.succeeded++;
          this.finished.points += task.result?.points_accepted ?? 0;
        } else if (task?.status === 'failed') {
          this.finished.failed++;
        }
      },
    });
  }

  /** Queued and running tasks, and finished ones the read model may not show yet. */
  get state(): TasksState {
    return this.live.state;
  }

  /** User → queued or running tasks (the queued-tasks cap reads it). */
  get unfinished(): UnfinishedTasks {
    return this.live.unfinished;
  }

  /** Points of uploads in the log and not yet projected (LiveTasks.pointsAwaitingProjection). */
  get pointsAwaitingProjection(): number {
    return this.live.pointsAwaitingProjection;
  }

  get ready(): boolean {
    return this.follower.ready;
  }

  /** Events of the tasks topic read until caught up at start (the tail past the read model); null until then. */
  get eventsReadAtStart(): number | null {
    return this.follower.ready ? this.follower.readAtStart : null;
  }

  /**
   * Seeds from the read model (positions first, then the unfinished rows: a row ahead of the
   * positions is fine, its re-read events are skipped), then follows the tail. Resolves once
   * caught up with the log as it was at start.
   */
  async start(): Promise<void> {
    const { logger, startRetry, topics, log, limits } = this.context;
    const positions = await untilDone('reading the tasks read model positions', () => this.readModel.positions(), logger, startRetry);
    const rows = await untilDone('reading the unfinished tasks', () => this.readModel.unfinished(), logger, startRetry);
    this.live.seed(rows);
    await untilDone(
      `following ${topics.tasks}`,
      async () => {
        await log.connectAdmin();
        // The read model's positions are the last offsets it covers: the tail starts right after them.
        await this.follower.start(new Map([...positions].map(([partition, offset]) => [partition, offset + 1])));
      },
      logger,
      startRetry,
    );
    await this.follower.caughtUp;
    logger.info({ unfinished_rows: rows.length, tail_events: this.follower.readAtStart }, "tasks: started from the read model and the log's tail");
    this.releaseTimer = setInterval(() => void this.release(), limits.taskReleaseIntervalMs);
    this.releaseTimer.unref();
  }

  /** The task, from memory or else from the read model; 503 when the read model does not answer. */
  async find(taskId: string): Promise<Task | undefined> {
    const held = this.live.state.get(taskId);
    if (held) return held;
    try {
      return await this.readModel.get(taskId);
    } catch (cause) {
      throw unavailable('clickhouse', 'the tasks read model did not answer; retry later', cause);
    }
  }

  /** Resolves once the event at `position` has been applied here. */
  waitFor(position: Position | null): Promise<void> {
    return this.follower.waitFor(position);
  }

  /** Resolves once every event written so far (to the given partitions, or all) has been applied here. */
  syncToEnd(partitions?: readonly number[]): Promise<void> {
    return this.follower.syncToEnd(10_000, partitions);
  }

  async stop(): Promise<void> {
    if (this.releaseTimer) clearInterval(this.releaseTimer);
    await this.follower.stop();
  }

  /** Lets go of finished tasks the read model covers; a read model out of reach keeps them a while longer. */
  private async release(): Promise<void> {
    try {
      this.live.prune(await this.readModel.positions());
    } catch (error) {
      this.context.logger.debug({ err: error }, 'tasks read model positions unavailable; finished tasks stay in memory');
    }
  }
}
