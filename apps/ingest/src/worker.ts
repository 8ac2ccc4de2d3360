import type { Platform } from '@meridian/platform';

export type RunningWorker = { stop(): Promise<void> };

/**
 * Joins the ingest consumer group on the commands topic. The command handlers and the
 * projector arrive with the uploads issue; for now the worker proves it joins and consumes.
 */
export async function startIngest(platform: Platform): Promise<RunningWorker> {
  const { kafka, topics, settings, logger } = platform;
  const consumer = kafka.consumer({
    groupId: `${settings.MERIDIAN_TOPIC_PREFIX}ingest-commands`,
    sessionTimeout: settings.KAFKA_SESSION_TIMEOUT_MS,
  });
  consumer.on(consumer.events.GROUP_JOIN, (e) => logger.info({ group: e.payload.groupId, assignment: e.payload.memberAssignment }, 'joined consumer group'));
  await consumer.connect();
  await consumer.subscribe({ topic: topics.commands, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      logger.debug({ partition, offset: message.offset }, 'command received');
    },
  });
  return { stop: () => consumer.disconnect() };
}
