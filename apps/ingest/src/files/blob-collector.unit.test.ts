import { blobKeyOf, type BlobReferences } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { afterEach, describe, expect, it } from 'vitest';
import type { BlobStore } from '../blob-store.ts';
import { BlobCollector } from './blob-collector.ts';
import { Mutex } from './blobs.ts';

const sha = (n: number) => n.toString(16).padStart(64, '0');

/** A files read model as the collector sees it: file → (blob, live, offset) rows, a position, a sweep position. */
class FakeReferences implements BlobReferences {
  rows = new Map<string, { sha256: string; live: boolean; offset: number }>();
  covered = -1;
  sweep: number | undefined;
  sweeps: number[] = [];

  define(fileId: string, sha256: string, offset: number) {
    this.rows.set(fileId, { sha256, live: true, offset });
    this.covered = Math.max(this.covered, offset);
  }

  remove(fileId: string, offset: number) {
    this.rows.set(fileId, { ...this.rows.get(fileId)!, live: false, offset });
    this.covered = Math.max(this.covered, offset);
  }

  async positions() {
    return new Map(this.covered < 0 ? [] : [[0, this.covered]]);
  }

  async referenced(sha256s: readonly string[]) {
    return new Set([...this.rows.values()].filter((r) => r.live && sha256s.includes(r.sha256)).map((r) => r.sha256));
  }

  async released(partition: number, after: number, upTo: number, limit: number) {
    return [...this.rows.values()]
      .filter((r) => partition === 0 && !r.live && r.offset > after && r.offset <= upTo)
      .sort((a, b) => a.offset - b.offset)
      .slice(0, limit)
      .map((r) => ({ sha256: r.sha256, offset: r.offset }));
  }

  async swept() {
    return new Map(this.sweep === undefined ? [] : [[0, this.sweep]]);
  }

  async recordSwept(positions: ReadonlyMap<number, number>) {
    const at = positions.get(0);
    if (at === undefined) return;
    this.sweeps.push(at);
    this.sweep = Math.max(this.sweep ?? -1, at);
  }
}

class FakeStorage {
  blobs = new Set<string>();
  removed: string[] = [];
  failRemovals = 0;

  readonly store: BlobStore = {
    open: () => Promise.reject(new Error('not used')),
    size: async (key) => (this.blobs.has(key) ? 1 : null),
    copy: async (_from, to) => void this.blobs.add(to),
    remove: async (key) => {
      if (this.failRemovals > 0) {
        this.failRemovals -= 1;
        throw new Error('storage unreachable');
      }
      this.blobs.delete(key);
      this.removed.push(key);
    },
  };
}

const logger = createLogger({ name: 'test', level: 'silent' });
const running: BlobCollector[] = [];

function collector(references: FakeReferences, storage: FakeStorage, logEnd: () => number, lock = new Mutex()) {
  const c = new BlobCollector({
    storage: storage.store, references, lock, logger, waitMs: 200, intervalMs: 5,
    logEnds: async () => new Map([[0, logEnd()]]),
  });
  running.push(c);
  return c;
}

