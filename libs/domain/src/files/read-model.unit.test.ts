import { describe, expect, it } from 'vitest';
import { fileDefinedFrom } from './decide.ts';
import type { FileEvent } from './events.ts';
import { fileViewers, foldFileBatch, type FileChange, type FileRow } from './read-model.ts';
import { foldFiles, isLive } from './state.ts';

const defined = (id: string, owner: string, at: number): FileEvent =>
  fileDefinedFrom({
    type: 'FileDefinitionRequested',
    task_id: `t-${id}`,
    file_id: id,
    user_name: owner,
    at,
    file_name: `${id}.csv`,
    description: `about ${id}`,
    content_type: 'text/csv',
    staged_object: `staging/files/${id}`,
    size: 10 + at,
    sha256: Buffer.alloc(32, at % 256),
    enforce_schema: false,
  });

/** A deterministic mix: definitions (some repeated), shares, revokes, descriptions, deletions, events on unknown and deleted files. */
function history(n: number): FileEvent[] {
  const events: FileEvent[] = [];
  let seed = 7;
  const next = (k: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % k;
  };
  const users = ['ada', 'bob', 'carol', 'dan'];
  for (let i = 0; i < n; i++) {
    const id = `f${next(Math.max(1, Math.floor(n / 6)))}`;
    const who = users[next(users.length)]!;
    const pick = next(7);
    if (pick <= 1) events.push(defined(id, who, i));
    else if (pick === 2) events.push({ type: 'FileAccessGranted', file_id: id, user_name: who, access: next(2) === 0 ? 'r' : 'rw', at: i, actor: 'x' });
    else if (pick === 3) events.push({ type: 'FileAccessRevoked', file_id: id, user_name: who, at: i, actor: 'x' });
    else if (pick === 4) events.push({ type: 'FileDescriptionChanged', file_id: id, description: `d${i}`, at: i, actor: 'x' });
    else if (pick === 5) events.push({ type: 'FileDeleted', file_id: id, at: i, actor: 'x' });
    else events.push(defined(`n${i}`, who, i));
  }
  return events;
}

/** The read model as a map: each file's newest row, and each (user, file) listing access. */
function project(events: FileEvent[], batchSizes: (i: number) => number, replayFrom?: number) {
  const rows = new Map<string, FileRow>();
  const listing = new Map<string, string>();
  let seq = 0;
  const apply = (changes: FileChange[]) => {
    for (const c of changes) {
      rows.set(c.file.file_id, c);
      for (const [user, access] of c.deleted ? [] : fileViewers(c.file)) listing.set(`${user} ${c.file.file_id}`, access);
      for (const user of c.lostAccess) listing.set(`${user} ${c.file.file_id}`, '');
    }
  };
  const positioned = events.map((event, offset) => ({ event, partition: 0, offset }));
  for (let at = 0, b = 0; at < positioned.length; b++) {
    const batch = positioned.slice(at, at + batchSizes(b));
    const stored = [...new Set(batch.map((e) => e.event.file_id))].flatMap((id) => (rows.has(id) ? [rows.get(id)!] : []));
    const { changes, nextSeq } = foldFileBatch(stored, batch, seq);
    apply(changes);
    seq = nextSeq;
    at += batch.length;
  }
  if (replayFrom !== undefined) {
    // A batch re-read after its rows were written (a crash before its position): nothing changes.
    const again = positioned.slice(replayFrom);
    const stored = [...new Set(again.map((e) => e.event.file_id))].flatMap((id) => (rows.has(id) ? [rows.get(id)!] : []));
    const { changes } = foldFileBatch(stored, again, seq);
    expect(changes).toEqual([]);
  }
  return { rows, listing, seq };
}

describe('the files projection folds batches onto stored rows as the catalog folds the log', () => {
  const events = history(600);
  const full = foldFiles(events);

  for (const [name, sizes] of [
    ['one event a batch', () => 1],
    ['batches of 7', () => 7],
    ['varied batches', (b: number) => 1 + ((b * 13) % 29)],
    ['one batch', () => 10_000],
  ] as const) {
    it(`${name}: every file's row and every listing access equal the full fold`, () => {
      const { rows, listing, seq } = project(events, sizes, events.length - 40);
      expect(seq).toBe(full.defined);
      for (const [id, file] of full.files) {
        const row = rows.get(id)!;
        expect(row.deleted, id).toBe(false);
        expect({ ...row.file, grants: [...row.file.grants] }).toEqual({ ...file, grants: [...file.grants] });
      }
      for (const id of full.deleted) expect(rows.get(id)?.deleted, id).toBe(true);
      expect(rows.size).toBe(full.files.size + full.deleted.size);
      // Whoever sees a file in the listing sees it in the fold, with the same access, and the other way round.
      const visible = [...listing]
        .filter(([, access]) => access !== '')
        .map(([key, access]) => `${key} ${access}`)
        .sort();
      const expected = full.order
        .filter((f) => isLive(full, f))
        .flatMap((f) => fileViewers(f).map(([user, access]) => `${user} ${f.file_id} ${access}`))
        .sort();
      expect(visible).toEqual(expected);
    });
  }

  it('the rows do not depend on where the batches were cut: a grant given and taken back inside one batch leaves the same row as across two', () => {
    const one = project(events, () => 10_000);
    for (const sizes of [() => 1, (b: number) => 1 + ((b * 13) % 29)]) {
      const other = project(events, sizes);
      expect([...other.listing].sort()).toEqual([...one.listing].sort());
    }
  });
});
