import { createWriteStream, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createClickHouse, ensureDatabase, migrate, type ClickHouseOptions } from '@meridian/clickhouse';
import type { Settings } from '@meridian/config';
import { startChdbFront } from '../modern/chdb-process.ts';
import { clickhouseUrl, postStream, processCpuSeconds } from './common.ts';

/**
 * `points` on a current ClickHouse, measured in the same run as the local 18.16: the scope's rows
 * are read back as Native into a file and inserted into `points` of a database migrated on the
 * chDB front (ClickHouse 26.9 in-process, test/modern), so the migrations' column codecs apply
 * (009 and after; 18.16 has none), then merged to one part. Each codec case (BENCH_CODECS) is a
 * table `AS points` with some columns declared otherwise, filled from it with INSERT SELECT and
 * merged: its bytes by column, and the front's CPU-seconds (from /proc) over that insert and its
 * merges, which include reading `points` back, the same for every case.
 */
export type ModernPoints = {
  readonly version: string;
  /** `points` as migrated: compressed bytes and codec by column, after OPTIMIZE FINAL. */
  readonly columns: ReadonlyArray<readonly [column: string, bytes: number, codec: string]>;
  /** The front's CPU-seconds for the copy into `points` (its materialized views too) and its merges. */
  readonly copyCpuSeconds: number;
  readonly cases: readonly CodecCaseResult[];
};

export type CodecCaseResult = {
  readonly name: string;
  readonly columns: ReadonlyArray<readonly [column: string, bytes: number]>;
  readonly cpuSeconds: number;
};

/**
 * What follows `ALTER TABLE case MODIFY COLUMN <column>` for the columns that differ from `points` as migrated (a declaration:
 * type, codec, column settings; or `RESET SETTING …`); `level` puts that zstd level in every codec instead.
 */
export type CodecCase = { readonly name: string; readonly level?: number; readonly columns?: Readonly<Record<string, string>> };

const COLUMNS = 'metric_name, ts, value, updated_at, task_id, kafka_partition, kafka_offset, row_in_batch';
const BLOCKS = (bytes: number) => `SETTINGS (min_compress_block_size = ${bytes}, max_compress_block_size = ${bytes})`;

/** What BENCH_CODECS can name (`all`: every one). */
export const CODEC_CASES: readonly CodecCase[] = [
  // points as migration 009 left it, before 014's blocks of task ids.
  { name: 'as-009', columns: { task_id: 'RESET SETTING min_compress_block_size, max_compress_block_size' } },
  { name: 'zstd-1', level: 1 },
  { name: 'zstd-6', level: 6 },
  { name: 'zstd-9', level: 9 },
  { name: 'zstd-12', level: 12 },
  { name: 'value-zstd-6', columns: { value: 'Float64 CODEC(ZSTD(6))' } },
  { name: 'value-zstd-9', columns: { value: 'Float64 CODEC(ZSTD(9))' } },
  { name: 'double-delta', columns: { ts: 'Int64 CODEC(DoubleDelta, ZSTD(3))', updated_at: 'Int64 CODEC(DoubleDelta, ZSTD(3))' } },
  { name: 'gorilla', columns: { value: 'Float64 CODEC(Gorilla, ZSTD(3))' } },
  { name: 'fpc', columns: { value: 'Float64 CODEC(FPC, ZSTD(3))' } },
  {
    name: 't64',
    columns: {
      ts: 'Int64 CODEC(Delta, T64, ZSTD(3))',
      updated_at: 'Int64 CODEC(T64, ZSTD(3))',
      kafka_offset: 'UInt64 CODEC(T64, ZSTD(3))',
      row_in_batch: 'UInt32 CODEC(T64, ZSTD(3))',
    },
  },
  // ClickHouse starts zstd afresh in each compressed block (a granule's bytes, at least min_compress_block_size); a task id's run
  // repeats in every series, so larger blocks share it over more of them.
  { name: 'task-blocks-1m', columns: { task_id: `String CODEC(ZSTD(3)) ${BLOCKS(1 << 20)}` } },
  { name: 'task-blocks-4m', columns: { task_id: `String CODEC(ZSTD(3)) ${BLOCKS(4 << 20)}` } },
  { name: 'task-blocks-16m', columns: { task_id: `String CODEC(ZSTD(3)) ${BLOCKS(16 << 20)}` } },
  { name: 'task-blocks-4m-zstd-9', columns: { task_id: `String CODEC(ZSTD(9)) ${BLOCKS(4 << 20)}` } },
  {
    name: 'small-zstd-9',
    columns: {
      metric_name: 'String CODEC(ZSTD(9))',
      updated_at: 'Int64 CODEC(Delta, ZSTD(9))',
      kafka_partition: 'UInt16 CODEC(T64, ZSTD(9))',
      kafka_offset: 'UInt64 CODEC(Delta, ZSTD(9))',
      row_in_batch: 'UInt32 CODEC(Delta, ZSTD(9))',
    },
  },
];

