import { afterAll, describe, expect, it } from 'vitest';
import { accountsCodec, encodeSnapshot, foldAccounts, type AccountEvent } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { createSnapshotStore, createStorage, ensureBucket, snapshotPrefix } from '@meridian/storage';
import { newestReadableSnapshot } from '../../libs/folds/src/fold-snapshots.ts';
import { isolatedSettings } from '../support/settings.ts';

describe('snapshots in MinIO', () => {
  const settings = isolatedSettings();
  const storage = createStorage({
    endpoint: settings.S3_ENDPOINT,
    accessKey: settings.S3_ACCESS_KEY,
    secretKey: settings.S3_SECRET_KEY,
    region: settings.S3_REGION,
    bucket: settings.S3_BUCKET,
  });
  const topic = `${settings.MERIDIAN_TOPIC_PREFIX}accounts`;
  const store = createSnapshotStore(storage, topic);
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    name: 't',
    level: 'warn',
    destination: {
      write: (l: string) => {
        lines.push(JSON.parse(l) as Record<string, unknown>);
      },
    },
  });
  const created = (name: string): AccountEvent => ({
    type: 'UserCreated',
    user_name: name,
    is_admin: false,
    key_id: `k-${name}`,
    secret_sha256: Buffer.alloc(32, 1),
    at: 1,
    actor: 'root',
  });
  const snapshotAt = (position: number, names: string[]) =>
    encodeSnapshot(accountsCodec, topic, { offsets: new Map([[0, position]]), state: foldAccounts(names.map(created)) });
  afterAll(async () => {
    const names: string[] = [];
    for await (const o of storage.client.listObjectsV2(storage.bucket, '', true)) names.push((o as { name: string }).name);
    await storage.client.removeObjects(storage.bucket, names);
    await storage.client.removeBucket(storage.bucket);
  });

  it('stores gzipped documents by position, lists them newest first, and keeps the newest K', async () => {
    await ensureBucket(storage, settings.S3_REGION);
    expect(await store.positions()).toEqual([]);
    for (const position of [5, 120, 9, 1000]) await store.put(position, snapshotAt(position, ['a']));
    await store.put(120, snapshotAt(120, ['a'])); // a racing writer at the same position: the same fold
    expect(await store.positions()).toEqual([1000, 120, 9, 5]);
    expect(await store.read(120)).toBe(snapshotAt(120, ['a']));
    const names: string[] = [];
    for await (const o of storage.client.listObjectsV2(storage.bucket, snapshotPrefix(topic), true)) names.push((o as { name: string }).name);
    expect(names).toContain(`_snapshots/${topic}/00000000000000000120.json.gz`);
    await store.prune(3);
    expect(await store.positions()).toEqual([1000, 120, 9]);
  });

  it("a start skips, with a warning, a snapshot that is damaged, of another version, or past the log's end, for the next older one", async () => {
    await store.put(3000, snapshotAt(3000, ['a', 'b', 'c'])); // past the end below
    await storage.client.putObject(storage.bucket, `_snapshots/${topic}/00000000000000002000.json.gz`, Buffer.from('not gzip'));
    await store.put(1500, snapshotAt(1500, ['a', 'b']).replace(`"version":${accountsCodec.version}`, '"version":99'));
    const found = await newestReadableSnapshot(store, accountsCodec, topic, new Map([[0, 2500]]), logger, 5000);
    expect(found?.position).toBe(1000);
    expect([...found!.state.users.keys()]).toEqual(['a']);
    expect(lines.filter((l) => l.msg === 'snapshot skipped: it cannot be read').map((l) => l.position)).toEqual([3000, 2000, 1500]);
    expect(await newestReadableSnapshot(createSnapshotStore(storage, `${topic}-none`), accountsCodec, `${topic}-none`, new Map(), logger, 5000)).toBeNull();
    const noBucket = createStorage({
      endpoint: settings.S3_ENDPOINT,
      accessKey: settings.S3_ACCESS_KEY,
      secretKey: settings.S3_SECRET_KEY,
      region: settings.S3_REGION,
      bucket: `${settings.S3_BUCKET}-none`,
    });
    expect(await createSnapshotStore(noBucket, topic).positions()).toEqual([]);
  });
});
