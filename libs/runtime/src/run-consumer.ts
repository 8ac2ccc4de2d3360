import type { ConsumerRun, GroupConsumer } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import { untilDone, type UntilDoneOptions } from './until-done.ts';

/**
 * Runs a group consumer on one topic from the beginning, retrying what a fresh or busy Kafka
 * answers at first (see untilDone); a failed attempt disconnects, so the next one starts clean.
 */
export async function runConsumer(consumer: GroupConsumer, topic: string, config: ConsumerRun, logger: Logger, startRetry: UntilDoneOptions): Promise<void> {
  await untilDone(`consuming ${topic}`, () => consumer.run(topic, config), logger, startRetry);
}
