import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { READS_STAGED_UPLOADS } from '@meridian/domain';
import { KafkaEventLog } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

/**
 * A consumer group's members advertise what their release can do (libs/kafka/src/capabilities.ts),
 * and MERIDIAN_UPLOAD_STAGING=auto stages an upload only while every points projector advertises
 * that it reads staged uploads. Here, against a real broker: a group of members that all advertise
 * it answers yes; a member of an older release (kafkajs' own assigner, advertising nothing) joining
 * makes it answer no until it leaves; a group nobody is in answers no.
 */
describe('consumer group capabilities', () => {
  const settings = isolatedSettings();
  const log = new KafkaEventLog({
    brokers: settings.KAFKA_BROKERS.split(','),
    clientId: 'int-capabilities',
    logger: createLogger({ name: 't', level: 'silent' }),
  });
  const topic = `${settings.MERIDIAN_TOPIC_PREFIX}capabilities`;
  const group = `${settings.MERIDIAN_TOPIC_PREFIX}projector`;
  const options = { groupId: group, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, maxWaitTimeMs: 100 };
  const idle = { eachMessage: async () => undefined };
  const advertises = (capability = READS_STAGED_UPLOADS) => log.groupAdvertises(group, capability);
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    await log.admin.connect();
    await log.admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  });
  afterAll(async () => {
    await Promise.allSettled(stops.map((stop) => stop()));
    await log.close();
  });

  it('a group nobody has joined answers no', async () => {
    expect(await advertises()).toBe(false);
  });

  it('answers yes while every member advertises the capability, no while one of an older release is in the group', async () => {
    const current = log.consumer({ ...options, advertise: [READS_STAGED_UPLOADS] });
    stops.push(() => current.stop());
    await current.run(topic, idle);
    await waitFor('the group of one advertising member to answer yes', async () => ((await advertises()) ? true : undefined), 30_000, 100);
    expect(await advertises('something-else')).toBe(false);

    // An older release's member: kafkajs' round robin under the same protocol name, no capabilities.
    const older = log.consumer(options);
    await older.run(topic, idle);
    await waitFor(
      'the group to count the older member and answer no',
      async () => {
        const { groups } = await log.admin.describeGroups([group]);
        return groups[0]!.state === 'Stable' && groups[0]!.members.length === 2 && !(await advertises()) ? true : undefined;
      },
      30_000,
      100,
    );

    await older.stop();
    await waitFor('the group without the older member to answer yes again', async () => ((await advertises()) ? true : undefined), 30_000, 100);
  });
});
