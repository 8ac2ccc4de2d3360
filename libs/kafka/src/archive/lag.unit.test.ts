import { describe, expect, it } from 'vitest';
import type { ArchiveObjects } from './archive-index.ts';
import { archiveLag, writeArchiveStatus } from './lag.ts';

/** The archive's objects in a Map: the port's four calls, nothing of S3's behaviour to imitate. */
function objectsInMemory(): ArchiveObjects {
  const held = new Map<string, Buffer>();
  return {
    put: (key, bytes) => Promise.resolve(void held.set(key, bytes)),
    get: (key) => (held.has(key) ? Promise.resolve(held.get(key)!) : Promise.reject(new Error(`no ${key}`))),
    list: (prefix) => Promise.resolve([...held.keys()].filter((k) => k.startsWith(prefix))),
    remove: (key) => Promise.resolve(void held.delete(key)),
  };
}

describe('archiveLag', () => {
  it('counts a partition the last pass did not list from where its log begins, not from offset 0', async () => {
    const objects = objectsInMemory();
    await writeArchiveStatus(objects, { topic: 't', at: 1_000, partitions: [{ partition: 0, end: 90, oldestUnarchived: null }] });
    const log = {
      offsets: () =>
        Promise.resolve({
          low: new Map([
            [0, 10],
            [1, 500],
          ]),
          end: new Map([
            [0, 100],
            [1, 520],
          ]),
        }),
    };
    expect(await archiveLag(log, objects, 't', 4_000)).toEqual([
      { partition: 0, offsets: 10, oldestUnarchivedAgeMs: 3_000 },
      { partition: 1, offsets: 20, oldestUnarchivedAgeMs: 3_000 },
    ]);
  });

  it('is null before any pass has ended', async () => {
    const log = { offsets: () => Promise.resolve({ low: new Map([[0, 0]]), end: new Map([[0, 5]]) }) };
    expect(await archiveLag(log, objectsInMemory(), 't')).toBeNull();
  });
});
