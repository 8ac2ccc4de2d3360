import { describe, expect, it } from 'vitest';
import { accountsCodec } from '../accounts/codec.ts';
import type { AccountEvent } from '../accounts/events.ts';
import { applyAccountEvent, foldAccounts } from '../accounts/state.ts';
import { filesCodec } from '../files/codec.ts';
import type { FileEvent } from '../files/events.ts';
import { applyFileEvent, foldFiles, isLive, type FilesState } from '../files/state.ts';
import { decodeSnapshot, encodeSnapshot, snapshotPosition } from './document.ts';
import type { StateCodec } from './state-codec.ts';

/** A small deterministic generator, so a failing history can be replayed. */
function random(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

/** Account histories with every event type, and events that do not fit (unknown users, a second creation, foreign keys). */
function accountHistory(seed: number, length: number): AccountEvent[] {
  const pick = random(seed);
  const users = ['ada', 'bob', 'carol', 'dan', 'eve', 'ghost'];
  const events: AccountEvent[] = [];
  for (let i = 0; i < length; i++) {
    const user_name = users[pick(users.length)]!;
    const meta = { at: 1000 + i, actor: 'root' };
    const key_id = (pick(40) + 1).toString(16).padStart(16, '0');
    const digest = Buffer.alloc(32, pick(256));
    const match = pick(2) === 0 ? 'exact' as const : 'prefix' as const;
    const value = `m${pick(5)}`;
    switch (pick(7)) {
      case 0: events.push({ type: 'UserCreated', user_name, is_admin: pick(5) === 0, key_id, secret_sha256: digest, ...meta }); break;
      case 1: events.push({ type: 'UserDisabled', user_name, ...meta }); break;
      case 2: events.push({ type: 'ApiKeyIssued', user_name, key_id, secret_sha256: digest, ...meta }); break;
      case 3: events.push({ type: 'ApiKeyRevoked', user_name, key_id, ...meta }); break;
      case 4: events.push({ type: 'MetricEntitlementGranted', user_name, match, value, access: pick(2) === 0 ? 'r' : 'rw', ...meta }); break;
      case 5: events.push({ type: 'MetricEntitlementRevoked', user_name, match, value, ...meta }); break;
      default: events.push({ type: 'FileQuotaSet', user_name, quota_bytes: pick(3) === 0 ? null : pick(10_000), ...meta });
    }
  }
  return events;
}

/** File histories with every event type, ids defined twice (also after their deletion), and events about unknown or deleted files. */
function fileHistory(seed: number, length: number, ids = 30): FileEvent[] {
  const pick = random(seed);
  const users = ['ada', 'bob', 'carol', 'ghost'];
  const events: FileEvent[] = [];
  for (let i = 0; i < length; i++) {
    const file_id = `f${pick(ids)}`;
    const meta = { at: 1000 + i, actor: users[pick(users.length)]! };
    switch (pick(6)) {
      case 0:
      case 1: {
        const fill = pick(4);
        events.push({
          type: 'FileDefined', file_id, task_id: `t${i}`, user_name: users[pick(users.length)]!, at: 1000 + i, file_name: `${file_id}.csv`,
          description: `d${i}`, content_type: 'text/csv', size: pick(1000), sha256: Buffer.alloc(32, fill), blob_key: `blobs/sha256/${fill}`,
        });
        break;
      }
      case 2: events.push({ type: 'FileDescriptionChanged', file_id, description: `new ${i}`, ...meta }); break;
      case 3: events.push({ type: 'FileAccessGranted', file_id, user_name: users[pick(users.length)]!, access: pick(2) === 0 ? 'r' : 'rw', ...meta }); break;
      case 4: events.push({ type: 'FileAccessRevoked', file_id, user_name: users[pick(users.length)]!, ...meta }); break;
      default: events.push({ type: 'FileDeleted', file_id, ...meta });
    }
  }
  return events;
}

const sorted = <K, V>(m: Map<K, V>) => [...m].sort(([a], [b]) => String(a).localeCompare(String(b)));

/**
 * Everything a state answers with: its snapshot form, and for files the blob counts rebuilt from it
 * and the live part of the definition order (a live fold may still hold deleted records there).
 */
const filesPicture = (s: FilesState) => ({
  json: filesCodec.toJSON(s),
  order: s.order.filter((f) => isLive(s, f)).map((f) => f.seq),
  blobRefs: sorted(s.blobRefs),
});

type Case<S, E> = { name: string; codec: StateCodec<S>; fold: (events: E[]) => S; apply: (state: S, event: E) => unknown; history: (seed: number) => E[]; picture: (s: S) => unknown };

const cases = [
  { name: 'accounts', codec: accountsCodec, fold: foldAccounts, apply: applyAccountEvent, history: (seed: number) => accountHistory(seed, 300), picture: (s: unknown) => s },
  { name: 'files', codec: filesCodec, fold: foldFiles, apply: applyFileEvent, history: (seed: number) => fileHistory(seed, 300), picture: filesPicture },
] as const;

describe.each(cases as unknown as Array<Case<unknown, unknown>>)('the $name snapshot codec', ({ codec, fold, apply, history, picture }) => {
  it('folding the rest onto a snapshot of any prefix gives the fold of the whole history', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const events = history(seed);
      const whole = fold(events);
      for (let cut = 0; cut <= events.length; cut += 7) {
        const restored = codec.fromJSON(JSON.parse(JSON.stringify(codec.toJSON(fold(events.slice(0, cut))))));
        for (const e of events.slice(cut)) apply(restored, e);
        expect(picture(restored)).toEqual(picture(whole));
        expect(JSON.stringify(codec.toJSON(restored))).toBe(JSON.stringify(codec.toJSON(whole)));
      }
    }
  });

  it('reads back byte for byte what it wrote', () => {
    const json = JSON.stringify(codec.toJSON(fold(history(9))));
    expect(JSON.stringify(codec.toJSON(codec.fromJSON(JSON.parse(json))))).toBe(json);
  });

  it('refuses what it did not write', () => {
    const json = codec.toJSON(fold(history(9))) as Record<string, unknown[]>;
    expect(() => codec.fromJSON(null)).toThrow();
    expect(() => codec.fromJSON({})).toThrow();
    const [field] = Object.keys(json).filter((k) => Array.isArray(json[k]) && json[k].length > 0);
    expect(() => codec.fromJSON({ ...json, [field!]: [{ nonsense: true }] })).toThrow();
  });
});

