import { randomUUID } from 'node:crypto';
import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GroupConsumer, Position, TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { startCommandConsumer } from '../../apps/ingest/src/commands/consumer.ts';
import type { CommandHandlers } from '../../apps/ingest/src/commands/handlers.ts';
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
});
