import { describe, expect, it } from 'vitest';
import { DomainError } from '@meridian/domain';
import { PerUserSlots } from './per-user-slots.ts';

const slots = (limit: number) => new PerUserSlots(limit, { setting: 'MERIDIAN_MAX_X', noun: 'things' });

describe('PerUserSlots', () => {
  it('refuses the slot past the limit with too_many naming the setting, per user', () => {
    const s = slots(2);
    s.acquire('ada');
    s.acquire('ada');
    const refused = (() => {
      try {
        s.acquire('ada');
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).code).toBe('too_many');
    expect((refused as DomainError).message).toContain('MERIDIAN_MAX_X');
    expect(() => s.acquire('bob')).not.toThrow();
  });

  it('gives a slot back once, however often its release is called, and forgets idle users', () => {
    const s = slots(1);
    const release = s.acquire('ada');
    release();
    release();
    expect(s.inUse('ada')).toBe(0);
    const again = s.acquire('ada');
    expect(() => s.acquire('ada')).toThrow(DomainError);
    again();
    expect(s.inUse('ada')).toBe(0);
  });
});
