import { describe, expect, it } from 'vitest';
import { presentedKey } from './authenticate.ts';

describe('the API key an Authorization header carries', () => {
  const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;

  it("reads Bearer, Influx's Token, and Basic with the key as the password", () => {
    expect(presentedKey('Bearer mrd_abc')).toBe('mrd_abc');
    expect(presentedKey('token mrd_abc')).toBe('mrd_abc');
    expect(presentedKey(basic('telegraf:mrd_abc'))).toBe('mrd_abc');
    expect(presentedKey(basic(':mrd_abc'))).toBe('mrd_abc');
    expect(presentedKey(basic('u:pa:ss'))).toBe('pa:ss');
  });

  it('reads nothing from other schemes, an empty password, or an oversized header', () => {
    expect(presentedKey('')).toBeNull();
    expect(presentedKey('Digest x')).toBeNull();
    expect(presentedKey(basic('user-only'))).toBeNull();
    expect(presentedKey(basic('user:'))).toBeNull();
    expect(presentedKey(`Bearer ${'a'.repeat(600)}`)).toBeNull();
  });
});
