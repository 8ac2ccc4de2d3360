import { describe, expect, it } from 'vitest';
import { isUuid } from './ids.ts';

describe('isUuid', () => {
  it('accepts the lowercase canonical form randomUUID gives', () => {
    expect(isUuid(crypto.randomUUID())).toBe(true);
    expect(isUuid('0b7e4a52-5d7e-4a39-9b43-6a1f8d2c9e10')).toBe(true);
  });

  it('refuses anything else, so no other text reaches SQL as an id', () => {
    const id = '0b7e4a52-5d7e-4a39-9b43-6a1f8d2c9e10';
    for (const bad of [id.toUpperCase(), `${id}'`, "x' OR 1=1 --", id.slice(1), `{${id}}`, id.replaceAll('-', ''), '', 42, null, undefined]) {
      expect(isUuid(bad)).toBe(false);
    }
  });
});
