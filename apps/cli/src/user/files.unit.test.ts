import { describe, expect, it } from 'vitest';
import { dispositionName } from './files.ts';
import { idempotencyKey } from './upload.ts';

describe('dispositionName', () => {
  it('prefers filename*, and is never a path', () => {
    expect(dispositionName(`attachment; filename="rapport _t_.csv"; filename*=UTF-8''rapport%20%22%C3%A9t%C3%A9%22.csv`)).toBe('rapport "été".csv');
    expect(dispositionName('attachment; filename="a\\"b.txt"')).toBe('a"b.txt');
    expect(dispositionName(`attachment; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd`)).toBe('passwd');
    expect(dispositionName('attachment; filename=".."')).toBeNull();
    expect(dispositionName(null)).toBeNull();
  });
});

describe('idempotencyKey', () => {
  it('is the same for the same content and parameters, another for another metric or on_error; a valid header', () => {
    const key = idempotencyKey('ab', 'm', 'fail');
    expect(idempotencyKey('ab', 'm', 'fail')).toBe(key);
    expect(idempotencyKey('ab', 'n', 'fail')).not.toBe(key);
    expect(idempotencyKey('ab', 'm', 'skip')).not.toBe(key);
    expect(idempotencyKey('ab', undefined, 'fail')).not.toBe(key);
    expect(key).toMatch(/^[\x21-\x7e]{1,200}$/);
  });
});
