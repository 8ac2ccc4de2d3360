import type { Consumer, ConsumerRunConfig } from 'kafkajs';
import type { Platform } from './platform.ts';
import { untilDone } from './until-done.ts';

/**
 * Connects a consumer, subscribes it to one topic from the beginning and runs it, retrying what
 * a fresh or busy Kafka answers at first (see untilDone); a failed attempt disconnects, so the
 * next one starts clean.
 */
export async function runConsumer(platform: Platform, consumer: Consumer, topic: string, config: ConsumerRunConfig): Promise<void> {
  await untilDone(`consuming ${topic}`, async () => {
    try {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run(config);
    } catch (error) {
      await consumer.disconnect().catch(() => undefined);
      throw error;
    }
  }, platform.logger, platform.startRetry);
}
