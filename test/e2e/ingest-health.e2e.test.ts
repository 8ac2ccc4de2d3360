import { afterAll, describe, expect, it } from 'vitest';
import { AssignerProtocol, type Consumer, type PartitionAssigner } from 'kafkajs';
import { createKafka } from '@meridian/kafka';
import { createLogger } from '@meridian/observability';
import { createPlatform } from '../support/platform.ts';
import { freePort } from '../support/ports.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitFor } from '../support/wait.ts';

const logger = createLogger({ name: 'test', level: 'silent' });

/**
 * A group member of another application that assigns partitions its own way: a group admits
 * only members that share a protocol, so Kafka refuses any other member's join with
 * INCONSISTENT_GROUP_PROTOCOL, an error kafkajs does not retry (its consumer crashes with
 * restart=false). A real misconfiguration: two applications given one group id.
 */
const foreignAssigner: PartitionAssigner = () => ({
  name: 'ForeignAssigner',
  version: 1,
  async assign({ members }) {
    return members.map((m) => ({
      memberId: m.memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: {}, userData: Buffer.alloc(0) }),
    }));
  },
  protocol({ topics }) {
    return { name: 'ForeignAssigner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }) };
  },
});

describe("the ingest worker's probe listener", () => {
  const started: AppProcess[] = [];
  const consumers: Consumer[] = [];
  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    await Promise.all(consumers.map((c) => c.disconnect()));
  });

  it('answers /healthz at once, and /readyz 200 once the dependencies answer and its four consumers joined', async () => {
    const port = await freePort();
    const ingest = startApp('ingest', isolatedSettings({ MERIDIAN_INGEST_HEALTH_PORT: String(port) }));
    started.push(ingest);
    const health = await waitFor('/healthz', async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined)) ?? undefined, 60_000, 100);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await waitFor(
      '/readyz 200',
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/readyz`);
        return res.status === 200 ? res.json() : undefined;
      },
      90_000,
      250,
    );
    expect(ready).toEqual({
      status: 'ready',
      checks: {
        kafka: { status: 'up' },
        clickhouse: { status: 'up' },
        minio: { status: 'up' },
        'commands consumer': { status: 'up' },
        'projector consumer': { status: 'up' },
        'tasks projector consumer': { status: 'up' },
        'files projector consumer': { status: 'up' },
      },
    });
    expect(ingest.output()).toContain('joined consumer group');
    const missing = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    expect((await fetch(`http://127.0.0.1:${port}/healthz`, { method: 'POST' })).status).toBe(405);
  });

  it('/readyz is 503 naming ClickHouse while it cannot be reached; /healthz stays 200', async () => {
    const port = await freePort();
    const ingest = startApp(
      'ingest',
      isolatedSettings({ MERIDIAN_INGEST_HEALTH_PORT: String(port), CLICKHOUSE_URL: 'http://127.0.0.1:1', MERIDIAN_READY_TIMEOUT_MS: '1500' }),
    );
    started.push(ingest);
    const health = await waitFor('/healthz', async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined)) ?? undefined, 60_000, 100);
    expect(health.status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as { status: string; checks: Record<string, { status: string }> };
    expect(body.status).toBe('unavailable');
    expect(body.checks.clickhouse).toEqual({ status: 'down' });
    expect(body.checks.kafka).toEqual({ status: 'up' });
    expect(body.checks.consumers).toEqual({ status: 'down' }); // still preparing: no consumer runs yet
  });

  it('a consumer Kafka refuses for good ends the process with exit 1, naming why', async () => {
    const settings = isolatedSettings({ MERIDIAN_INGEST_HEALTH_PORT: String(await freePort()) });
    // The foreign member holds the command consumer's group before the worker starts.
    const platform = createPlatform(settings, logger, 'test');
    try {
      await platform.prepareTopics();
    } finally {
      await platform.close();
    }
    const foreign = createKafka({ brokers: settings.KAFKA_BROKERS.split(','), clientId: 'foreign-app', logger }).consumer({
      groupId: `${settings.MERIDIAN_TOPIC_PREFIX}ingest-commands`,
      partitionAssigners: [foreignAssigner],
    });
    consumers.push(foreign);
    let joined!: () => void;
    const joinedOnce = new Promise<void>((resolve) => {
      joined = resolve;
    });
    foreign.on(foreign.events.GROUP_JOIN, () => joined());
    await foreign.connect();
    await foreign.subscribe({ topic: `${settings.MERIDIAN_TOPIC_PREFIX}tasks` });
    await foreign.run({ eachMessage: async () => {} });
    await joinedOnce;

    const ingest = startApp('ingest', settings);
    started.push(ingest);
    const code = await new Promise<number | null>((resolve) => ingest.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(ingest.output()).toMatch(/an ingest consumer failed for good/);
    expect(ingest.output()).toMatch(/commands failed for good: .*protocol/i);
  });
});
