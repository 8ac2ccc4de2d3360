import { randomUUID } from 'node:crypto';
import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccountEvent, BatchPayload, ConsumerRun, GroupConsumer, MetricsUploadRequested, Position, TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { startCommandConsumer } from '../../apps/ingest/src/commands/consumer.ts';
import type { CommandHandler, CommandHandlers, WorkerCommand } from '../../apps/ingest/src/commands/handlers.ts';
import type { IngestDeps } from '../../apps/ingest/src/ingest-deps.ts';
import { createPlatform, type Platform } from '../support/platform.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Every push writes an event to the tasks topic that the command consumer reads and passes by.
 * Committing its group's offset after each such batch cost the broker an OffsetCommit (a write to
 * __consumer_offsets) a push; the consumer commits at most once an interval instead, and still
 * moves the group past those events while they come.
 */
describe("the command consumer's offset commits (real Kafka)", () => {
  const settings = isolatedSettings();
  const logger = createLogger({ name: 'consumer-commits-int', level: settings.LOG_LEVEL });
  const platform: Platform = createPlatform(settings, logger, 'consumer-commits-int');
  const codec = createEventCodec<TaskEvent>();

  beforeAll(async () => {
    await platform.prepare();
  }, 120_000);

  afterAll(async () => {
    await platform.close();
  });

  it('commits fewer times than it handles batches, and the group passes the events without a handler, also once they stop', async () => {
    let batches = 0;
    let commits = 0;
    // The worker's log, its group consumer counted: batches handled, and kafkajs's commit requests.
    const log = new Proxy(platform.log, {
      get(target, prop) {
        if (prop === 'consumer') {
          return (options: Parameters<typeof target.consumer>[0]) => {
            const consumer: GroupConsumer = target.consumer(options);
            consumer.onBatchEnd(() => batches++);
            const kafkajs = Reflect.get(consumer, 'consumer') as Consumer;
            kafkajs.on(kafkajs.events.COMMIT_OFFSETS, () => commits++);
            return consumer;
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const deps: IngestDeps = { ...platform, log };
    const started = Date.now();
    const worker = await startCommandConsumer(deps, deps.options.commands, () =>
      Promise.resolve({ handlers: {} as CommandHandlers, stop: () => Promise.resolve() }),
    );
    try {
      const writer = await platform.log.writer();
      const release = async (): Promise<Position> => {
        const at = await appendEvents(writer, codec, platform.topics.tasks, randomUUID(), [{ type: 'TaskReleased', task_id: randomUUID(), at: Date.now() }]);
        return at!;
      };
      // One event at a time, each its own batch for the consumer: as pushes arrive.
      const written: Position[] = [];
      for (let i = 0; i < 30; i++) {
        written.push(await release());
        await new Promise((r) => setTimeout(r, 60));
      }
      // The group passes them once the interval has passed, whether events keep coming or not:
      // an idle group's lag comes to 0.
      const passed = async (positions: readonly Position[]) => {
        const [committed] = await platform.admin.fetchOffsets({ groupId: deps.groups.commands, topics: [platform.topics.tasks] });
        return positions.every((p) => Number(committed!.partitions.find((c) => c.partition === p.partition)?.offset ?? -1) > p.offset);
      };
      await waitFor('the group to pass every event', async () => ((await passed(written)) ? true : undefined), 30_000, 100);
      expect(batches).toBeGreaterThanOrEqual(30);
      expect(commits).toBeGreaterThan(0);
      // At most one commit a second (kafkajs' interval, counted from the consumer's start), however
      // long each append took on the machine; one a batch would be 30 or more.
      expect(commits).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 1000) + 1);
      expect(commits).toBeLessThan(batches);
    } finally {
      await worker.stop();
    }
  }, 120_000);

  it('never moves the group back behind a command whose transaction committed its offset while a plain commit was due', async () => {
    // The broker keeps the offset record it appended last: a plain commit of the batch's resolved
    // offset (the command's own) appended while the run's transaction is open wins over the
    // transaction's, and the group would stand at the ended command for its next owner to run again.
    const snapshots: number[] = [];
    const ends: Position[] = [];
    // The worker's log, its group consumer counting each read of the offsets to commit (the plain
    // commit's, on its timer) and telling where its batches end.
    const log = new Proxy(platform.log, {
      get(target, prop) {
        if (prop === 'consumer') {
          return (options: Parameters<typeof target.consumer>[0]) => {
            const consumer: GroupConsumer = target.consumer(options);
            consumer.onBatchEnd((end) => ends.push({ partition: end.partition, offset: Number(end.lastOffset) }));
            const run = consumer.run.bind(consumer);
            Object.assign(consumer, {
              run: (topic: string, config: ConsumerRun) =>
                run(topic, {
                  ...config,
                  eachBatch: (payload: BatchPayload) =>
                    config.eachBatch!({
                      ...payload,
                      uncommittedOffsets: () => {
                        snapshots.push(Date.now());
                        return payload.uncommittedOffsets();
                      },
                    }),
                }),
            });
            return consumer;
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const deps: IngestDeps = { ...platform, log };
    const writer = await platform.log.writer();
    await appendEvents(writer, createEventCodec<AccountEvent>(), platform.topics.accounts, 'ada', [
      { type: 'UserCreated', user_name: 'ada', is_admin: false, key_id: randomUUID(), secret_sha256: Buffer.alloc(32), at: Date.now(), actor: 'test' },
    ]);
    let ran!: () => void;
    let failed!: (error: unknown) => void;
    const runEnded = new Promise<void>((resolve, reject) => ((ran = resolve), (failed = reject)));
    // The one plain commit due during the run is the one the event before the command made due, an
    // interval after its batch ended (with one broker no other batch ends while the run holds its
    // fetch): long enough here for the run to reach its offset first on a loaded machine.
    const options = { ...deps.options.commands, commitIntervalMs: 5000 };
    const worker = await startCommandConsumer(deps, options, ({ tasks }) => {
      // An upload's shape: the offset joins at the transaction's open, the work takes past a plain commit, then the commit.
      const upload: CommandHandler<WorkerCommand> = {
        async run(_cmd, run) {
          const tx = await run.producer.transaction();
          try {
            await tasks.commitCommand(tx, run.at);
            // Else this run would not show the case: the plain commit read its offsets before the command's joined.
            expect(snapshots).toHaveLength(0);
            await waitFor('a plain commit due while the run is open', () => (snapshots.length > 0 ? true : undefined), 15_000, 20);
            await tx.commit();
            ran();
          } catch (error) {
            await tx.abort().catch(() => undefined);
            failed(error);
            throw error;
          }
        },
        refuse: () => Promise.reject(new Error('not refused here')),
      };
      return Promise.resolve({ handlers: { MetricsUploadRequested: upload, FileDefinitionRequested: upload }, stop: () => Promise.resolve() });
    });
    let at: Position;
    try {
      const taskId = randomUUID();
      // An event without a handler first, its batch ended: a plain commit is due, of an offset resolved since the last.
      const before = (await appendEvents(writer, codec, platform.topics.tasks, taskId, [{ type: 'TaskReleased', task_id: randomUUID(), at: Date.now() }]))!;
      await waitFor('its batch to end', () => (ends.some((e) => e.partition === before.partition && e.offset >= before.offset) ? true : undefined), 30_000, 20);
      const command: MetricsUploadRequested = {
        type: 'MetricsUploadRequested',
        task_id: taskId,
        user_name: 'ada',
        at: Date.now(),
        metric_name: null,
        on_error: 'skip',
        source: 'json_body',
        payload: null,
        staged_object: null,
        payload_bytes: 0,
        payload_sha256: Buffer.alloc(32),
        idempotency_key: null,
      };
      at = (await appendEvents(writer, codec, platform.topics.tasks, taskId, [command]))!;
      expect(at.partition).toBe(before.partition);
      await runEnded;
    } finally {
      // Stopped right after the run, before its batch's next plain commit (an interval later) could cover a regression up.
      await worker.stop();
    }
    // A transaction's offset applies once its markers are written, after its commit has answered.
    let committed: number | undefined;
    await waitFor(
      'the group to stand past the command',
      async () => {
        committed = (await platform.log.committedOffsets(deps.groups.commands, platform.topics.tasks)).get(at.partition);
        return committed === at.offset + 1 ? true : undefined;
      },
      5_000,
    ).catch(() => undefined);
    expect(committed).toBe(at.offset + 1);
  }, 120_000);
});
