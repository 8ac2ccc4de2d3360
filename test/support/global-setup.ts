import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { TOPOLOGY_SETTINGS, type StackEndpoints } from './endpoints.ts';
import { removeRunScopes } from './run-cleanup.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
type Teardown = () => Promise<void>;

/**
 * Finds the real services for integration and e2e tests, in this order:
 *   1. endpoints from the environment (KAFKA_BROKERS, CLICKHOUSE_URL, S3_ENDPOINT, ...),
 *   2. testcontainers, where a Docker engine answers,
 *   3. the local stack (deploy/local/stack.sh), started here and stopped after if it was not running.
 */
export default async function setup(project: TestProject): Promise<Teardown> {
  const runId = `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const env = process.env;
  if (env.KAFKA_BROKERS && env.CLICKHOUSE_URL && env.S3_ENDPOINT) {
    const stack = {
      KAFKA_BROKERS: env.KAFKA_BROKERS,
      CLICKHOUSE_URL: env.CLICKHOUSE_URL,
      CLICKHOUSE_USER: env.CLICKHOUSE_USER ?? 'default',
      CLICKHOUSE_PASSWORD: env.CLICKHOUSE_PASSWORD ?? '',
      S3_ENDPOINT: env.S3_ENDPOINT,
      S3_ACCESS_KEY: env.S3_ACCESS_KEY ?? 'meridian',
      S3_SECRET_KEY: env.S3_SECRET_KEY ?? 'meridian-local-secret',
      RUN_ID: runId,
      SOURCE: 'environment',
      TOPOLOGY: Object.fromEntries(TOPOLOGY_SETTINGS.flatMap((name) => (env[name] ? [[name, env[name]]] : []))),
    } as const;
    project.provide('stack', stack);
    return () => removeRunScopes(stack, runId);
  }
  // Every project (integration, e2e, fault) runs this setup; the containers are started once
  // per vitest process (Kafka's host port is fixed) and stopped after the last project.
  containers ??= tryTestcontainers(runId);
  const started = await containers;
  if (started) {
    users++;
    project.provide('stack', { ...started.endpoints, RUN_ID: runId });
    return async () => {
      if (--users === 0) await started.stop();
    };
  }
  return startLocalStack(project, runId);
}

let containers: Promise<{ endpoints: StackEndpoints; stop: Teardown } | null> | null = null;
let users = 0;

function startLocalStack(project: TestProject, runId: string): Teardown {
  const stackScript = `${repoRoot}deploy/local/stack.sh`;
  // Only the services this setup starts are stopped after it (as test/run.sh does): stack.sh up
  // names them in STACK_STARTED_FILE (a service another command was stopping is started anew).
  const startedFile = join(mkdtempSync(join(tmpdir(), 'meridian-stack-')), 'started');
  execFileSync(stackScript, ['up'], { stdio: 'inherit', env: { ...process.env, STACK_STARTED_FILE: startedFile } });
  const stopped = existsSync(startedFile)
    ? readFileSync(startedFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ')[0]!)
    : [];
  rmSync(dirname(startedFile), { recursive: true, force: true });
  const exported = Object.fromEntries(
    execFileSync(stackScript, ['env'], { encoding: 'utf8' })
      .split('\n')
      .map((l) => /^export (\w+)=(.*)$/.exec(l))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1], m[2]]),
  ) as Record<string, string>;
  const stack = {
    KAFKA_BROKERS: exported.KAFKA_BROKERS!,
    CLICKHOUSE_URL: exported.CLICKHOUSE_URL!,
    CLICKHOUSE_USER: 'default',
    CLICKHOUSE_PASSWORD: '',
    S3_ENDPOINT: exported.S3_ENDPOINT!,
    S3_ACCESS_KEY: exported.S3_ACCESS_KEY!,
    S3_SECRET_KEY: exported.S3_SECRET_KEY!,
    RUN_ID: runId,
    SOURCE: 'local',
  } as const;
  project.provide('stack', stack);
  return async () => {
    await removeRunScopes(stack, runId);
    if (stopped.length > 0) execFileSync(stackScript, ['down', ...stopped], { stdio: 'inherit' });
  };
}

/** Starts Kafka, ClickHouse and MinIO containers when a Docker engine answers; null otherwise. */
async function tryTestcontainers(runId: string): Promise<{ endpoints: StackEndpoints; stop: Teardown } | null> {
  if (process.env.MERIDIAN_NO_TESTCONTAINERS) return null;
  const tc = await import('testcontainers');
  try {
    await tc.getContainerRuntimeClient();
  } catch {
    return null; // no Docker engine: the local stack it is
  }
  const kafkaPort = 9092;
  const kafka = await new tc.GenericContainer('apache/kafka:3.9.1')
    .withExposedPorts({ container: kafkaPort, host: 19092 })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: 'PLAINTEXT://127.0.0.1:19092',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    })
    .withWaitStrategy(tc.Wait.forLogMessage(/Kafka Server started/))
    .start();
  const clickhouse = await new tc.GenericContainer('clickhouse/clickhouse-server:26.9')
    .withExposedPorts(8123)
    .withEnvironment({ CLICKHOUSE_SKIP_USER_SETUP: '1' })
    .withWaitStrategy(tc.Wait.forHttp('/ping', 8123))
    .start();
  const minio = await new tc.GenericContainer('minio/minio:RELEASE.2025-04-22T22-12-26Z')
    .withCommand(['server', '/data'])
    .withExposedPorts(9000)
    .withEnvironment({ MINIO_ROOT_USER: 'meridian', MINIO_ROOT_PASSWORD: 'meridian-local-secret' })
    .withWaitStrategy(tc.Wait.forHttp('/minio/health/ready', 9000))
    .start();
  return {
    endpoints: {
      KAFKA_BROKERS: `127.0.0.1:19092`,
      CLICKHOUSE_URL: `http://${clickhouse.getHost()}:${clickhouse.getMappedPort(8123)}`,
      CLICKHOUSE_USER: 'default',
      CLICKHOUSE_PASSWORD: '',
      S3_ENDPOINT: `http://${minio.getHost()}:${minio.getMappedPort(9000)}`,
      S3_ACCESS_KEY: 'meridian',
      S3_SECRET_KEY: 'meridian-local-secret',
      RUN_ID: runId,
      SOURCE: 'testcontainers',
    },
    stop: async () => {
      await Promise.all([kafka.stop(), clickhouse.stop(), minio.stop()]);
    },
  };
}
