import { randomUUID } from 'node:crypto';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { taskIdFor } from '../../apps/api/src/uploads/task-id.ts';
import { call } from '../support/api.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { faultWorld } from '../support/fault-setup.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

const MAX_STARTS = 3;
const TASKS_PARTITIONS = 3;
// Small point batches make the upload's run last seconds (about a thousand sends in its
// transaction), far longer than the moment between its logged start and the kill.
const POINTS = 2_000_000;

/**
 * No crash loop: a command on which the ingest process dies is started MAX_STARTS times by
 * real processes killed with SIGKILL while they run it; the next process fails its task
 * with the reason, sets it aside in the dead-letter topic, and moves its partition on: an
 * upload queued behind it on the same partition succeeds, in the same living process.
 */
describe.each(['off', 'on'] as const)(`a command that stops the worker ${MAX_STARTS} times, staging %s`, (staging) => {
  const settings = isolatedSettings({
    // on: the big upload is staged; its killed runs' stages are dropped by its next run, the last one's when it is refused.
    MERIDIAN_UPLOAD_STAGING: staging,
    MERIDIAN_STAGE_MIN_BYTES: '1',
    MERIDIAN_MAX_COMMAND_STARTS: String(MAX_STARTS),
    KAFKA_TASKS_PARTITIONS: String(TASKS_PARTITIONS),
    MERIDIAN_POINT_BATCH_SIZE: '2000',
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    MERIDIAN_MAX_UPLOAD_BYTES: '200000000',
  });
  const world = faultWorld(settings);

  /** The tasks partition kafkajs's default partitioner gives a task id (the command's key). */
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: TASKS_PARTITIONS }, (_, i) => ({ partitionId: i, leader: 0 }) as PartitionMetadata);
  const partitionOf = (taskId: string) => partitioner({ topic: world.api.platform.topics.tasks, partitionMetadata, message: { key: taskId, value: null } });

  async function upload(body: Buffer, metric: string, idempotencyKey: string): Promise<string> {
    const form = new FormData();
    form.set('file', new Blob([body]), 'points.csv');
    const res = await fetch(`${world.api.url}/api/v1/metrics_file_upload?metric_name=${metric}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${world.key}`, 'Idempotency-Key': idempotencyKey },
      body: form,
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { task_id: string }).task_id;
  }

  /** What every ingest process said about commands: shown when the test fails. */
  const journal = () =>
    world.processes
      .map(
        (p, i) =>
          `process ${i + 1}:\n${p
            .output()
            .split('\n')
            .filter((l) => /command|upload|Kafka|error/i.test(l))
            .join('\n')}`,
      )
      .join('\n');
  /** How many times `proc` logged `msg` about `taskId` (a run's start is logged once its TaskStarted is acknowledged). */
  const logged = (proc: AppProcess, msg: string, taskId: string) =>
    proc
      .output()
      .split('\n')
      .filter((line) => line.includes(`"msg":"${msg}"`) && line.includes(`"task_id":"${taskId}"`)).length;
  const hasStarted = (proc: AppProcess, taskId: string) => logged(proc, 'command run started', taskId) > 0;
  /** In a run: one started and not released (a run ends with the task, or with a release). */
  const inRun = (proc: AppProcess, taskId: string) => logged(proc, 'command run started', taskId) > logged(proc, 'command run released: it runs again', taskId);

  it('fails it with the reason, dead-letters it, and the next upload on its partition succeeds', async () => {
    const lines: string[] = [];
    for (let i = 0; i < POINTS; i++) lines.push(`${formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000)},${i}`);
    const big = Buffer.from(`${lines.join('\n')}\n`);
    lines.length = 0;

    const badKey = `bad-${randomUUID()}`;
    const partition = partitionOf(taskIdFor('root', badKey));
    // A good upload whose task lands on the same tasks partition, queued behind the bad one.
    let goodKey = '';
    for (let i = 0; goodKey === ''; i++) if (partitionOf(taskIdFor('root', `good-${i}`)) === partition) goodKey = `good-${i}`;

    const bad = await upload(big, 'loop.bad', badKey);
    const good = await upload(Buffer.from(`${formatTimestamp(Date.UTC(2024, 0, 1))},1\n${formatTimestamp(Date.UTC(2024, 0, 2))},2\n`), 'loop.good', goodKey);
    expect(partitionOf(bad)).toBe(partition);
    expect(partitionOf(good)).toBe(partition);

    // Start a process, kill it as soon as it is in a run of the bad upload, again, until a
    // process fails the task instead. Deaths in a run are what count: a run the living process
    // gave up (a Kafka error under it) is released, and a kill after that is no death on it.
    let deaths = 0;
    let last: AppProcess;
    for (;;) {
      last = startApp('ingest', settings);
      world.processes.push(last);
      const proc = last;
      const outcome = await waitFor(
        'a run of the bad upload to start, or its task to end',
        async () => {
          if (inRun(proc, bad)) return 'in a run' as const;
          if (proc.child.exitCode !== null) throw new Error(`ingest exited by itself:\n${proc.output()}`);
          const { status } = (await call(`${world.api.url}/api/v1/tasks/${bad}`, world.key)).json as { status: string };
          return status === 'failed' || status === 'succeeded' ? ('ended' as const) : undefined;
        },
        120_000,
        20,
      );
      if (outcome === 'ended') break;
      expect(deaths, `a run started after ${deaths} deaths:\n${journal()}`).toBeLessThan(MAX_STARTS);
      await proc.stop('SIGKILL');
      await new Promise((r) => (proc.child.stdout!.readableEnded ? r(null) : proc.child.stdout!.once('end', r)));
      if (inRun(proc, bad)) deaths++;
      const task = await call(`${world.api.url}/api/v1/tasks/${bad}`, world.key);
      expect(['queued', 'running'], `after kill ${world.processes.length}`).toContain(task.json.status); // killed in the run, not after it
    }
    expect(deaths, journal()).toBe(MAX_STARTS);
    const failed = await waitForTask(world.api.url, world.key, bad);
    expect(failed, journal()).toMatchObject({ status: 'failed', reason: `processing stopped ${MAX_STARTS} times; the upload was not stored`, result: null });
    expect((await waitForTask(world.api.url, world.key, good, 60_000)).status).toBe('succeeded');
    expect(last.child.exitCode).toBeNull();
    expect(hasStarted(last, good)).toBe(true);
    expect(hasStarted(last, bad)).toBe(false);

    const dead = await deadLetters(settings.MERIDIAN_TOPIC_PREFIX);
    expect(dead.map(({ source_partition, reason }) => ({ source_partition, reason }))).toEqual([
      { source_partition: String(partition), reason: `processing stopped ${MAX_STARTS} times; the upload was not stored` },
    ]);
    // The dead letter is the command as it was read: its key and value byte-exact.
    const at = { topic: world.api.platform.topics.tasks, partition, start: dead[0]!.source_offset, end: dead[0]!.source_offset + 1 };
    let source: { key: Buffer | null; value: Buffer | null } | undefined;
    for await (const batch of world.api.platform.log.readRanges([at], {
      groupId: `${settings.MERIDIAN_TOPIC_PREFIX}test-source-${randomUUID()}`,
      sequential: true,
    }))
      source ??= batch.messages[0];
    expect(source!.key?.toString()).toBe(bad);
    expect(dead[0]!.key?.equals(source!.key!), 'the key as read').toBe(true);
    expect(dead[0]!.value?.equals(source!.value!), 'the value as read').toBe(true);

    const stored = await fetch(`${world.api.url}/api/v1/metrics/download?metrics=loop.&pattern=starts_with&max_rows=10`, {
      headers: { Authorization: `Bearer ${world.key}` },
    });
    expect((await stored.text()).split('\n').filter((l) => l.startsWith('loop.bad'))).toEqual([]);
    const stages = await fetch(
      `${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent("SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'points_stage_')")}`,
    );
    expect((await stages.text()).trim()).toBe('');
  });

  type DeadLetter = { source_partition: string; source_offset: number; reason: string; key: Buffer | null; value: Buffer | null };

  /** Every message in the dead-letter topic: where it came from, why, and its bytes. */
  async function deadLetters(prefix: string): Promise<DeadLetter[]> {
    const consumer = world.api.platform.kafka.consumer({ groupId: `${prefix}test-dead-letters-${randomUUID()}` });
    const seen: DeadLetter[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: world.api.platform.topics.deadLetter, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push({
            source_partition: String(message.headers?.source_partition),
            source_offset: Number(String(message.headers?.source_offset)),
            reason: String(message.headers?.reason),
            key: message.key,
            value: message.value,
          });
        },
      });
      await waitFor('the dead letter', () => (seen.length > 0 ? true : undefined), 30_000);
      await new Promise((r) => setTimeout(r, 500)); // any second one would show by now
    } finally {
      await consumer.disconnect();
    }
    return seen;
  }
});
