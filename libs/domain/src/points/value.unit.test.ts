import { describe, expect, it } from 'vitest';
import { parseValueText, valueProblem } from './value.ts';

const FORMAT = 'must be a decimal number such as -1.5, 3, .5 or 1e-3';
const OVERFLOW = 'is out of the range of a 64-bit float';
const UNDERFLOW = 'is too small for a 64-bit float (it would be stored as 0)';

describe('parseValueText accepts', () => {
  it.each<[string, number]>([
    ['-1.5', -1.5],
    ['3', 3],
    ['.5', 0.5],
    ['-.5', -0.5],
    ['+.5', 0.5],
    ['1e-3', 0.001],
    ['+2', 2],
    ['1.', 1],
    ['007', 7],
    ['0', 0],
    ['0.000', 0],
    ['0e-400', 0],
    ['0.1', 0.1],
    ['1E3', 1000],
    ['-.5e+2', -50],
    ['2.5e10', 25_000_000_000],
    [' 1.5', 1.5],
    ['1.5 ', 1.5],
    ['\t 7 \t', 7],
    ['123456789012345', 123_456_789_012_345],
    ['0.123456789012345', 0.123456789012345],
    ['1234567890123456789', 1_234_567_890_123_456_800],
    ['9007199254740993', 9_007_199_254_740_992],
    ['1.7976931348623157e308', Number.MAX_VALUE],
    ['5e-324', Number.MIN_VALUE],
    ['4.9406564584124654e-324', Number.MIN_VALUE],
  ])('%j → %d', (text, value) => {
    expect(parseValueText(text)).toEqual({ ok: true, value });
  });

  it('keeps the sign of -0', () => {
    const result = parseValueText('-0');
    expect(result.ok && Object.is(result.value, -0)).toBe(true);
  });

  it('gives exactly what Number() gives for plain decimals (its fast path is exact)', () => {
    let seed = 12345;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
    for (let n = 0; n < 20_000; n++) {
      const digits = 1 + (next() % 17);
      let text = next() % 2 === 0 ? '' : '-';
      const point = next() % (digits + 1);
      for (let i = 0; i < digits; i++) text += (i === point ? '.' : '') + String(next() % 10);
      const result = parseValueText(text);
      expect(result, text).toEqual({ ok: true, value: Number(text) });
    }
  });
});

describe('parseValueText rejects', () => {
  it.each<[string, string]>([
    ['', 'must not be empty'],
    ['   ', 'must not be empty'],
    ['NaN', FORMAT],
    ['nan', FORMAT],
    ['Infinity', FORMAT],
    ['-Infinity', FORMAT],
    ['inf', FORMAT],
    ['0x10', FORMAT],
    ['0b1', FORMAT],
    ['1_000', FORMAT],
    ['1 000', FORMAT],
    ['1,5', FORMAT],
    ['1.5.5', FORMAT],
    ['1e', FORMAT],
    ['e3', FORMAT],
    ['1e3.5', FORMAT],
    ['.', FORMAT],
    ['-', FORMAT],
    ['+-1', FORMAT],
    ['--1', FORMAT],
    ['1d', FORMAT],
    ['١٢', FORMAT],
    ['"1"', FORMAT],
    ['1\u00a0', FORMAT],
    ['1e999', OVERFLOW],
    ['-1e999', OVERFLOW],
    ['1' + '0'.repeat(400), OVERFLOW],
    ['1e-400', UNDERFLOW],
    ['-2.5e-330', UNDERFLOW],
    [`0.${'0'.repeat(330)}1`, UNDERFLOW],
  ])('%j', (text, reason) => {
    expect(parseValueText(text)).toEqual({ ok: false, reason });
  });
});

describe('valueProblem', () => {
  it.each<[unknown]>([[1.5], [0], [-0], [-3], [Number.MAX_VALUE], [Number.MIN_VALUE]])('accepts %j', (v) => {
    expect(valueProblem(v)).toBeNull();
  });

  it.each<[unknown, string]>([
    ['1.5', 'must be a number, not a string'],
    [null, 'must be a number, not null'],
    [undefined, 'must be a number, not undefined'],
    [true, 'must be a number, not a boolean'],
    [[1], 'must be a number, not an array'],
    [{ value: 1 }, 'must be a number, not an object'],
    [1n, 'must be a number, not a bigint'],
    [Number.NaN, 'must be a finite number, not NaN'],
    [Number.POSITIVE_INFINITY, OVERFLOW],
    [Number.NEGATIVE_INFINITY, OVERFLOW],
  ])('rejects %s', (v, problem) => {
    expect(valueProblem(v)).toBe(problem);
  });
});
