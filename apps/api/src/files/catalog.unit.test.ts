import { describe, expect, it } from 'vitest';
import type { FileEvent, FileReadModel, Position } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { FileCatalog } from './catalog.ts';

const logger = createLogger({ name: 'test', level: 'silent' });

/** A read model that is always current (the log is empty) but never shows an append: the wait after it runs to its bound. */
function catalog(append: (fileId: string, events: readonly FileEvent[]) => Promise<Position | null>) {
  const readModel = { rows: async () => [], positions: async () => new Map<number, number>() } as unknown as FileReadModel;
  return new FileCatalog({ readModel, logEnds: async () => new Map(), append, ackTimeoutMs: 60_000, waitMs: 60_000, logger });
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('FileCatalog.execute', () => {
  it('lets the next command append while the one before waits for the read model to show its change', async () => {
    const appended: string[] = [];
    const second = deferred<void>();
    const files = catalog(async (fileId) => {
      appended.push(fileId);
      if (fileId === 'b') second.resolve();
      return { partition: 0, offset: appended.length };
    });
    const first = files.execute('a', () => []);
    void first.catch(() => undefined);
    void files.execute('b', () => []).catch(() => undefined);
    // The first command's wait for the read model lasts a minute: the second appends long before.
    await second.promise;
    expect(appended).toEqual(['a', 'b']);
  });

  it('drops a queued command whose request was given up before its turn: it never appends', async () => {
    const appended: string[] = [];
    const firstSend = deferred<Position | null>();
    const files = catalog(async (fileId) => {
      appended.push(fileId);
      return fileId === 'a' ? firstSend.promise : null;
    });
    const first = files.execute('a', () => []);
    const request = new AbortController();
    const second = files.execute('b', () => [], request.signal);
    request.abort();
    firstSend.resolve(null);
    await first;
    await expect(second).rejects.toMatchObject({ code: 'unavailable' });
    expect(appended).toEqual(['a']);
  });
});
