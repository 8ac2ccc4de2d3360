import { describe, expect, it } from 'vitest';
import { taskIdFor } from './task-id.ts';

describe('taskIdFor', () => {
  it('names the same task for the same user and Idempotency-Key, every time', () => {
    expect(taskIdFor('ada', 'k-1')).toBe(taskIdFor('ada', 'k-1'));
    expect(taskIdFor('ada', 'k-1')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('keeps users and keys apart, and is random without a key', () => {
    expect(taskIdFor('ada', 'k-1')).not.toBe(taskIdFor('bob', 'k-1'));
    expect(taskIdFor('ada', 'k-1')).not.toBe(taskIdFor('ada', 'k-2'));
    expect(taskIdFor('a', 'b\u0000c')).not.toBe(taskIdFor('a\u0000b', 'c'));
    expect(taskIdFor('ada', null)).not.toBe(taskIdFor('ada', null));
  });
});