/** Polls until `done` holds (bounded generously: the outcome, not its speed, is what is checked). */
async function until(what: string, done: () => boolean) {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

afterEach(() => {
  for (const c of running.splice(0)) c.stop();
});

describe('BlobCollector (asks the files read model, holds no file)', () => {
  it('removes the blob a deletion released when no live file references it, keeps a shared one, and records its sweep', async () => {
    const refs = new FakeReferences();
    const storage = new FakeStorage();
    refs.define('a', sha(1), 0);
    refs.define('b', sha(2), 1);
    refs.define('c', sha(2), 2); // same bytes as b
    refs.remove('a', 3);
    refs.remove('b', 4);
    collector(refs, storage, () => 5).start();
    await until('the sweep to reach offset 4', () => refs.sweep === 4);
    expect(storage.removed).toEqual([blobKeyOf(sha(1))]); // sha(2) is still c's
    // c goes too: its blob follows on the next sweep, and nothing is removed twice.
    refs.remove('c', 5);
    await until('the sweep to reach offset 5', () => refs.sweep === 5);
    expect(storage.removed).toEqual([blobKeyOf(sha(1)), blobKeyOf(sha(2))]);
  });

  it('removes nothing while the read model does not cover the files log\'s end, and catches up once it does', async () => {
    const refs = new FakeReferences();
    const storage = new FakeStorage();
    refs.define('a', sha(1), 0);
    refs.remove('a', 1);
    // The log holds a definition at offset 2 the read model has not projected (its blob is sha(1) again).
    let end = 3;
    collector(refs, storage, () => end).start();
    await new Promise((r) => setTimeout(r, 300)); // more than a whole wait: the collection gave up and will retry
    expect(storage.removed).toEqual([]);
    expect(refs.sweeps).toEqual([]);
    refs.define('b', sha(1), 2);
    await until('a sweep', () => refs.sweep === 2);
    expect(storage.removed).toEqual([]); // b references it now
    end = 4;
    refs.remove('b', 3);
    await until('the next sweep', () => refs.sweep === 3);
    expect(storage.removed).toEqual([blobKeyOf(sha(1))]);
  });

  it('never interleaves with a promotion: a definition that promotes under the lock and is projected keeps its blob', async () => {
    const refs = new FakeReferences();
    const storage = new FakeStorage();
    const lock = new Mutex();
    refs.define('a', sha(7), 0);
    refs.remove('a', 1);
    let end = 2;
    let release!: () => void;
    // A definition of the same bytes holds the lock: promote, append FileDefined, the projector shows it.
    const promotion = lock.run(async () => {
      await storage.store.copy('staging/x', blobKeyOf(sha(7)), 1);
      await new Promise<void>((r) => (release = r));
      end = 3;
      refs.define('b', sha(7), 2);
    });
    collector(refs, storage, () => end, lock).start();
    await new Promise((r) => setTimeout(r, 50));
    expect(refs.sweeps).toEqual([]); // waiting for the lock
    release();
    await promotion;
    await until('the sweep', () => refs.sweep === 2);
    expect(storage.removed).toEqual([]);
    expect(storage.blobs.has(blobKeyOf(sha(7)))).toBe(true);
  });

  it('retries after a failed removal without moving its sweep past it', async () => {
    const refs = new FakeReferences();
    const storage = new FakeStorage();
    storage.failRemovals = 2;
    refs.define('a', sha(1), 0);
    refs.remove('a', 1);
    collector(refs, storage, () => 2).start();
    await until('the blob to be removed', () => storage.removed.length === 1);
    await until('the sweep', () => refs.sweep === 1);
    expect(storage.failRemovals).toBe(0);
    expect(refs.sweeps).toEqual([1]); // recorded once, after the removal succeeded
  });

  it('handles a long run of deletions a page at a time, each page\'s sweep recorded after its removals', async () => {
    const refs = new FakeReferences();
    const storage = new FakeStorage();
    for (let i = 0; i < 2500; i += 1) refs.define(`f${i}`, sha(i), i);
    for (let i = 0; i < 2500; i += 1) refs.remove(`f${i}`, 2500 + i);
    collector(refs, storage, () => 5000).start();
    await until('every deletion handled', () => refs.sweep === 4999);
    expect(refs.sweeps).toEqual([3499, 4499, 4999]);
    expect(new Set(storage.removed).size).toBe(2500);
  });

  it('checks a blob a failed definition left (enqueued) at once, and keeps it when a live file references it', async () => {
    const refs = new FakeReferences();
    const storage = new FakeStorage();
    refs.define('a', sha(3), 0);
    const c = collector(refs, storage, () => 1);
    c.start();
    await until('the first sweep', () => refs.sweeps.length > 0);
    c.enqueue(sha(3)); // referenced by a
    c.enqueue(sha(4)); // referenced by nothing
    await until('the orphan to be removed', () => storage.removed.length === 1);
    expect(storage.removed).toEqual([blobKeyOf(sha(4))]);
  });
});
