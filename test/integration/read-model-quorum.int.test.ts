import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clickhouseFileReadModel,
  clickhouseFileReadModelWriter,
  clickhouseTaskReadModel,
  clickhouseTaskReadModelWriter,
  createClickHouse,
  LIVE_FILE_TABLES,
  LIVE_TASK_TABLES,
  type ClickHouseClient,
} from '@meridian/clickhouse';
import { fileDefinedFrom, foldFileBatch, foldTasks, type TaskEvent } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { createPlatform, type Platform } from '../support/platform.ts';
import { startRecordingProxy, type RecordingProxy } from '../support/recording-proxy.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * On a cluster (CLICKHOUSE_INSERT_QUORUM ≥ 2) the read models must write and read as the points
 * sink does (docs/operating/cluster.md: exactly-once with replicas): every insert with insert_quorum, every read with
 * select_sequential_consistency. The single test server accepts both settings on its
 * non-replicated tables (and ignores them), so a recording proxy in front of it shows what each
 * request carried, while the answers stay real.
 */
describe('read models under an insert quorum', () => {
  const settings = isolatedSettings({});
  const platform: Platform = createPlatform(settings, createLogger({ name: 'quorum-int', level: settings.LOG_LEVEL }), 'quorum-int');
  const quorum = { replicas: 2, timeoutMs: 123_456 };
  let proxy: RecordingProxy;
  let client: ClickHouseClient;

  beforeAll(async () => {
    await platform.prepare();
    proxy = await startRecordingProxy(settings.CLICKHOUSE_URL);
    client = createClickHouse({ ...platform.clickhouseOptions, url: proxy.url });
  });
  afterAll(async () => {
    await client?.close();
    await proxy?.close();
    await platform.close();
  });

  /** Requests through the proxy since `from` that write into / read from `tables`, with their parameters. */
  function requests(from: number, tables: readonly string[]) {
    const queries = proxy.queries().slice(from);
    const params = proxy.params().slice(from);
    const touches = (q: string) => tables.some((t) => new RegExp(`\\b${t}\\b`).test(q));
    const inserts = params.filter((_, i) => /^\s*INSERT\b/i.test(queries[i]!) && touches(queries[i]!));
    const reads = params.filter((_, i) => /^\s*SELECT\b/i.test(queries[i]!) && touches(queries[i]!));
    return { inserts, reads };
  }

  it('the tasks read model: inserts wait for the quorum, reads see only what it holds', async () => {
    const from = proxy.queries().length;
    const conn = { ...platform.clickhouseOptions, url: proxy.url };
    const readModel = clickhouseTaskReadModel(conn, LIVE_TASK_TABLES, quorum);
    const writer = clickhouseTaskReadModelWriter(client, LIVE_TASK_TABLES, quorum);
    const id = randomUUID();
    const event: TaskEvent = {
      type: 'MetricsUploadRequested',
      task_id: id,
      user_name: 'q',
      at: 1,
      metric_name: 'cpu',
      on_error: 'fail',
      source: 'json_body',
      payload: Buffer.from('{}'),
      staged_object: null,
      payload_bytes: 2,
      payload_sha256: Buffer.alloc(32, 1),
      idempotency_key: 'k',
    };
    const task = JSON.parse(JSON.stringify(foldTasks([event]).get(id)));
    await writer.write([{ task, partition: 0, offset: 7 }], new Map([[0, 7]]));
    expect(await readModel.get(id)).toEqual(task);
    expect((await readModel.list({ user_name: 'q', limit: 10 })).map((t) => t.task_id)).toEqual([id]);
    expect(await readModel.positions()).toEqual(new Map([[0, 7]]));
    expect((await readModel.unfinished()).map((r) => r.task.task_id)).toContain(id);
    await readModel.finishedAmong([id]);

    const { inserts, reads } = requests(from, Object.values(LIVE_TASK_TABLES));
    expect(inserts.length).toBe(3); // tasks_by_id, tasks, tasks_positions
    for (const p of inserts) expect([p.get('insert_quorum'), p.get('insert_quorum_timeout')]).toEqual(['2', '123456']);
    expect(reads.length).toBe(5);
    for (const p of reads) expect(p.get('select_sequential_consistency')).toBe('1');
  });

  it('the files read model: the same', async () => {
    const from = proxy.queries().length;
    const conn = { ...platform.clickhouseOptions, url: proxy.url };
    const readModel = clickhouseFileReadModel(conn, LIVE_FILE_TABLES, quorum);
    const writer = clickhouseFileReadModelWriter(client, LIVE_FILE_TABLES, quorum);
    const id = randomUUID();
    const event = fileDefinedFrom({
      type: 'FileDefinitionRequested',
      task_id: randomUUID(),
      file_id: id,
      user_name: 'q',
      at: 1,
      file_name: 'q.csv',
      description: '',
      content_type: 'text/csv',
      staged_object: 'staging/q',
      size: 5,
      sha256: Buffer.alloc(32, 2),
      enforce_schema: false,
    });
    const { changes } = foldFileBatch([], [{ event, partition: 0, offset: 3 }], 0);
    await writer.write(changes, new Map([[0, 3]]));
    expect((await readModel.get(id))?.file_name).toBe('q.csv');
    expect((await readModel.list({ user_name: 'q', is_admin: false }, { limit: 10 })).files.map((f) => f.file.file_id)).toEqual([id]);
    expect(await readModel.usage(['q'])).toEqual(new Map([['q', { bytes: 5, files: 1 }]]));
    expect(await readModel.positions()).toEqual(new Map([[0, 3]]));
    expect(await readModel.nextSeq()).toBe(1);

    const { inserts, reads } = requests(from, Object.values(LIVE_FILE_TABLES));
    expect(inserts.length).toBe(4); // file_listing, file_blobs, files, files_positions
    for (const p of inserts) expect([p.get('insert_quorum'), p.get('insert_quorum_timeout')]).toEqual(['2', '123456']);
    expect(reads.length).toBe(5);
    for (const p of reads) expect(p.get('select_sequential_consistency')).toBe('1');
  });
});
