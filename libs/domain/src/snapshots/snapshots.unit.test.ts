import { describe, expect, it } from 'vitest';
import { accountsCodec } from '../accounts/codec.ts';
import type { AccountEvent } from '../accounts/events.ts';
import { applyAccountEvent, foldAccounts } from '../accounts/state.ts';
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
    const match = pick(2) === 0 ? ('exact' as const) : ('prefix' as const);
    const value = `m${pick(5)}`;
    switch (pick(7)) {
      case 0:
        events.push({ type: 'UserCreated', user_name, is_admin: pick(5) === 0, key_id, secret_sha256: digest, ...meta });
        break;
      case 1:
        events.push({ type: 'UserDisabled', user_name, ...meta });
        break;
      case 2:
        events.push({ type: 'ApiKeyIssued', user_name, key_id, secret_sha256: digest, ...meta });
        break;
      case 3:
        events.push({ type: 'ApiKeyRevoked', user_name, key_id, ...meta });
        break;
      case 4:
        events.push({ type: 'MetricEntitlementGranted', user_name, match, value, access: pick(2) === 0 ? 'r' : 'rw', ...meta });
        break;
      case 5:
        events.push({ type: 'MetricEntitlementRevoked', user_name, match, value, ...meta });
        break;
      default:
        events.push({ type: 'FileQuotaSet', user_name, quota_bytes: pick(3) === 0 ? null : pick(10_000), ...meta });
    }
  }
  return events;
}

type Case<S, E> = {
  name: string;
  codec: StateCodec<S>;
  fold: (events: E[]) => S;
  apply: (state: S, event: E) => unknown;
  history: (seed: number) => E[];
  picture: (s: S) => unknown;
};

const cases = [
  {
    name: 'accounts',
    codec: accountsCodec,
    fold: foldAccounts,
    apply: applyAccountEvent,
    history: (seed: number) => accountHistory(seed, 300),
    picture: (s: unknown) => s,
  },
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

describe('a snapshot document', () => {
  const state = foldAccounts(accountHistory(3, 100));
  const offsets = new Map([
    [1, 40],
    [0, 17],
  ]);

  it('carries the state and the next offsets of its topic; its position is their sum', () => {
    const document = encodeSnapshot(accountsCodec, 'p.accounts', { offsets, state });
    const read = decodeSnapshot(accountsCodec, 'p.accounts', document);
    expect(read.offsets).toEqual(offsets);
    expect(read.state).toEqual(state);
    expect(snapshotPosition(read.offsets)).toBe(57);
    expect(encodeSnapshot(accountsCodec, 'p.accounts', read)).toBe(document);
  });

  it('is refused, saying why, when of another topic, kind or version, or damaged', () => {
    const document = encodeSnapshot(accountsCodec, 'p.accounts', { offsets, state });
    expect(() => decodeSnapshot(accountsCodec, 'q.accounts', document)).toThrow(/topic p.accounts/);
    expect(() => decodeSnapshot({ ...accountsCodec, version: 3 }, 'p.accounts', document)).toThrow(/version 2; this build reads accounts version 3/);
    expect(() => decodeSnapshot({ ...accountsCodec, kind: 'other' }, 'p.accounts', document)).toThrow(/an? accounts snapshot/);
    expect(() => decodeSnapshot(accountsCodec, 'p.accounts', document.slice(0, -10))).toThrow();
    expect(() => decodeSnapshot(accountsCodec, 'p.accounts', document.replace('"offsets":[[0,17]', '"offsets":[[0,-1]'))).toThrow(/offsets/);
  });
});