export function codecCases(names: string): CodecCase[] {
  const wanted = names.split(',').filter(Boolean);
  if (wanted.includes('all')) return [...CODEC_CASES];
  return wanted.map((n) => {
    const c = CODEC_CASES.find((x) => x.name === n);
    if (!c) throw new Error(`unknown codec case ${n} (BENCH_CODECS: all, ${CODEC_CASES.map((x) => x.name).join(', ')})`);
    return c;
  });
}

type Front = { readonly url: string; readonly pid: number };

/** The database on the front that the migrations make, `points` and the cases' tables in it. */
const DATABASE = 'bench_points';

async function run(front: Front, sql: string): Promise<string> {
  const res = await postStream(`${front.url}/?${new URLSearchParams({ database: DATABASE })}`, {}, Readable.from([sql]));
  if (res.status !== 200) throw new Error(`ClickHouse (chDB): ${res.status} ${res.text}`);
  return res.text;
}

async function mergeAll(front: Front, table: string): Promise<void> {
  for (let round = 0; round < 20; round++) {
    await run(front, `OPTIMIZE TABLE ${table} FINAL`);
    const parts = await run(front, `SELECT count() FROM system.parts WHERE active AND database = currentDatabase() AND table = '${table}'`);
    if (Number(parts) <= 1) return;
  }
}

async function columnsOf(front: Front, table: string): Promise<Array<[string, number, string]>> {
  return (
    await run(
      front,
      `SELECT name, data_compressed_bytes, compression_codec FROM system.columns WHERE database = currentDatabase() AND table = '${table}' FORMAT TabSeparated`,
    )
  )
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t'))
    .map(([column, bytes, codec]) => [column!, Number(bytes), codec!]);
}

/** The scope's `points` from the local server into a Native file the engine can read. */
async function exportPoints(settings: Settings, file: string): Promise<void> {
  const query = `SELECT ${COLUMNS} FROM points FORMAT Native`;
  const res = await fetch(clickhouseUrl(settings, { database: settings.CLICKHOUSE_DATABASE, query }), { method: 'POST' });
  if (!res.ok || !res.body) throw new Error(`reading points: ${res.status} ${await res.text()}`);
  await pipeline(Readable.fromWeb(res.body), createWriteStream(file));
}

/** A case's table: `points`' declarations, some replaced; its bytes by column and the CPU of filling and merging it. */
async function measureCase(front: Front, c: CodecCase, migrated: ReadonlyArray<readonly [string, number, string]>): Promise<CodecCaseResult> {
  const table = `case_${c.name.replace(/\W/g, '_')}`;
  await run(front, `CREATE TABLE ${table} AS points`);
  try {
    const types = new Map(
      (await run(front, `SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'points' FORMAT TabSeparated`))
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t') as [string, string]),
    );
    for (const [column, , codec] of migrated) {
      const declared =
        c.columns?.[column] ?? (c.level === undefined ? undefined : `${types.get(column)!} ${codec.replace(/ZSTD\(\d+\)/g, `ZSTD(${c.level})`)}`);
      if (declared !== undefined) await run(front, `ALTER TABLE ${table} MODIFY COLUMN ${column} ${declared}`);
    }
    const before = processCpuSeconds(front.pid);
    await run(front, `INSERT INTO ${table} SELECT ${COLUMNS} FROM points`);
    await mergeAll(front, table);
    const cpuSeconds = processCpuSeconds(front.pid) - before;
    return { name: c.name, columns: (await columnsOf(front, table)).map(([column, bytes]) => [column, bytes] as const), cpuSeconds };
  } finally {
    await run(front, `DROP TABLE IF EXISTS ${table}`);
  }
}

export async function pointsOnModern(settings: Settings, cases: readonly CodecCase[]): Promise<ModernPoints> {
  const front = await startChdbFront();
  try {
    const conn: ClickHouseOptions = { url: front.url, username: 'default', password: '', database: DATABASE };
    await ensureDatabase(conn);
    const client = createClickHouse(conn);
    try {
      await migrate(client);
    } finally {
      await client.close();
    }
    const file = join(front.dataDir, 'points.native');
    await exportPoints(settings, file);
    const before = processCpuSeconds(front.pid);
    await run(front, `INSERT INTO points (${COLUMNS}) FROM INFILE '${file}' FORMAT Native`);
    await mergeAll(front, 'points');
    const copyCpuSeconds = processCpuSeconds(front.pid) - before;
    rmSync(file);
    const columns = await columnsOf(front, 'points');
    const out: CodecCaseResult[] = [];
    for (const c of cases) out.push(await measureCase(front, c, columns));
    return { version: (await run(front, 'SELECT version()')).trim(), columns, copyCpuSeconds, cases: out };
  } finally {
    await front.stop();
  }
}
