import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Settings } from '@meridian/config';
import { freePort } from '../support/ports.ts';
import { clickhouseUrl, processCpuSeconds, repoRoot, waitUntil } from './common.ts';

/**
 * `points` as another server configuration or column type would store it, measured side by side
 * in one bench run: the scope's rows are copied into a private ClickHouse server (the same
 * binary as the local stack's, started here on free loopback ports with the stack's config
 * template and another <compression> section), into a table as migration 001 makes it and
 * into one with `task_id UUID`, then merged to one part. Compression is a server setting on
 * 18.16 (no column codecs), so each zstd case is a server of its own; its CPU (from /proc) over
 * the inserts and the merges is the case's cost.
 */
export type PointsVariant = {
  readonly name: string;
  /** The rows' compressed bytes by column of each table, after OPTIMIZE FINAL. */
  readonly columns: ReadonlyArray<readonly [table: string, column: string, bytes: number]>;
  /** The server's CPU-seconds over the copy and the merges. */
  readonly cpuSeconds: number;
  /** Distinct task ids a 1 MiB block of `task_id` holds (ClickHouse's max_compress_block_size), on average, in the sort order. */
  readonly taskIdsPerBlock: number;
};

/**
 * A zstd case for parts whose merged size reaches `minPartBytes` (the merge's compressed input);
 * `blockBytes`: the server profile's min and max compress block sizes (18.16 has no column's own;
 * a server-wide block size applies to every column of every table).
 */
export type ZstdCase = { readonly name: string; readonly level?: number; readonly minPartBytes?: number; readonly blockBytes?: number };

/** The local stack's users with the case's block sizes in the default profile (what its merges read, if they read any). */
function usersOf(zstd: ZstdCase): string {
  const users = readFileSync(join(repoRoot, 'deploy/local/templates/clickhouse-users.xml'), 'utf8');
  if (zstd.blockBytes === undefined) return users;
  const sizes = `<min_compress_block_size>${zstd.blockBytes}</min_compress_block_size><max_compress_block_size>${zstd.blockBytes}</max_compress_block_size>`;
  return users.replace('<default>', `<default>${sizes}`);
}

const COLUMNS = `metric_name String, ts Int64, value Float64, updated_at Int64, %TASK%, kafka_partition UInt16, kafka_offset UInt64, row_in_batch UInt32`;
const ENGINE = 'ENGINE = MergeTree() PARTITION BY tuple() ORDER BY (metric_name, ts, updated_at)';

/** The local stack's config with another <compression>: zstd for every part, `level` for parts from `minPartBytes` on. */
function configOf(dir: string, http: number, tcp: number, zstd: ZstdCase): string {
  const large =
    zstd.level === undefined
      ? ''
      : `<case><min_part_size>${zstd.minPartBytes ?? 0}</min_part_size><min_part_size_ratio>0</min_part_size_ratio><method>zstd</method><level>${zstd.level}</level></case>`;
  const compression = `<compression><case><min_part_size>0</min_part_size><min_part_size_ratio>0</min_part_size_ratio><method>zstd</method></case>${large}</compression>`;
  return readFileSync(join(repoRoot, 'deploy/local/templates/clickhouse-config.xml'), 'utf8')
    .replaceAll('@VAR@', dir)
    .replace('@HTTP_PORT@', String(http))
    .replace('@TCP_PORT@', String(tcp))
    .replace(/<compression>[\s\S]*<\/compression>/, compression);
}

async function query(url: string, sql: string, body?: Readable): Promise<string> {
  const res = await fetch(`${url}/?${new URLSearchParams({ query: sql })}`, {
    method: 'POST',
    ...(body ? { body: Readable.toWeb(body) as ReadableStream, duplex: 'half' } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse (private): ${res.status} ${text}`);
  return text;
}

async function startServer(zstd: ZstdCase): Promise<{ url: string; cpuSeconds(): number; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'points-variant-'));
  const [http, tcp] = [await freePort(), await freePort()];
  writeFileSync(join(dir, 'config.xml'), configOf(dir, http, tcp, zstd));
  writeFileSync(join(dir, 'users.xml'), usersOf(zstd));
  const child = spawn('clickhouse-server', [`--config-file=${join(dir, 'config.xml')}`], { cwd: dir, stdio: 'ignore' });
  const url = `http://127.0.0.1:${http}`;
  await waitUntil('the private ClickHouse', async () => ((await fetch(`${url}/ping`).catch(() => null))?.ok ? true : undefined), 60_000, 200);
  return {
    url,
    cpuSeconds: () => processCpuSeconds(child.pid),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

async function mergeAll(url: string, table: string): Promise<void> {
  for (let round = 0; round < 20; round++) {
    await query(url, `OPTIMIZE TABLE ${table} FINAL`);
    if (Number(await query(url, `SELECT count() FROM system.parts WHERE active AND table = '${table}'`)) <= 1) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Each zstd case on a server of its own, `points` of the scope as String and as UUID task ids. */
export async function pointsVariants(settings: Settings, cases: readonly ZstdCase[]): Promise<PointsVariant[]> {
  const out: PointsVariant[] = [];
  for (const zstd of cases) {
    const server = await startServer(zstd);
    try {
      const before = server.cpuSeconds();
      await query(server.url, `CREATE TABLE points_string (${COLUMNS.replace('%TASK%', 'task_id String')}) ${ENGINE}`);
      await query(server.url, `CREATE TABLE points_uuid (${COLUMNS.replace('%TASK%', 'task_id UUID')}) ${ENGINE}`);
      const source = await fetch(clickhouseUrl(settings, { database: settings.CLICKHOUSE_DATABASE, query: 'SELECT * FROM points FORMAT Native' }), {
        method: 'POST',
      });
      if (!source.ok || !source.body) throw new Error(`reading points: ${source.status} ${await source.text()}`);
      await query(server.url, 'INSERT INTO points_string FORMAT Native', Readable.fromWeb(source.body));
      await query(
        server.url,
        'INSERT INTO points_uuid SELECT metric_name, ts, value, updated_at, toUUID(task_id), kafka_partition, kafka_offset, row_in_batch FROM points_string',
      );
      await mergeAll(server.url, 'points_string');
      await mergeAll(server.url, 'points_uuid');
      const cpuSeconds = server.cpuSeconds() - before;
      const columns = (
        await query(server.url, `SELECT table, name, data_compressed_bytes FROM system.columns WHERE database = currentDatabase() FORMAT TabSeparated`)
      )
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('\t'))
        .map(([table, column, bytes]) => [table!, column!, Number(bytes)] as const);
      const ids = await query(
        server.url,
        `SELECT avg(u) FROM (SELECT intDiv(rowNumberInAllBlocks(), intDiv(1048576, 37)) AS block, uniqExact(task_id) AS u FROM (SELECT task_id FROM points_string ORDER BY metric_name, ts, updated_at) GROUP BY block)`,
      );
      out.push({ name: zstd.name, columns, cpuSeconds, taskIdsPerBlock: Number(ids) });
    } finally {
      await server.stop();
    }
  }
  return out;
}
