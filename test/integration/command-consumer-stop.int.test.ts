import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCommandConsumer } from '../../apps/ingest/src/commands/consumer.ts';
import type { CommandHandlers } from '../../apps/ingest/src/commands/handlers.ts';
import type { IngestDeps } from '../../apps/ingest/src/ingest-deps.ts';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * Review 3, finding 1: on SIGTERM the handlers' work beside the commands (the files' blob
 * collector) must stop when the shutdown starts, not after the consumer's grace: a removal it
 * started in the grace and a SIGKILL cut would leave a committed file without its bytes.
 */
describe("the command consumer's shutdown (real Kafka)", () => {
  const settings = isolatedSettings();
  const logger = createLogger({ name: 'consumer-stop-int', level: settings.LOG_LEVEL });
  const platform: Platform = createPlatform(settings, logger, 'consumer-stop-int');

  beforeAll(async () => {
    await platform.prepare();
  }, 120_000);

  afterAll(async () => {
    await platform.close();
  });

  it("stops the handlers' work beside the commands before the group consumer has stopped", async () => {
    const order: string[] = [];
    // The worker's log, its group consumer telling when its stop has ended.
    const log = new Proxy(platform.log, {
      get(target, prop) {
        if (prop === 'consumer') {
          return (options: Parameters<typeof target.consumer>[0]) => {
            const consumer = target.consumer(options);
            const stop = consumer.stop.bind(consumer);
            Object.assign(consumer, {
              async stop() {
                await stop();
                order.push('consumer stopped');
              },
            });
            return consumer;
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const deps: IngestDeps = { ...platform, log };
    const worker = await startCommandConsumer(deps, deps.options.commands, async () => ({
      handlers: {} as CommandHandlers, // no command is sent: only the shutdown's order is looked at
      async stop() {
        order.push('handlers stopping');
      },
    }));
    await worker.stop();
    expect(order).toEqual(['handlers stopping', 'consumer stopped']);
  }, 120_000);
});