describe('the files snapshot codec on a long history', () => {
  it('gives the whole fold also where the live fold has swept deleted records out of its order', () => {
    // 3,000 files defined, then 2,200 of them deleted amid other events about them.
    const defined = fileHistory(11, 9000, 3000).filter((e) => e.type === 'FileDefined').slice(0, 3000);
    const ids = [...new Set(defined.map((e) => e.file_id))];
    const rest = fileHistory(12, 3000, 3000).filter((e) => e.type !== 'FileDefined');
    const events = [...defined, ...ids.slice(0, 2200).flatMap((file_id, i): FileEvent[] => [{ type: 'FileDeleted', file_id, at: 9000 + i, actor: 'ada' }, rest[i % rest.length]!])];
    const whole = foldFiles(events);
    expect(whole.deleted.size).toBeGreaterThan(1024);
    for (const cut of [0, 1000, 3000, 4500, events.length]) {
      const restored = filesCodec.fromJSON(JSON.parse(JSON.stringify(filesCodec.toJSON(foldFiles(events.slice(0, cut))))));
      for (const e of events.slice(cut)) applyFileEvent(restored, e);
      expect(filesPicture(restored)).toEqual(filesPicture(whole));
    }
  });
});

describe('a snapshot document', () => {
  const state = foldFiles(fileHistory(3, 100));
  const offsets = new Map([[1, 40], [0, 17]]);

  it('carries the state and the next offsets of its topic; its position is their sum', () => {
    const document = encodeSnapshot(filesCodec, 'p.files', { offsets, state });
    const read = decodeSnapshot(filesCodec, 'p.files', document);
    expect(read.offsets).toEqual(offsets);
    expect(filesPicture(read.state)).toEqual(filesPicture(state));
    expect(snapshotPosition(read.offsets)).toBe(57);
    expect(encodeSnapshot(filesCodec, 'p.files', read)).toBe(document);
  });

  it('is refused, saying why, when of another topic, kind or version, or damaged', () => {
    const document = encodeSnapshot(filesCodec, 'p.files', { offsets, state });
    expect(() => decodeSnapshot(filesCodec, 'q.files', document)).toThrow(/topic p.files/);
    expect(() => decodeSnapshot({ ...filesCodec, version: 2 }, 'p.files', document)).toThrow(/version 1; this build reads files version 2/);
    expect(() => decodeSnapshot(accountsCodec, 'p.files', document)).toThrow(/a files snapshot/);
    expect(() => decodeSnapshot(filesCodec, 'p.files', document.slice(0, -10))).toThrow();
    expect(() => decodeSnapshot(filesCodec, 'p.files', document.replace('"offsets":[[0,17]', '"offsets":[[0,-1]'))).toThrow(/offsets/);
  });
});
