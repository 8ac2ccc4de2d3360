import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '@meridian/clickhouse';
import { createLogger } from '@meridian/observability';
import { createCursorSeal, cursorSealFromSetting } from './cursor-seal.ts';

const seal = createCursorSeal('a test secret of at least thirty-two characters');
const cursor = { metric_name: 'cpu:secret-name', ts: 1_700_000_000_123, updated_at: 1_700_000_001_000, partition: 2, offset: 987_654, row: 7 };
const context = ['download', 'alice', 'single', 'cpu:secret-name', 0, 4_291_747_199_999, false];

describe('cursor seal', () => {
  it('round-trips a download cursor for the same context', () => {
    const token = seal.seal(encodeCursor(cursor), context);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/); // safe in a header and a query string
    expect(decodeCursor(seal.open(token, [...context])!)).toEqual(cursor);
  });

  it('shows nothing of what it carries, and differs every time', () => {
    const a = seal.seal(encodeCursor(cursor), context);
    const b = seal.seal(encodeCursor(cursor), context);
    expect(a).not.toBe(b); // a fresh IV per token
    const bytes = Buffer.from(a, 'base64url').toString('latin1');
    for (const visible of ['cpu:secret-name', '987654', encodeCursor(cursor)]) expect(bytes + a).not.toContain(visible);
    expect(decodeCursor(a)).toBeNull();
  });

  it('refuses a token with any byte changed', () => {
    const token = Buffer.from(seal.seal(encodeCursor(cursor), context), 'base64url');
    for (let i = 0; i < token.length; i++) {
      const tampered = Buffer.from(token);
      tampered[i]! ^= 0x01;
      expect(seal.open(tampered.toString('base64url'), context), `byte ${i}`).toBeNull();
    }
    expect(seal.open(token.subarray(0, token.length - 1).toString('base64url'), context)).toBeNull();
  });

  it('refuses a token of another user, other parameters or another secret', () => {
    const token = seal.seal(encodeCursor(cursor), context);
    expect(seal.open(token, ['download', 'mallory', ...context.slice(2)])).toBeNull();
    expect(seal.open(token, [...context.slice(0, 3), 'cpu:other', ...context.slice(4)])).toBeNull();
    expect(seal.open(token, [...context.slice(0, 6), true])).toBeNull();
    expect(seal.open(token, ['events', ...context.slice(1)])).toBeNull();
    expect(createCursorSeal('another secret, also thirty-two characters long').open(token, context)).toBeNull();
  });

  it('refuses a forged token: the plain layout, garbage and oversized text', () => {
    for (const forged of [encodeCursor(cursor), '', 'abc+/=', 'A'.repeat(40), 'A'.repeat(5000), Buffer.alloc(40).toString('base64url')]) {
      expect(seal.open(forged, context), forged.slice(0, 20)).toBeNull();
    }
  });

  it('with no secret set, seals with a random one of the process and says so', () => {
    const lines: string[] = [];
    const logger = createLogger({
      name: 't',
      level: 'warn',
      destination: {
        write: (l: string) => {
          lines.push(l);
        },
      },
    });
    const one = cursorSealFromSetting('', logger);
    const two = cursorSealFromSetting('', logger);
    const token = one.seal('x', context);
    expect(one.open(token, context)).toBe('x');
    expect(two.open(token, context)).toBeNull();
    expect(lines.join('')).toMatch(/MERIDIAN_CURSOR_SECRET is not set/);
    const configured = cursorSealFromSetting('a test secret of at least thirty-two characters', logger);
    expect(configured.open(seal.seal('y', context), context)).toBe('y');
  });
});
