import { Kafka, logLevel } from 'kafkajs';
import { Client } from 'minio';
import type { StackEndpoints } from './endpoints.ts';

/**
 * Removes what one test run made on the stack: every topic, database and bucket named with its
 * run id (isolatedSettings gives each scope `<run id><hex>.` topics, `test_<run id><hex>` and
 * `test-<run id><hex>`). A long-lived stack, a developer's or a shared one, would otherwise keep
 * every run's scopes: a broker holding thousands of test topics spends its heap on their
 * metadata and its CPU on collecting it, which shows in every figure measured on it after.
 * Best effort: what fails is said and left, and a failure never fails the run.
 */
export async function removeRunScopes(stack: StackEndpoints, runId: string): Promise<void> {
  // Each step within a time of its own: a stack that stopped answering does not hold the run's end.
  const within = (step: () => Promise<number>) =>
    Promise.race([step(), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer within 120 s')), 120_000).unref())]);
  const steps: Array<[string, () => Promise<number>]> = [
    ['topics', () => removeTopics(stack.KAFKA_BROKERS, runId)],
    ['databases', () => dropDatabases(stack, runId)],
    ['buckets', () => removeBuckets(stack, runId)],
  ];
  const said: string[] = [];
  for (const [what, step] of steps) {
    try {
      said.push(`${await within(step)} ${what}`);
    } catch (error) {
      said.push(`${what} not removed (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  process.stdout.write(`test run ${runId}: removed ${said.join(', ')}\n`);
}

async function removeTopics(brokers: string, runId: string): Promise<number> {
  const admin = new Kafka({ clientId: `cleanup-${runId}`, brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(runId));
    for (let i = 0; i < topics.length; i += 100) await admin.deleteTopics({ topics: topics.slice(i, i + 100), timeout: 60_000 });
    return topics.length;
  } finally {
    await admin.disconnect();
  }
}

async function dropDatabases(stack: StackEndpoints, runId: string): Promise<number> {
  const run = async (query: string) => {
    const res = await fetch(`${stack.CLICKHOUSE_URL}/`, {
      method: 'POST',
      headers: { 'X-ClickHouse-User': stack.CLICKHOUSE_USER, 'X-ClickHouse-Key': stack.CLICKHOUSE_PASSWORD },
      body: query,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(text.slice(0, 200));
    return text;
  };
  // The run id is ours (letters and digits): the names are read back, never built from input.
  const names = (await run(`SELECT name FROM system.databases WHERE startsWith(name, 'test_${runId}') FORMAT TSV`)).split('\n').filter(Boolean);
  for (const name of names) await run(`DROP DATABASE IF EXISTS \`${name}\``);
  return names.length;
}

async function removeBuckets(stack: StackEndpoints, runId: string): Promise<number> {
  const url = new URL(stack.S3_ENDPOINT);
  const client = new Client({
    endPoint: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    useSSL: url.protocol === 'https:',
    accessKey: stack.S3_ACCESS_KEY,
    secretKey: stack.S3_SECRET_KEY,
  });
  const buckets = (await client.listBuckets()).map((b) => b.name).filter((b) => b.startsWith(`test-${runId}`));
  for (const bucket of buckets) {
    const keys: string[] = [];
    for await (const o of client.listObjectsV2(bucket, '', true)) keys.push((o as { name: string }).name);
    for (let i = 0; i < keys.length; i += 1000) await client.removeObjects(bucket, keys.slice(i, i + 1000));
    for await (const u of client.listIncompleteUploads(bucket, '', true)) await client.removeIncompleteUpload(bucket, u.key);
    await client.removeBucket(bucket);
  }
  return buckets.length;
}
