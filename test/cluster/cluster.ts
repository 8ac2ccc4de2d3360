import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';

/** The cluster of deploy/cluster/cluster.sh, driven as an operator would: its script, its front doors. */

const script = fileURLToPath(new URL('../../deploy/cluster/cluster.sh', import.meta.url));

/** Runs `cluster.sh <args>`; rejects with its output when it fails. Starting a JVM on a busy 2-core machine is slow: 10 minutes. */
export function clusterSh(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(script, args, { timeout: 600_000, env: process.env }, (error, stdout, stderr) => {
      if (error) reject(new Error(`cluster.sh ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolve(stdout + stderr);
    });
  });
}

/** The cluster's endpoints, from `cluster.sh env` (exported by `make test-cluster`). */
export type ClusterEndpoints = { readonly apiFront: string; readonly replicas: readonly string[] };

export function clusterEndpoints(): ClusterEndpoints {
  const replicas = (process.env.CLICKHOUSE_URLS ?? '').split(',').filter(Boolean);
  return { apiFront: process.env.CLUSTER_API_FRONT ?? 'http://127.0.0.1:24080', replicas };
}

/** Why the tier cannot run, or null: every process of the cluster is up and ready. */
export async function clusterNotReady(): Promise<string | null> {
  const { replicas } = clusterEndpoints();
  if (replicas.length < 2)
    return 'CLICKHOUSE_URLS lists fewer than 2 ClickHouse replicas: run through `make test-cluster` (it exports `deploy/cluster/cluster.sh env`)';
  let status: string;
  try {
    status = await clusterSh('status');
  } catch (error) {
    return `cluster.sh status failed: ${(error as Error).message}`;
  }
  const down = status
    .split('\n')
    .filter((l) => /^\S+\s+(stopped|unhealthy)/.test(l))
    .map((l) => l.split(/\s+/)[0]);
  if (down.length > 0) {
    return (
      `these cluster processes are not ready: ${down.join(', ')}. The tier needs the whole topology (\`make cluster-up\`: ` +
      '3 Kafka brokers, ZooKeeper, 2 ClickHouse 18.16, 4 MinIO nodes, haproxy, 2 api, 2 ingest; about 4 GB of memory) — ' +
      `see ${process.env.MERIDIAN_CLUSTER_VAR ?? '~/.cache/meridian/cluster'}/log/<proc>.log\n${status}`
    );
  }
  return null;
}

/** One SQL statement on one replica over HTTP; the text of its answer. */
export async function clickhouse(replica: string, database: string, sql: string): Promise<string> {
  const url = `${replica}/?database=${encodeURIComponent(database)}`;
  const res = await fetch(url, { method: 'POST', body: sql, signal: AbortSignal.timeout(300_000) });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse ${replica}: ${res.status} ${text.slice(0, 300)}`);
  return text.trim();
}

/**
 * The broker (kafkaN) that coordinates a transactional id: the leader of its partition of
 * `__transaction_state`, which Kafka picks as abs(String.hashCode(id)) mod the topic's partitions.
 */
export async function transactionCoordinator(transactionalId: string): Promise<string> {
  const admin = new Kafka({ brokers: (process.env.KAFKA_BROKERS ?? '').split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: ['__transaction_state'] });
    const partitions = topics[0]!.partitions;
    let hash = 0;
    for (const ch of transactionalId) hash = (Math.imul(hash, 31) + ch.charCodeAt(0)) | 0;
    const partition = (hash & 0x7fffffff) % partitions.length;
    return `kafka${partitions.find((p) => p.partitionId === partition)!.leader}`;
  } finally {
    await admin.disconnect();
  }
}
